package e2e

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf16"
)

// vsix is what a .vsix holds for a registry: its package.json and the
// assets its extension.vsixmanifest declares, by type.
type vsix struct {
	manifest map[string]any
	assets   map[string]string // asset type → path in the zip
	files    map[string][]byte
}

func readVSIX(b []byte) (vsix, error) {
	z, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return vsix{}, err
	}
	v := vsix{assets: map[string]string{}, files: map[string][]byte{}}
	for _, f := range z.File {
		r, err := f.Open()
		if err != nil {
			return v, err
		}
		v.files[f.Name], err = io.ReadAll(io.LimitReader(r, 16<<20))
		r.Close()
		if err != nil {
			return v, err
		}
	}
	if err := json.Unmarshal(v.files["extension/package.json"], &v.manifest); err != nil {
		return v, fmt.Errorf("extension/package.json: %v", err)
	}
	var m struct {
		Assets []struct {
			Type string `xml:"Type,attr"`
			Path string `xml:"Path,attr"`
		} `xml:"Assets>Asset"`
	}
	if err := xml.Unmarshal(v.files["extension.vsixmanifest"], &m); err != nil {
		return v, fmt.Errorf("extension.vsixmanifest: %v", err)
	}
	for _, a := range m.Assets {
		v.assets[a.Type] = a.Path
	}
	return v, nil
}

func (v vsix) str(key string) string {
	s, _ := v.manifest[key].(string)
	return s
}

// link is a manifest field that is a URL or an object with one ("url").
func (v vsix) link(key string) string {
	switch l := v.manifest[key].(type) {
	case string:
		return l
	case map[string]any:
		s, _ := l["url"].(string)
		return s
	}
	return ""
}

// The checks open-vsx.org makes of an upload, as its server
// (eclipse-openvsx/openvsx, server/.../ExtensionValidator.java and the
// license check of ExtensionService) makes them: names, a semantic version,
// no control or unassigned characters and the size limits of the text
// fields, valid URLs, a license field or file.
var (
	openVSXName   = regexp.MustCompile(`^[\w\-+$~]+$`)
	semverPattern = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)
)

func openVSXIssues(v vsix) []string {
	var issues []string
	add := func(format string, a ...any) { issues = append(issues, fmt.Sprintf(format, a...)) }
	utf16Len := func(s string) int { return len(utf16.Encode([]rune(s))) }
	for _, f := range []struct{ field, what string }{{"publisher", "namespace name"}, {"name", "extension name"}} {
		switch s := v.str(f.field); {
		case s == "" || s == "-":
			add("%s must not be empty.", f.what)
		case !openVSXName.MatchString(s):
			add("Invalid %s: %s", f.what, s)
		case utf16Len(s) > 255:
			add("The %s exceeds the current limit of 255 characters.", f.what)
		}
	}
	switch ver := v.str("version"); {
	case ver == "":
		add("Version must not be empty.")
	case ver == "latest" || ver == "pre-release" || ver == "reviews":
		add("The version string '%s' is reserved.", ver)
	case !semverPattern.MatchString(ver):
		add("Invalid semantic version. See https://semver.org/.")
	}
	text := func(field, value string, limit int, allowed ...rune) {
		for i, r := range value {
			if strings.ContainsRune(string(allowed), r) {
				continue
			}
			if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Zl, unicode.Zp) ||
				!unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.C) {
				add("Invalid character found in field '%s': %s (index %d)", field, value, i)
				break
			}
		}
		if utf16Len(value) > limit {
			add("The field '%s' exceeds the current limit of %d characters.", field, limit)
		}
	}
	text("displayName", v.str("displayName"), 255)
	text("description", v.str("description"), 2048, '\u200d')
	text("license", v.str("license"), 255)
	for _, list := range []struct{ key, field string }{{"categories", "categories"}, {"keywords", "keywords"}} {
		items, _ := v.manifest[list.key].([]any)
		for _, it := range items {
			s, _ := it.(string)
			text(list.field, s, 255)
		}
	}
	for _, field := range []string{"homepage", "repository", "bugs"} {
		u := v.link(field)
		if u == "" {
			continue
		}
		if p, err := url.Parse(strings.TrimPrefix(u, "git+")); err != nil || !p.IsAbs() || strings.Contains(u, " ") ||
			(p.Scheme == "http" || p.Scheme == "https") && p.Host == "" {
			add("Invalid URL in field '%s': %s", field, u)
		}
		if utf16Len(u) > 255 {
			add("The field '%s' exceeds the current limit of 255 characters.", field)
		}
	}
	if banner, ok := v.manifest["galleryBanner"].(map[string]any); ok {
		c, _ := banner["color"].(string)
		text("galleryBanner.color", c, 16)
		if th, _ := banner["theme"].(string); th != "" && th != "dark" && th != "light" {
			add("Invalid value in field 'galleryBanner.theme': %s. Allowed values: [dark, light]", th)
		}
	}
	if md := v.str("markdown"); md != "" && md != "github" && md != "standard" {
		add("Invalid value in field 'markdown': %s. Allowed values: [github, standard]", md)
	}
	if v.str("license") == "" && v.assets["Microsoft.VisualStudio.Services.Content.License"] == "" {
		add("This extension cannot be accepted because it has no license.")
	}
	return issues
}

// readinessIssues are what this project asks of a published package
// beyond what open-vsx.org refuses: the fields a registry page shows, the
// README, CHANGELOG, LICENSE and a PNG icon of at least 128x128 inside it.
func readinessIssues(v vsix) []string {
	var issues []string
	for _, f := range []string{"displayName", "description", "icon"} {
		if v.str(f) == "" {
			issues = append(issues, "no "+f)
		}
	}
	if engines, _ := v.manifest["engines"].(map[string]any); engines["vscode"] == nil {
		issues = append(issues, "no engines.vscode")
	}
	if cats, _ := v.manifest["categories"].([]any); len(cats) == 0 {
		issues = append(issues, "no categories")
	}
	if u, err := url.Parse(v.link("repository")); err != nil || u.Scheme != "https" || u.Host == "" {
		issues = append(issues, fmt.Sprintf("no https repository: %q", v.link("repository")))
	}
	for _, a := range []struct{ asset, name string }{
		{"Microsoft.VisualStudio.Services.Content.Details", "README"},
		{"Microsoft.VisualStudio.Services.Content.Changelog", "CHANGELOG"},
		{"Microsoft.VisualStudio.Services.Content.License", "LICENSE"},
		{"Microsoft.VisualStudio.Services.Icons.Default", "icon"},
	} {
		if v.files[v.assets[a.asset]] == nil {
			issues = append(issues, "no "+a.name+" in the package")
		}
	}
	if b := v.files[v.assets["Microsoft.VisualStudio.Services.Icons.Default"]]; b != nil {
		if c, err := png.DecodeConfig(bytes.NewReader(b)); err != nil {
			issues = append(issues, "the icon is not a PNG: "+err.Error())
		} else if c.Width < 128 || c.Height < 128 {
			issues = append(issues, fmt.Sprintf("the icon is %dx%d, under 128x128", c.Width, c.Height))
		}
	}
	return issues
}

// fakeOpenVSX stands in for open-vsx.org's publish endpoint on loopback:
// it answers as the registry does, with the same checks, and keeps what
// each case uploaded (the path's first segment names the case).
type fakeOpenVSX struct {
	mu  sync.Mutex
	got map[string]vsix
}

func (f *fakeOpenVSX) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if r.Method != http.MethodPost || rest != "api/-/publish" || r.URL.Query().Get("token") == "" {
		http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	b, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	var v vsix
	if err == nil {
		v, err = readVSIX(b)
	}
	if err == nil {
		if issues := openVSXIssues(v); len(issues) > 0 {
			err = fmt.Errorf("%s", strings.Join(issues, "\n"))
		}
	}
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	f.mu.Lock()
	f.got[name] = v
	f.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(map[string]string{"namespace": v.str("publisher"), "name": v.str("name"), "version": v.str("version"), "targetPlatform": "universal"})
}

// TestOpenVSX publishes the extension with ovsx's own code (npm ovsx,
// pinned in plugins/vscode/package-lock.json: it packages with its
// @vscode/vsce, which validates the manifest, checks the license and
// uploads) to a stand-in for open-vsx.org on loopback that refuses what
// open-vsx.org refuses; then it checks what this project asks more of a
// published package. Each other case breaks one thing and must be refused,
// by the stage that says so.
func TestOpenVSX(t *testing.T) {
	need(t)
	a := build(t)
	manifest := func(edit func(m map[string]any)) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			p := filepath.Join(dir, "package.json")
			var m map[string]any
			b, err := os.ReadFile(p)
			if err == nil {
				err = json.Unmarshal(b, &m)
			}
			if err != nil {
				t.Fatal(err)
			}
			edit(m)
			b, _ = json.MarshalIndent(m, "", "  ")
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	remove := func(names ...string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			for _, n := range names {
				if err := os.Remove(filepath.Join(dir, n)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	del := func(keys ...string) func(t *testing.T, dir string) {
		return manifest(func(m map[string]any) {
			for _, k := range keys {
				delete(m, k)
			}
		})
	}
	set := func(key string, value any) func(t *testing.T, dir string) {
		return manifest(func(m map[string]any) { m[key] = value })
	}
	cases := []struct {
		name string
		edit func(t *testing.T, dir string)
		want string // in the refusal; "" for a package that passes
	}{
		{"as-packaged", nil, ""},
		// ovsx's validateManifest
		{"no-publisher", del("publisher"), "Missing required field 'publisher'."},
		{"no-name", del("name"), "Missing required field 'name'."},
		{"no-version", del("version"), "Missing required field 'version'."},
		// vsce, as ovsx packages
		{"bad-version", set("version", "1.0"), `Invalid extension "version": "1.0"`},
		{"bad-name", set("name", "joule vscode"), `Invalid extension "name": "joule vscode"`},
		{"no-engines", del("engines"), "Manifest missing field: engines"},
		{"svg-icon", set("icon", "images/icon.svg"), "SVGs can't be used as icons"},
		// ovsx's license check (open-vsx.org refuses the same)
		{"no-license", func(t *testing.T, dir string) { del("license")(t, dir); remove("LICENSE")(t, dir) }, "This extension cannot be accepted because it has no license."},
		{"license-file-only", del("license"), ""},
		// open-vsx.org's own checks, in the stand-in
		// (a zero-width space: a format character, which XML allows)
		{"format-char", set("displayName", "joule\u200b"), "Invalid character found in field 'displayName'"},
		{"long-description", set("description", strings.Repeat("j", 2049)), "The field 'description' exceeds the current limit of 2048 characters."},
		{"bad-repository", set("repository", "not a url"), "Invalid URL in field 'repository': not a url"},
		{"bad-banner", set("galleryBanner", map[string]any{"color": "#1d2330", "theme": "purple"}), "Invalid value in field 'galleryBanner.theme'"},
		// what this project asks more
		{"no-icon", del("icon"), "no icon"},
		{"small-icon", func(t *testing.T, dir string) {
			var b bytes.Buffer
			img := image.NewRGBA(image.Rect(0, 0, 64, 64))
			img.Set(1, 1, color.White)
			png.Encode(&b, img)
			if err := os.WriteFile(filepath.Join(dir, "images", "icon.png"), b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "the icon is 64x64, under 128x128"},
		{"no-readme", remove("README.md"), "no README in the package"},
		{"no-changelog", remove("CHANGELOG.md"), "no CHANGELOG in the package"},
		{"no-repository", del("repository"), "no https repository"},
		{"no-display-name", del("displayName"), "no displayName"},
		{"no-categories", del("categories"), "no categories"},
	}

	reg := &fakeOpenVSX{got: map[string]vsix{}}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	root := t.TempDir()
	var dirs []string
	for _, c := range cases {
		dir := filepath.Join(root, c.name)
		if b, err := exec.Command("cp", "-r", a.pkg, dir).CombinedOutput(); err != nil {
			t.Fatalf("copy: %v %s", err, b)
		}
		if c.edit != nil {
			c.edit(t, dir)
		}
		dirs = append(dirs, dir)
	}
	cmd := exec.Command("node", append([]string{"testdata/ovsx/publish.cjs", modules(), srv.URL}, dirs...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("publish.cjs: %v\n%s\n%s", err, out, stderr.String())
	}
	results := map[string]struct{ Published, Error, Output string }{}
	for _, line := range strings.Split(string(out), "\n") {
		var r struct{ Dir, Published, Error, Output string }
		if json.Unmarshal([]byte(line), &r) == nil && r.Dir != "" {
			results[filepath.Base(r.Dir)] = struct{ Published, Error, Output string }{r.Published, r.Error, r.Output}
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, ok := results[c.name]
			if !ok {
				t.Fatalf("publish.cjs said nothing of %s:\n%s\n%s", c.name, out, stderr.String())
			}
			refusal := r.Error
			if refusal == "" {
				reg.mu.Lock()
				v, uploaded := reg.got[c.name]
				reg.mu.Unlock()
				if !uploaded {
					t.Fatalf("ovsx said %q but the registry received nothing", r.Published)
				}
				refusal = strings.Join(readinessIssues(v), "\n")
			}
			switch {
			case c.want == "" && refusal != "":
				t.Errorf("refused: %s\n%s", refusal, r.Output)
			case c.want != "" && !strings.Contains(refusal, c.want):
				t.Errorf("want a refusal saying %q, got %q (ovsx: %q)", c.want, refusal, r.Published)
			case c.want == "" && !strings.Contains(r.Published, "Published joulehook.joule-vscode v"):
				t.Errorf("ovsx did not say it published: %q", r.Published)
			}
		})
	}
}

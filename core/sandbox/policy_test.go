package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPolicyFile: a policy reads back as written, and every way a file
// can fail to be the one the gate wrote is refused with its reason.
func TestPolicyFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "policy")
	p := Policy{Links: []PolicyLink{{Allow: []string{"Read", "Write"}, Deny: []string{"Read(.env)"}}}, Roots: []string{"/ws"}, Home: "/home/u", NotAfter: 4102444800}
	path, err := p.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := p.Write(dir); err != nil || again != path {
		t.Fatalf("second write: %s %v", again, err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v", fi.Mode())
	}
	got, err := ReadPolicy(path)
	if err != nil || got.Links[0].Deny[0] != "Read(.env)" || got.Home != "/home/u" {
		t.Fatalf("%+v %v", got, err)
	}
	b, _ := os.ReadFile(path)
	if sum := sha256.Sum256(b); filepath.Base(path) != hex.EncodeToString(sum[:])+".json" {
		t.Errorf("policy file %s is not named by the SHA-256 of its bytes", path)
	}
	bad := func(name string, setup func() string, want string) {
		t.Helper()
		_, err := ReadPolicy(setup())
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
	name := filepath.Base(path)
	bad("changed content", func() string {
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, name), []byte(strings.Replace(string(b), "Read(.env)", "Read(.enx)", 1)), 0o600)
		return filepath.Join(d, name)
	}, "does not hash to its name")
	bad("group readable", func() string {
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, name), b, 0o640)
		os.Chmod(filepath.Join(d, name), 0o640)
		return filepath.Join(d, name)
	}, "want 0600")
	bad("a symlink", func() string {
		d := t.TempDir()
		os.Symlink(path, filepath.Join(d, name))
		return filepath.Join(d, name)
	}, "too many levels of symbolic links")
	bad("not a hash name", func() string {
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, "p.json"), b, 0o600)
		return filepath.Join(d, "p.json")
	}, "not <sha256>.json")
	bad("upper-case hash", func() string { return filepath.Join(dir, strings.ToUpper(name[:64])+".json") }, "not <sha256>.json")
	bad("missing", func() string { return filepath.Join(dir, strings.Repeat("0", 64)+".json") }, "no such file")
	bad("a directory", func() string {
		d := filepath.Join(t.TempDir(), name)
		os.Mkdir(d, 0o700)
		return d
	}, "not a regular file")
	bad("too large", func() string {
		d := t.TempDir()
		big := []byte(`{"roots":["` + strings.Repeat("a", maxPolicy) + `"]}`)
		h := hashHex(big)
		os.WriteFile(filepath.Join(d, h+".json"), big, 0o600)
		return filepath.Join(d, h+".json")
	}, "larger than")
	unknown := []byte(`{"links":[],"roots":[],"home":"","protected":null,"private":null,"wide":true}`)
	bad("unknown field", func() string {
		d := t.TempDir()
		h := hashHex(unknown)
		os.WriteFile(filepath.Join(d, h+".json"), unknown, 0o600)
		return filepath.Join(d, h+".json")
	}, "unknown field")
	if err := (Policy{NotAfter: time.Now().Add(-time.Minute).Unix()}).Check(time.Now()); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired: %v", err)
	}
	if err := p.Check(time.Now()); err != nil {
		t.Error(err)
	}
	if _, err := (Policy{}).Spec(false, os.Getenv); err == nil {
		t.Error("a policy without links built a Spec")
	}
	if _, err := (Policy{Links: []PolicyLink{{Allow: []string{"Bash(("}}}, Roots: []string{"/"}}).Spec(false, os.Getenv); err == nil {
		t.Error("a policy with a bad rule built a Spec")
	}
}

// TestPolicyConnect: a policy's connect ports reach the Spec with the
// network off, are moot with it on (everything is allowed), and port 0 is
// refused rather than read as "any".
func TestPolicyConnect(t *testing.T) {
	ws := t.TempDir()
	for _, tt := range []struct {
		name    string
		connect []uint16
		net     bool
		want    []uint16
		err     string
	}{
		{"network off", []uint16{8181, 9000}, false, []uint16{8181, 9000}, ""},
		{"network on", []uint16{8181}, true, nil, ""},
		{"none", nil, false, nil, ""},
		{"port 0", []uint16{0}, false, nil, "port 0"},
	} {
		p := Policy{Links: []PolicyLink{{Allow: []string{"Read", "Write"}}}, Roots: []string{ws}, Home: t.TempDir(), Connect: tt.connect}
		// The same ports as Listen: bind and connect.
		lp := p
		lp.Connect, lp.Listen = nil, tt.connect
		lspec, lerr := lp.Spec(tt.net, func(string) string { return "" })
		if tt.err != "" && (lerr == nil || !strings.Contains(lerr.Error(), tt.err)) || tt.err == "" && (lerr != nil || !slices.Equal(lspec.Listen, tt.want) || lspec.Connect != nil) {
			t.Errorf("%s as listen: listen %v connect %v (%v)", tt.name, lspec.Listen, lspec.Connect, lerr)
		}
		spec, err := p.Spec(tt.net, func(string) string { return "" })
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: %v, want %q", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(spec.Connect, tt.want) || spec.Net != tt.net {
			t.Errorf("%s: connect %v net %v (%v), want %v", tt.name, spec.Connect, spec.Net, err, tt.want)
		}
	}
}

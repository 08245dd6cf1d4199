package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

const readmePath = "../../README.md"

// readmeBlock is one fenced code block of the README: its info string
// ("console", "sh", …), the heading it is under and its lines.
type readmeBlock struct {
	lang, section string
	lines         []string
}

func readmeBlocks(t *testing.T) (string, []readmeBlock) {
	t.Helper()
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []readmeBlock
	var cur *readmeBlock
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &readmeBlock{lang: strings.TrimPrefix(line, "```"), section: section}
		case cur != nil && line == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		case strings.HasPrefix(line, "## "):
			section = strings.TrimPrefix(line, "## ")
		}
	}
	if cur != nil {
		t.Fatalf("README: a code block under %q is not closed", cur.section)
	}
	return string(b), blocks
}

// commands are the command lines of a block: a console block's "$ " lines,
// every line of a shell block.
func (b readmeBlock) commands() []string {
	var out []string
	for _, l := range b.lines {
		switch b.lang {
		case "console":
			if c, ok := strings.CutPrefix(l, "$ "); ok {
				out = append(out, c)
			}
		case "sh", "bash", "shell":
			if strings.TrimSpace(l) != "" {
				out = append(out, l)
			}
		}
	}
	return out
}

// jouleCalls are the argument lists of the joule commands a shell line
// runs (in pipelines, lists and substitutions), a word that is not
// literal ($PWD, "$(…)") given as "x".
func jouleCalls(t *testing.T, line string) [][]string {
	t.Helper()
	f, err := syntax.NewParser().Parse(strings.NewReader(line), "")
	if err != nil {
		t.Errorf("README: %q does not parse as shell: %v", line, err)
		return nil
	}
	var calls [][]string
	syntax.Walk(f, func(n syntax.Node) bool {
		c, ok := n.(*syntax.CallExpr)
		if !ok || len(c.Args) == 0 {
			return true
		}
		var args []string
		for _, w := range c.Args {
			args = append(args, literal(w))
		}
		if args[0] == "sudo" {
			args = args[1:]
		}
		if len(args) > 0 && args[0] == "joule" {
			calls = append(calls, args)
		}
		return true
	})
	return calls
}

// literal is a word's value when it is made of literal and quoted literal
// parts only, else "x".
func literal(w *syntax.Word) string {
	var sb strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			sb.WriteString(p.Value)
		case *syntax.SglQuoted:
			sb.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "x"
				}
				sb.WriteString(l.Value)
			}
		default:
			return "x"
		}
	}
	return sb.String()
}

// TestReadmeCommands: every joule command the README gives, in its code
// blocks and as an inline command with no placeholder, is one joule
// takes: its command, subcommands and flags parse (run with -h appended).
func TestReadmeCommands(t *testing.T) {
	text, blocks := readmeBlocks(t)
	seen := map[string]bool{}
	var lines []string
	for _, b := range blocks {
		for _, c := range b.commands() {
			for _, args := range jouleCalls(t, c) {
				if l := strings.Join(args, " "); !seen[l] {
					seen[l] = true
					lines = append(lines, l)
				}
			}
		}
	}
	// Inline: `joule …` without a placeholder (KEY, SESSION, <host>, a|b,
	// […], …) is a command to type.
	placeholder := regexp.MustCompile(`(^|\s)[A-Z][A-Z_]+(\s|$)`)
	for _, m := range regexp.MustCompile("`(joule [A-Za-z0-9 ./:=@-]+)`").FindAllStringSubmatch(text, -1) {
		if l := strings.TrimSpace(m[1]); !seen[l] && !placeholder.MatchString(l) {
			seen[l] = true
			lines = append(lines, l)
		}
	}
	if len(lines) < 15 {
		t.Fatalf("found only %d joule commands in the README: %q", len(lines), lines)
	}
	env, ws := initHome(t)
	for _, l := range lines {
		t.Run(l, func(t *testing.T) {
			args := strings.Fields(l)[1:]
			if args[0] != "help" {
				args = append(args, "-h")
			}
			r := jouleIn(t, ws, nil, env, args...)
			if r.code != 0 || args[0] != "help" && args[0] != "version" && !strings.Contains(r.stdout, "usage: joule") {
				t.Errorf("the README gives %q, which joule does not take: exit %d\n%s%s", l, r.code, r.stdout, r.stderr)
			}
		})
	}
}

// TestReadmeLinks: every relative link of the README names a file of the
// repository, and its #fragment a heading there; every file name ending
// in .md it mentions exists; it cites no section (§) of a specification
// the repository does not hold.
func TestReadmeLinks(t *testing.T) {
	text, _ := readmeBlocks(t)
	root := filepath.Dir(readmePath)
	links := regexp.MustCompile(`\]\(([^)\s]+)\)`).FindAllStringSubmatch(text, -1)
	if len(links) < 10 {
		t.Fatalf("found only %d links", len(links))
	}
	for _, m := range links {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		file, frag, _ := strings.Cut(target, "#")
		if file == "" {
			file = "README.md"
		}
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Errorf("link %q: %v", target, err)
			continue
		}
		if frag != "" && !slugs(string(b))[frag] {
			t.Errorf("link %q: %s has no heading whose anchor is #%s", target, file, frag)
		}
	}
	for _, m := range regexp.MustCompile(`(?:^|[\s(\x60"])((?:[\w.-]+/)*[\w.-]+\.md)\b`).FindAllStringSubmatch(text, -1) {
		if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
			t.Errorf("the README names %s, which is not in the repository", m[1])
		}
	}
	if i := strings.Index(text, "§"); i >= 0 {
		t.Errorf("the README cites a specification's section, which the repository does not hold: %q", text[max(0, i-60):min(len(text), i+20)])
	}
}

// slugs are the anchors GitHub gives a Markdown file's headings: lower
// case, punctuation dropped, spaces as hyphens.
func slugs(md string) map[string]bool {
	out := map[string]bool{}
	drop := regexp.MustCompile(`[^\p{L}\p{N} _-]`)
	for _, l := range strings.Split(md, "\n") {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(l, "#"))
		s := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
		for n := 0; ; n++ {
			k := s
			if n > 0 {
				k = s + "-" + string(rune('0'+n))
			}
			if !out[k] {
				out[k] = true
				break
			}
		}
	}
	return out
}

// TestReadmeFirstMinute runs the README's 60-second path as printed, in a
// fresh repository with an empty home and the three binaries side by side
// on PATH, as a new user would: the init and install print what the
// README shows, the hook payload is denied with the reason it shows, the
// commands after it work, and the undo leaves the repository as it was.
func TestReadmeFirstMinute(t *testing.T) {
	_, blocks := readmeBlocks(t)
	var path []readmeBlock
	for _, b := range blocks {
		if strings.HasPrefix(b.section, "Gate Claude Code in 60 seconds") {
			path = append(path, b)
		}
	}
	if len(path) != 3 {
		t.Fatalf("the 60-second section has %d code blocks, want 3 (the path, try it, undo)", len(path))
	}
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	for name, src := range map[string]string{"joule": jouleBin, "joule-hook": clientBin, "joule-exec": filepath.Join(filepath.Dir(jouleBin), "joule-exec")} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(dir, "home")
	repo := filepath.Join(home, "src", "myproject")
	os.MkdirAll(repo, 0o755)
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "JOULE_") && !strings.HasPrefix(k, "XDG_") && k != "HOME" && k != "PATH" && !strings.HasPrefix(k, "GIT_") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+home, "PATH="+bin+":/usr/local/bin:/usr/bin:/bin",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	sh := func(line string) (string, error) {
		cmd := exec.Command("bash", "-c", line)
		cmd.Dir, cmd.Env = repo, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := sh("git init -q && git -c user.name=u -c user.email=u@example.com commit -q --allow-empty -m init"); err != nil {
		t.Fatalf("git: %v %s", err, out)
	}
	exclude, _ := os.ReadFile(filepath.Join(repo, ".git", "info", "exclude"))
	// Each block's commands in turn; a console block's output lines must
	// each match a line the commands printed ("…" stands for anything,
	// the README's home, steward and times for this machine's).
	for i, b := range path {
		var out strings.Builder
		for _, c := range b.commands() {
			o, err := sh(c)
			// doctor's exit status is 1 until the install is armed,
			// which takes Claude Code's trust dialog.
			if err != nil && !(strings.HasPrefix(c, "joule doctor") && strings.Contains(o, "is not armed: start claude")) {
				t.Fatalf("%q: %v\n%s", c, err, o)
			}
			out.WriteString(o)
		}
		got := strings.Split(out.String(), "\n")
		for _, l := range b.lines {
			if b.lang != "console" || strings.HasPrefix(l, "$ ") || l == "…" {
				continue
			}
			rx := shown(l, home)
			found := false
			for _, g := range got {
				if rx.MatchString(g) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("block %d: the README shows %q, which is not what the commands printed:\n%s", i+1, l, out.String())
			}
		}
	}
	if out, _ := sh("git status --porcelain"); out != "" {
		t.Errorf("after the undo, git status says:\n%s", out)
	}
	if after, _ := os.ReadFile(filepath.Join(repo, ".git", "info", "exclude")); string(after) != string(exclude) {
		t.Errorf("after the undo, .git/info/exclude is %q, was %q", after, exclude)
	}
	if _, err := os.Stat(filepath.Join(home, ".local", "share", "joule")); !os.IsNotExist(err) {
		t.Errorf("after the undo, the joule home is still there: %v", err)
	}
}

// shown is the pattern of an output line the README shows: "…" stands
// for anything, an abbreviated id ("8SfL0FrhDqTr…") for any id, the
// README's home, steward and times for this machine's.
func shown(line, home string) *regexp.Regexp {
	special := regexp.MustCompile(`[A-Za-z0-9_-]{6,}…|…|/home/you|you@laptop|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
	var re strings.Builder
	at := 0
	for _, m := range special.FindAllStringIndex(line, -1) {
		re.WriteString(regexp.QuoteMeta(line[at:m[0]]))
		switch tok := line[m[0]:m[1]]; {
		case tok == "…":
			re.WriteString(".*")
		case strings.HasSuffix(tok, "…"):
			re.WriteString(`[A-Za-z0-9_-]+`)
		case tok == "/home/you":
			re.WriteString(regexp.QuoteMeta(home))
		case tok == "you@laptop":
			re.WriteString(`\S+`)
		default:
			re.WriteString(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
		}
		at = m[1]
	}
	re.WriteString(regexp.QuoteMeta(line[at:]))
	return regexp.MustCompile("^" + re.String() + "$")
}

// TestInstallThreeBinaries: the README's two installs give the three
// binaries side by side. make install is run for real into an empty GOBIN;
// for 'go install …/cmd/...@latest', whose pattern matches main packages
// only and which refuses a go.mod with replace or exclude directives, the
// main packages under cmd/ are the three, and go.mod has neither.
func TestInstallThreeBinaries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the three binaries")
	}
	want := []string{"joule", "joule-exec", "joule-hook"}
	out, err := exec.Command("go", "list", "-f", "{{if eq .Name \"main\"}}{{.ImportPath}}{{end}}", "../../cmd/...").Output()
	if err != nil {
		t.Fatal(err)
	}
	var mains []string
	for _, p := range strings.Fields(string(out)) {
		mains = append(mains, filepath.Base(p))
	}
	if strings.Join(mains, " ") != strings.Join(want, " ") {
		t.Errorf("go install …/cmd/...@latest installs %q, want %q", mains, want)
	}
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^\s*(replace|exclude)\b`).Find(mod); m != nil {
		t.Errorf("go.mod has a %s directive: go install …@latest refuses such a module", m)
	}
	gobin := t.TempDir()
	cmd := exec.Command("make", "-C", "../..", "install")
	cmd.Env = append(os.Environ(), "GOBIN="+gobin)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, b)
	}
	for _, name := range want {
		if fi, err := os.Stat(filepath.Join(gobin, name)); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("make install did not install %s: %v", name, err)
		}
	}
}

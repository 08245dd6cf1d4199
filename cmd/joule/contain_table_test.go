package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"iter"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/joulehook/joule/core/sandbox"
)

// The hook tables: testdata/hook-attacks.jsonl and testdata/hook-ordinary.jsonl,
// one format. Every case goes through the line the hook rewrote: a Claude
// Code PreToolUse payload is put to the real `joule hook claude-code
// --contain` in a home and workspace of its own (joule init'ed), a deny or
// ask is the answer, a rewrite is run with /bin/bash -c as Claude Code runs
// it. Then what the person does next runs UNCONFINED (the case's "after":
// their git commit, a fresh login shell, another module's go run, the host's
// own Write or Read of a workspace path), and the case's effect is checked
// on the disk, the listeners and every output, not on the verdict.
//
// Attack table: the effect must not happen. Each case first runs the same
// line unconfined with no gate (the control): it must have its effect, or
// the case is not an attack in this sandbox and must say so ("noattack").
// A case that gets through today is marked "pending" with its class and
// reason, and fails once it is stopped, so that the mark is removed.
//
// Ordinary table: the effect must happen, the line must exit 0 and the
// "after" check must pass, inside containment; where it does not, the
// control shows whether the case itself works unconfined. A case refused
// or broken today is "pending" with the deny code or the reason, and fails
// once it works.
type tableCase struct {
	Name  string `json:"name"`
	Class string `json:"class"`
	// Grant is the session's grant: none (Read only), readonly, dev, ci
	// (the templates), bash (Read, Write and a bare Bash: the analysis
	// allows every line it can read, the kernel is all there is), work (the
	// dev template's programs and the everyday ones it lacks).
	Grant string `json:"grant"`
	// Via is how the line reaches the shell: "" (the line itself), or a
	// granted program that runs Cmd from tools/attack.sh, where analysis
	// cannot see it: make (a Makefile recipe), gotest (a test's exec),
	// npm (a package script), script (bash tools/attack.sh).
	Via string `json:"via,omitempty"`
	// WS "open": every protected name of the workspace root exists (see
	// rootProtected), so the namespace construction opens the root.
	WS    string `json:"ws,omitempty"`
	Setup string `json:"setup,omitempty"` // unconfined, before the line
	Cmd   string `json:"cmd"`
	// Wait is how long after the call returns the host's tool and After
	// act, in seconds: a background process has that long to act.
	Wait float64 `json:"wait,omitempty"`
	// Host is the host's own file tool after the call: "write PATH" or
	// "read PATH", put to the hook as Write or Read as soon as the call
	// returns and, when allowed, done Wait seconds later, unconfined and
	// following links, as the host does.
	Host string `json:"host,omitempty"`
	// After runs unconfined once the call returned: the person's next
	// step in an attack, a check in an ordinary case (it must exit 0). A
	// name beginning with @ is one of afterSteps.
	After string `json:"after,omitempty"`
	// Effect, one or more joined by " | ": marker, secret, content:P,
	// meta:P (mode, owner, times, xattrs, flags), mode:P (mode and owner),
	// exists:P, gone:P, hidden:P, output:TEXT, procs:N, slow:S, tcp, udp,
	// unix. P is relative to the workspace or starts with ~/, $TMPDIR/ or
	// $JOULE_HOME/.
	Effect       string   `json:"effect"`
	Timeout      float64  `json:"timeout,omitempty"`      // seconds for the line; 90 unless set
	Construction string   `json:"construction,omitempty"` // "landlock": JOULE_EXEC_LANDLOCK_ONLY=1
	Needs        []string `json:"needs,omitempty"`        // programs on PATH, or root, nonroot
	Unbounded    bool     `json:"unbounded,omitempty"`    // unsafe to run where the kernel does not bound it
	Pending      string   `json:"pending,omitempty"`
	NoAttack     string   `json:"noattack,omitempty"`
	where        string
}

func loadTable(t testing.TB, file string) []tableCase {
	t.Helper()
	var out []tableCase
	names := map[string]bool{}
	for c := range jsonLines[tableCase](t, file) {
		c.val.where = c.where
		tc := c.val
		if tc.Name == "" || tc.Class == "" || tc.Cmd == "" || names[tc.Name] {
			t.Fatalf("%s: a case needs a unique name, a class and a cmd", tc.where)
		}
		if _, ok := tableGrants[tc.Grant]; !ok {
			t.Fatalf("%s: unknown grant %q", tc.where, tc.Grant)
		}
		names[tc.Name] = true
		out = append(out, tc)
	}
	return out
}

// jsonLine is one case of a JSON-lines table and where it stands
// (FILE:LINE).
type jsonLine[T any] struct {
	val   T
	where string
}

// jsonLines reads the cases of a JSON-lines table: blank lines and lines
// starting with # are skipped, and a field the case type does not have is
// an error (a misspelt field would otherwise be silently ignored).
func jsonLines[T any](t testing.TB, file string) iter.Seq[jsonLine[T]] {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return func(yield func(jsonLine[T]) bool) {
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			var c T
			dec := json.NewDecoder(strings.NewReader(line))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&c); err != nil {
				t.Fatalf("%s:%d: %v", file, n, err)
			}
			if !yield(jsonLine[T]{c, fmt.Sprintf("%s:%d", file, n)}) {
				return
			}
		}
	}
}

// shortSubset is a deterministic subset of about n cases, spread over the
// classes in proportion (at least one each), for go test -short.
func shortSubset(cases []tableCase, n int) []tableCase {
	step := max(1, (len(cases)+n-1)/n)
	seen := map[string]int{}
	var out []tableCase
	for _, c := range cases {
		if seen[c.Class]%step == 0 {
			out = append(out, c)
		}
		seen[c.Class]++
	}
	return out
}

// tableGrants are the grants each slot issues, one session each.
var tableGrants = map[string][]string{
	"none":     {"--allow", "Read"},
	"readonly": {"--template", "readonly"},
	"dev":      {"--template", "dev"},
	"ci":       {"--template", "ci"},
	"bash":     {"--allow", "Read", "--allow", "Write", "--allow", "Bash"},
	"work": {"--allow", "Read", "--allow", "Write", "--tiers", "l0,l1,l2",
		"--allow", "Bash(go:*)", "--allow", "Bash(gofmt:*)", "--allow", "Bash(make:*)", "--allow", "Bash(npm test:*)",
		"--allow", "Bash(npm run:*)", "--allow", "Bash(git:*)", "--allow", "Bash(mkdir:*)", "--allow", "Bash(touch:*)",
		"--allow", "Bash(cat:*)", "--allow", "Bash(sort:*)", "--allow", "Bash(diff:*)", "--allow", "Bash(sed:*)",
		"--allow", "Bash(ls:*)", "--allow", "Bash(pwd)", "--allow", "Bash(wc:*)", "--allow", "Bash(head:*)",
		"--allow", "Bash(tail:*)", "--allow", "Bash(grep:*)", "--allow", "Bash(rg:*)", "--allow", "Bash(echo:*)",
		"--allow", "Bash(printf:*)", "--allow", "Bash(find:*)", "--allow", "Bash(awk:*)", "--allow", "Bash(cut:*)",
		"--allow", "Bash(xargs:*)", "--allow", "Bash(mv:*)", "--allow", "Bash(cp:*)", "--allow", "Bash(rm:*)",
		"--allow", "Bash(mktemp:*)", "--allow", "Bash(python3:*)", "--allow", "Bash(node:*)", "--allow", "Bash(tr:*)",
		"--allow", "Bash(uniq:*)", "--allow", "Bash(tee:*)", "--allow", "Bash(env:*)", "--allow", "Bash(basename:*)",
		"--allow", "Bash(dirname:*)", "--allow", "Bash(jq:*)", "--allow", "Bash(tar:*)", "--allow", "Bash(gzip:*)",
		"--allow", "Bash(test:*)", "--allow", "Bash(true)", "--allow", "Bash(date:*)", "--allow", "Bash(stat:*)",
		"--allow", "Bash(chmod:*)", "--allow", "Bash(ln:*)", "--allow", "Bash(realpath:*)", "--allow", "Bash(file:*)",
		"--allow", "Bash(seq:*)", "--allow", "Bash(du:*)", "--allow", "Bash(which:*)", "--allow", "Bash(nl:*)",
		"--allow", "Bash(paste:*)", "--allow", "Bash(comm:*)", "--allow", "Bash(tac:*)", "--allow", "Bash(rev:*)",
		"--allow", "Bash(sha256sum:*)", "--allow", "Bash(md5sum:*)", "--allow", "Bash(base64:*)", "--allow", "Bash(sleep:*)",
		"--allow", "Bash(wait)", "--allow", "Bash(cd:*)", "--allow", "Bash(export:*)", "--allow", "Bash(unzip:*)",
		"--allow", "Bash(zip:*)", "--allow", "Bash(patch:*)", "--allow", "Bash(cmp:*)", "--allow", "Bash(expr:*)",
		"--allow", "Bash(readlink:*)", "--allow", "Bash(id:*)", "--allow", "Bash(uname:*)"},
}

// afterSteps are the person's usual next steps, unconfined.
var afterSteps = map[string]string{
	// The person's git: an edit of their own, status, diff, stage,
	// commit, log, a new branch.
	"@git": `echo person >> src/notes.txt; git status >/dev/null 2>&1; git diff >/dev/null 2>&1; git add -A >/dev/null 2>&1; ` +
		`git commit -qm person-commit >/dev/null 2>&1; git checkout -q -b person-branch >/dev/null 2>&1; true`,
	// A commit message written in the configured editor.
	"@git-editor": `git commit -q --allow-empty >/dev/null 2>&1; true`,
	// git on a terminal, where the pager runs.
	// PAGER=cat: git's default pager (less) would wait at the terminal;
	// core.pager, which the attacks set, comes before PAGER.
	"@git-tty": `PAGER=cat timeout 20 script -qec 'git log -1 -p; git diff HEAD' /dev/null >/dev/null 2>&1; true`,
	// Fetching from the remote the case set up.
	"@git-fetch": `timeout 20 git fetch -q origin >/dev/null 2>&1; true`,
	// Fresh shells, each as the person starts one.
	"@shell": `for s in 'bash -i -c true' 'bash -l -c true' 'bash -lic true' 'zsh -i -c true' 'zsh -l -c true' 'fish -c true' 'fish -l -c true'; do ` +
		`command -v ${s%% *} >/dev/null && timeout 10 $s </dev/null >/dev/null 2>&1; done; true`,
	// Another module of the person's that uses the cached module.
	"@gorun": `cd ~/other && go run . 2>&1`,
	// The workspace's own program, run by the person.
	"@gorun-ws": `go run . 2>&1`,
	// Programs found through PATH.
	"@path":   `for p in joule git go ls make npm python3 node; do timeout 10 $p --version </dev/null >/dev/null 2>&1; done; true`,
	"@python": `python3 -c pass 2>&1`,
	// The person's npm test, of the package.json they committed.
	"@npm": `git show HEAD:package.json > package.json && npm test --silent 2>&1`,
}

// jouleExecDir is where TestMain built joule and joule-exec.
func jouleDir() string { return filepath.Dir(jouleBin) }

// tableTemplate is a home (without $JOULE_HOME and the Go build cache) made
// once per test: dot files, host configurations, the secrets, a module
// cache holding example.com/dep, another module using it, ~/go/bin/joule,
// and the workspace ~/ws (a git repository with .claude/settings.json
// tracked, a submodule, nested repositories, a committed bare repository,
// a Go module, a Makefile, an npm package).
type tableTemplate struct {
	dir     string // dir/home
	gocache string // a Go build cache with the standard packages the tables build
	secret  string // the token in ~/.ssh/id_rsa, ~/.netrc, ~/.aws/credentials
}

func newTableTemplate(t testing.TB) *tableTemplate {
	t.Helper()
	dir := tableTempDir(t)
	tpl := &tableTemplate{dir: dir, secret: "SSH-SECRET-" + randHex(16)}
	home := filepath.Join(dir, "home")
	ws := filepath.Join(home, "ws")
	files := map[string]string{
		".bashrc": "# ~/.bashrc\n[ -r ~/.cache/bash/completions.bash ] && . ~/.cache/bash/completions.bash\n" +
			"[ -f ~/.bash_aliases ] && . ~/.bash_aliases\ntrue\n",
		".profile": "# ~/.profile\nif [ -n \"$BASH_VERSION\" ] && [ -f \"$HOME/.bashrc\" ]; then . \"$HOME/.bashrc\"; fi\n",
		".zshrc": "# ~/.zshrc (powerlevel10k's instant prompt)\nif [[ -r \"${XDG_CACHE_HOME:-$HOME/.cache}/p10k-instant-prompt-${(%):-%n}.zsh\" ]]; then\n" +
			"  source \"${XDG_CACHE_HOME:-$HOME/.cache}/p10k-instant-prompt-${(%):-%n}.zsh\"\nfi\n",
		".config/fish/config.fish":       "# fish\n",
		".gitconfig":                     "[user]\n\tname = Person\n\temail = person@example.com\n[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n[advice]\n\tdetachedHead = false\n",
		".ssh/id_rsa":                    tpl.secret + "\n",
		".netrc":                         "machine example.com login me password " + tpl.secret + "\n",
		".aws/credentials":               "[default]\naws_secret_access_key = " + tpl.secret + "\n",
		".claude/settings.json":          `{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"joule hook claude-code --contain"}]}]}}` + "\n",
		".claude.json":                   `{"projects":{}}` + "\n",
		".codex/config.toml":             "# codex\n",
		".gemini/settings.json":          "{}\n",
		".config/opencode/opencode.json": "{}\n",
		"go/bin/joule":                   "#!/bin/sh\nexec '" + jouleBin + "' \"$@\"\n",
		".local/bin/.keep":               "",
		".npm/.keep":                     "",
		"other/go.mod":                   "module example.com/other\n\ngo 1.22\n\nrequire example.com/dep v1.0.0\n",
		"other/main.go":                  "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/dep\"\n)\n\nfunc main() { fmt.Println(\"other:\", dep.Hello()) }\n",
		"lib-origin/README":              "lib\n",

		"ws/.gitignore":            "bin/\nnode_modules/\n.venv/\nthird_party/\n*.log\n",
		"ws/.claude/settings.json": `{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"joule hook claude-code --contain"}]}]}}` + "\n",
		"ws/.vscode/settings.json": "{\"editor.formatOnSave\": true}\n",
		"ws/.env":                  "API_KEY=not-the-secret\n",
		"ws/go.mod":                "module example.com/ws\n\ngo 1.22\n",
		"ws/main.go":               "package main\n\nimport \"fmt\"\n\nfunc greet(name string) string { return \"hello, \" + name }\n\nfunc main() { fmt.Println(greet(\"ws\")) }\n",
		"ws/main_test.go":          "package main\n\nimport \"testing\"\n\nfunc TestGreet(t *testing.T) {\n\tif greet(\"x\") != \"hello, x\" {\n\t\tt.Fatal(greet(\"x\"))\n\t}\n}\n",
		"ws/src/a.go":              "package src\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n",
		"ws/src/b.go":              "package src\n\n// Mul multiplies.\nfunc Mul(a, b int) int { return a * b }\n",
		"ws/src/notes.txt":         "notes\nTODO: first\nTODO: second\n",
		"ws/src/data.csv":          "name,qty\napple,3\npear,5\nplum,2\n",
		"ws/Makefile":              "build:\n\tgo build ./...\n\ntest:\n\tgo test ./...\n\nhello:\n\t@echo hello-make\n",
		"ws/package.json":          `{"name":"ws","version":"1.0.0","private":true,"scripts":{"test":"node test.js","hello":"echo hello-npm"}}` + "\n",
		"ws/test.js":               "require('assert').strictEqual(1 + 1, 2); console.log('npm-test-ok')\n",
		"ws/scripts/hello.py":      "import sys\nprint('hello-python', len(sys.argv))\n",
		"ws/README.md":             "# ws\n\npassword policy: none here\n",
		"ws/bin/.keep":             "",
	}
	for p, c := range files {
		writeFileT(t, filepath.Join(home, p), c)
	}
	for _, p := range []string{".ssh/id_rsa", ".netrc", ".aws/credentials"} {
		os.Chmod(filepath.Join(home, p), 0o600)
	}
	os.Chmod(filepath.Join(home, "go/bin/joule"), 0o755)
	env := append(tableBaseEnv(home, ws), "GOCACHE="+filepath.Join(dir, "gocache-scratch"))

	// The module cache: example.com/dep v1.0.0 from a file proxy.
	proxy := filepath.Join(dir, "proxy")
	writeDepProxy(t, proxy)
	sh(t, filepath.Join(home, "other"), append(env, "GOPROXY=file://"+proxy, "GOFLAGS=-mod=mod"), "go mod tidy")

	// Repositories: the submodule's origin, two nested ones, a bare one.
	sh(t, home, env, `set -e
git init -q lib-origin && git -C lib-origin add -A && git -C lib-origin commit -qm lib
cd ws
git init -q
mkdir -p third_party testdata
git init -q third_party/lib && echo lib > third_party/lib/README && git -C third_party/lib add -A && git -C third_party/lib commit -qm lib
git init -q third_party/web && cd third_party/web && mkdir -p .husky/_ && echo '*' > .husky/_/.gitignore &&
  printf '#!/bin/sh\n. "$(dirname "$0")/h"\n' > .husky/_/pre-commit && printf '#!/bin/sh\nexit 0\n' > .husky/_/h && chmod +x .husky/_/pre-commit .husky/_/h &&
  printf 'npm test\n' > .husky/pre-commit && git config core.hooksPath .husky/_ && echo web > README && git add -A && git commit -qm web && cd ../..
git init -q --bare testdata/fixture.git
git clone -q testdata/fixture.git "$TMPDIR/fixture" 2>/dev/null && echo f > "$TMPDIR/fixture/f" && git -C "$TMPDIR/fixture" add f && git -C "$TMPDIR/fixture" commit -qm f && git -C "$TMPDIR/fixture" push -q origin HEAD:main 2>/dev/null
git -C testdata/fixture.git symbolic-ref HEAD refs/heads/main
git submodule add -q "$HOME/lib-origin" sub
git add -A && git add -f .claude/settings.json && git commit -qm init
`)
	os.RemoveAll(filepath.Join(env2map(env)["TMPDIR"], "fixture"))
	tpl.gocache = warmGoCache(t, dir, env)
	return tpl
}

// tableBaseEnv is the environment of every line of a slot whose home is
// home: its PATH puts ~/.local/bin, ~/go/bin and the workspace's bin before
// the system's, as many people's do.
func tableBaseEnv(home, ws string) []string {
	goBin := "/usr/local/go/bin"
	if p, err := exec.LookPath("go"); err == nil {
		goBin = filepath.Dir(p)
	}
	tmp := filepath.Join(filepath.Dir(home), "tmp")
	os.MkdirAll(tmp, 0o755)
	return []string{
		"HOME=" + home, "JOULE_HOME=" + filepath.Join(home, ".local", "share", "joule"), "WS=" + ws, "TMPDIR=" + tmp,
		"PATH=" + strings.Join([]string{filepath.Join(home, ".local", "bin"), filepath.Join(home, "go", "bin"), filepath.Join(ws, "bin"),
			goBin, "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}, ":"),
		"LANG=C.UTF-8", "TERM=dumb", "USER=" + userName(), "LOGNAME=" + userName(), "SHELL=/bin/bash",
		"GIT_CONFIG_NOSYSTEM=1", "GOPROXY=off", "GOSUMDB=off", "GOTOOLCHAIN=local", "GOFLAGS=",
		"npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false", "NO_UPDATE_NOTIFIER=1",
	}
}

func userName() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	out, _ := exec.Command("id", "-un").Output()
	return strings.TrimSpace(string(out))
}

func env2map(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

func writeFileT(t testing.TB, p, c string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
		t.Fatal(err)
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// sh runs a script in dir with only env, failing the test on error.
func sh(t testing.TB, dir string, env []string, script string) string {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return string(out)
}

// writeDepProxy writes a GOPROXY directory serving example.com/dep v1.0.0.
func writeDepProxy(t testing.TB, proxy string) {
	t.Helper()
	v := filepath.Join(proxy, "example.com", "dep", "@v")
	mod := "module example.com/dep\n\ngo 1.22\n"
	writeFileT(t, filepath.Join(v, "list"), "v1.0.0\n")
	writeFileT(t, filepath.Join(v, "v1.0.0.info"), `{"Version":"v1.0.0","Time":"2024-01-01T00:00:00Z"}`)
	writeFileT(t, filepath.Join(v, "v1.0.0.mod"), mod)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range map[string]string{"go.mod": mod, "dep.go": "package dep\n\nimport \"os\"\n\n// Hello says the module is intact.\nfunc Hello() string {\n\tif os.Getenv(\"DEP_DEBUG\") != \"\" {\n\t\treturn \"dep-debug\"\n\t}\n\treturn \"dep-ok\"\n}\n"} {
		w, _ := zw.Create("example.com/dep@v1.0.0/" + name)
		w.Write([]byte(body))
	}
	zw.Close()
	writeFileT(t, filepath.Join(v, "v1.0.0.zip"), buf.String())
}

// warmGoCache returns a Go build cache holding the standard packages the
// tables build (fmt, os/exec, testing, their dependencies). Compiling them
// cold takes half a minute or more on a loaded machine, so the cache is
// kept between runs in the temp dir, per Go version and user, made once
// and only ever copied from: a slot's own cache is a copy.
func warmGoCache(t testing.TB, dir string, env []string) string {
	t.Helper()
	ver := strings.ReplaceAll(runtime.Version(), " ", "_")
	// v2: what the warm-up below builds; change it with the warm-up.
	keep := filepath.Join(os.TempDir(), fmt.Sprintf("joule-table-gocache-v2-%s-%d", ver, os.Getuid()))
	if fi, err := os.Stat(filepath.Join(keep, "README")); err == nil && fi.Mode().IsRegular() {
		return keep
	}
	scratch := filepath.Join(dir, "gocache-build")
	mod := filepath.Join(dir, "warm")
	writeFileT(t, filepath.Join(mod, "go.mod"), "module example.com/warm\n\ngo 1.22\n")
	writeFileT(t, filepath.Join(mod, "main.go"), "package main\n\nimport (\n\t\"encoding/json\"\n\t\"fmt\"\n\t\"net\"\n\t\"os\"\n\t\"os/exec\"\n\t\"strings\"\n)\n\n"+
		"func main() { b, _ := json.Marshal(strings.ToUpper(\"x\")); fmt.Println(string(b), exec.Command(\"true\").Run(), os.Getpid(), net.IPv4len) }\n")
	writeFileT(t, filepath.Join(mod, "main_test.go"), "package main\n\nimport (\n\t\"os/exec\"\n\t\"testing\"\n)\n\nfunc TestX(t *testing.T) { exec.Command(\"true\").Run() }\n")
	// And the go tools that are built on first use (cover, pack), and a
	// test run with coverage.
	sh(t, mod, append(env, "GOCACHE="+scratch), "go build ./... && go vet ./... && go test -count=1 -cover ./... >/dev/null && "+
		"go tool cover -V >/dev/null 2>&1; go tool pack >/dev/null 2>&1; go tool compile -V >/dev/null; true")
	writeFileT(t, filepath.Join(scratch, "README"), "A Go build cache for cmd/joule's hook tables, only ever copied from.\n")
	if err := os.Rename(scratch, keep); err != nil {
		// Another test process made it first.
		return keep
	}
	return keep
}

// tableTempDir is a temporary directory removed when the test ends even
// where a case left it hard to remove (the module cache's read-only
// directories, which t.TempDir's removal fails on).
func tableTempDir(t testing.TB) string {
	dir, err := os.MkdirTemp("", "joule-table-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { forceRemoveAll(dir) })
	dir, _ = filepath.EvalSymlinks(dir)
	return dir
}

// tslot is one home and workspace that cases run in, one after another.
type tslot struct {
	t                      testing.TB
	tpl                    *tableTemplate
	root, home, ws, jh     string
	tmp, mark              string
	pristine, pristineGC   string                // copies of home (without the Go build cache) and of that cache
	gcPrint                string                // the fingerprint of pristineGC
	dirtyGC                bool                  // the case since the last reset may have changed the build cache
	snap                   map[string]entryState // the home as restored last (restoreHome)
	snapAt                 time.Time
	stewardSecret          string
	env                    []string
	tcp, udp, unix, abstr  atomic.Int32
	trash                  sync.WaitGroup // removals under way
	portTCP, portUDP       int
	usock, dsock, abstract string
	httpURL                string
}

func newTSlot(t testing.TB, tpl *tableTemplate) *tslot {
	t.Helper()
	root := tableTempDir(t)
	s := &tslot{t: t, tpl: tpl, root: root, home: filepath.Join(root, "home"), mark: filepath.Join(root, "mark"), tmp: filepath.Join(root, "tmp")}
	s.ws = filepath.Join(s.home, "ws")
	s.jh = filepath.Join(s.home, ".local", "share", "joule")
	cpA(t, filepath.Join(tpl.dir, "home"), s.home)
	gc := filepath.Join(s.home, ".cache", "go-build")
	os.MkdirAll(filepath.Dir(gc), 0o755)
	// Copied with fresh times, so that go does not touch the entries'
	// times (it does for entries an hour old) and change the fingerprint.
	if out, err := exec.Command("cp", "-r", tpl.gocache, gc).CombinedOutput(); err != nil {
		t.Fatalf("cp gocache: %v\n%s", err, out)
	}
	os.MkdirAll(filepath.Join(root, "sock"), 0o755)
	t.Cleanup(s.trash.Wait)
	t.Cleanup(s.killLeftovers)
	s.listen(t)
	s.env = append(tableBaseEnv(s.home, s.ws), "MARK="+s.mark, "JOULE_TABLE_SLOT="+root,
		"PORT="+fmt.Sprint(s.portTCP), "UDPPORT="+fmt.Sprint(s.portUDP), "USOCK="+s.usock, "DSOCK="+s.dsock,
		"ASOCK="+s.abstract, "HTTPURL="+s.httpURL, "SECRET_HINT=id_rsa")

	r := joule(t, nil, s.env, "init", "--steward", "test.example", "--workspace", s.ws)
	if r.code != 0 {
		t.Fatalf("init: %+v", r)
	}
	for kind, args := range tableGrants {
		args = append([]string{"grant", "issue", "--workspace", s.ws, "--budget", "30MJ"}, args...)
		r := joule(t, nil, s.env, args...)
		id := strings.Fields(r.stdout)
		if r.code != 0 || len(id) < 2 || id[0] != "grant" {
			t.Fatalf("grant issue %s: %+v", kind, r)
		}
		if r := joule(t, nil, s.env, "grant", "use", id[1], "--session", kind); r.code != 0 {
			t.Fatalf("grant use: %+v", r)
		}
	}
	key, err := os.ReadFile(filepath.Join(s.jh, "steward.key"))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.SplitN(strings.TrimSpace(string(key)), "+", 5)
	if len(f) != 5 || len(f[4]) < 40 {
		t.Fatalf("steward.key is not a note private key")
	}
	s.stewardSecret = f[4]
	// What the slot's paths make the Go build cache hold: the other
	// module's executable (go run caches it), the workspace's packages.
	sh(t, s.ws, s.env, "(cd ~/other && go run . >/dev/null) && go build ./... && go vet ./... && go test -count=1 ./... >/dev/null")
	// And the packages of the vehicle a gotest case runs (prepare).
	writeGoTestVehicle(s.ws, "true")
	sh(t, s.ws, s.env, "go test -count=1 ./tools/attack/ >/dev/null && rm -rf tools")
	writeFileT(t, filepath.Join(gc, "trim.txt"), fmt.Sprintf("%d\n", time.Now().Unix()))
	s.pristineGC = filepath.Join(root, "pristine-gocache")
	os.Rename(gc, s.pristineGC)
	s.pristine = filepath.Join(root, "pristine-home")
	cpA(t, s.home, s.pristine)
	cpA(t, s.pristineGC, gc)
	s.gcPrint = fingerprint(gc)
	if os.Getenv("JOULE_TABLE_TRACE") != "" {
		counts := map[string]int{}
		filepath.WalkDir(s.pristine, func(p string, d fs.DirEntry, err error) error {
			rel, _ := filepath.Rel(s.pristine, p)
			first, rest, _ := strings.Cut(rel, "/")
			second, _, _ := strings.Cut(rest, "/")
			counts[first+"/"+second]++
			return nil
		})
		fmt.Fprintln(os.Stderr, "pristine", counts)
	}
	return s
}

// listen starts the slot's listeners: a loopback TCP and UDP port, a
// named unix stream and datagram socket outside every writable tree, an
// abstract one, and an HTTP server that asks for credentials.
func (s *tslot) listen(t testing.TB) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s.portTCP = ln.Addr().(*net.TCPAddr).Port
	go acceptCount(ln, &s.tcp)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	s.portUDP = pc.LocalAddr().(*net.UDPAddr).Port
	go readCount(pc, &s.udp)
	s.usock = filepath.Join(s.root, "sock", "stream.sock")
	us, err := net.Listen("unix", s.usock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { us.Close() })
	go acceptCount(us, &s.unix)
	s.dsock = filepath.Join(s.root, "sock", "dgram.sock")
	ds, err := net.ListenPacket("unixgram", s.dsock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	go readCount(ds, &s.unix)
	s.abstract = "joule-table-" + randHex(6)
	as, err := net.Listen("unix", "@"+s.abstract)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { as.Close() })
	go acceptCount(as, &s.abstr)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="table"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	s.httpURL = srv.URL
}

func acceptCount(ln net.Listener, n *atomic.Int32) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		n.Add(1)
		c.Close()
	}
}

func readCount(pc net.PacketConn, n *atomic.Int32) {
	buf := make([]byte, 2048)
	for {
		if _, _, err := pc.ReadFrom(buf); err != nil {
			return
		}
		n.Add(1)
	}
}

// cpA copies a tree as cp -a does: modes, times, links.
func cpA(t testing.TB, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s %s: %v\n%s", from, to, err, out)
	}
}

// fingerprint names every entry of a tree with its size, mode and change
// time: what anything that wrote into it would change.
func fingerprint(dir string) string {
	h := sha256.New()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) == nil {
			fmt.Fprintf(h, "%s %d %o %d.%d\n", p[len(dir):], st.Size, st.Mode, st.Ctim.Sec, st.Ctim.Nsec)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))
}

// forceRemoveAll removes a tree a case may have made hard to remove:
// read-only directories (the module cache's), immutable files.
func forceRemoveAll(p string) {
	if os.RemoveAll(p) == nil {
		return
	}
	filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(q, 0o755)
		}
		return nil
	})
	if os.RemoveAll(p) != nil && os.Geteuid() == 0 {
		exec.Command("chattr", "-R", "-ia", p).Run()
		os.RemoveAll(p)
	}
}

// killLeftovers ends the processes a case left behind: those of this slot
// (found by the JOULE_TABLE_SLOT their environment carries), by id.
func (s *tslot) killLeftovers() {
	want := []byte("JOULE_TABLE_SLOT=" + s.root + "\x00")
	for range 3 {
		found := false
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
			if err == nil && bytes.Contains(b, want) {
				syscall.Kill(pid, syscall.SIGKILL)
				found = true
			}
		}
		if !found {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// reset puts the slot back as the pristine copy: the home, the workspace,
// $JOULE_HOME, and the Go build cache when anything changed it. What it
// replaces is renamed out of the way and removed in the background.
func (s *tslot) reset() {
	t := s.t
	s.killLeftovers()
	gc := filepath.Join(s.home, ".cache", "go-build")
	keep := filepath.Join(s.root, "gocache-keep")
	kept := os.Rename(gc, keep) == nil
	trash := filepath.Join(s.root, "trash", randHex(8))
	os.MkdirAll(trash, 0o755)
	// The home is restored in place where it can be (restoreHome: only
	// what changed), else replaced by a copy of the pristine one.
	inPlace := s.restoreHome()
	ents, _ := os.ReadDir(s.root)
	for _, e := range ents {
		switch e.Name() {
		case "pristine-home", "pristine-gocache", "gocache-keep", "sock", "trash":
		case "home":
			if !inPlace {
				os.Rename(filepath.Join(s.root, e.Name()), filepath.Join(trash, e.Name()))
			}
		default:
			os.Rename(filepath.Join(s.root, e.Name()), filepath.Join(trash, e.Name()))
		}
	}
	s.trash.Add(1)
	go func() {
		defer s.trash.Done()
		forceRemoveAll(trash)
	}()
	if !inPlace {
		cpA(t, s.pristine, s.home)
		s.snap, s.snapAt = snapshotTree(s.home), time.Now()
	}
	os.MkdirAll(s.tmp, 0o755)
	// The build cache is restored only after a case that may have changed
	// what it holds (dirtiesGoCache): others only add entries, as the
	// person's own builds do, and copying it back costs more than the
	// rest of a case.
	if kept && (!s.dirtyGC || fingerprint(keep) == s.gcPrint) {
		if err := os.Rename(keep, gc); err != nil {
			t.Fatal(err)
		}
	} else {
		if kept {
			gcTrash := filepath.Join(s.root, "trash", randHex(8))
			os.Rename(keep, gcTrash)
			s.trash.Add(1)
			go func() {
				defer s.trash.Done()
				forceRemoveAll(gcTrash)
			}()
		}
		cpA(t, s.pristineGC, gc)
		s.gcPrint = fingerprint(gc)
	}
	s.dirtyGC = false
	s.tcp.Store(0)
	s.udp.Store(0)
	s.unix.Store(0)
	s.abstr.Store(0)
}

// entryState is what changes when anything changes an entry: its inode,
// change time (which no program sets), size and mode.
type entryState struct {
	ino         uint64
	ctime, size int64
	mode        uint32
}

// snapshotTree records every entry below dir but the Go build cache, by
// path relative to dir; nil if one cannot be read.
func snapshotTree(dir string) map[string]entryState {
	snap := map[string]entryState{}
	skip := filepath.Join(dir, ".cache", "go-build")
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == skip {
			return filepath.SkipDir
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		snap[rel] = entryState{st.Ino, st.Ctim.Nano(), st.Size, st.Mode}
		return nil
	})
	if err != nil {
		return nil
	}
	return snap
}

// restoreHome puts back, in place, what changed in the home since it was
// last restored: entries whose state differs from the snapshot then (or
// that were restored so recently that a coarse clock could hide a change)
// are replaced by the pristine ones, new entries removed, missing ones
// copied. It reports false where it cannot (nothing recorded, an entry it
// cannot read or remove), and the caller replaces the whole home.
func (s *tslot) restoreHome() bool {
	if s.snap == nil {
		return false
	}
	recent := s.snapAt.Add(-50 * time.Millisecond).UnixNano()
	seen := map[string]bool{}
	var redo []string // relative paths to copy from the pristine home
	ok := true
	skip := filepath.Join(s.home, ".cache", "go-build")
	err := filepath.WalkDir(s.home, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == skip {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(s.home, p)
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		prev, known := s.snap[rel]
		seen[rel] = true
		now := entryState{st.Ino, st.Ctim.Nano(), st.Size, st.Mode}
		switch {
		case rel == ".":
			if now.mode != prev.mode {
				return errors.New("the home's mode changed")
			}
		case !known || now.mode&syscall.S_IFMT != prev.mode&syscall.S_IFMT:
			if err := os.RemoveAll(p); err != nil {
				return err
			}
			if known {
				redo = append(redo, rel)
			}
			if d.IsDir() {
				return filepath.SkipDir
			}
		case d.IsDir():
			if now.mode != prev.mode {
				if err := os.Chmod(p, os.FileMode(prev.mode&0o7777)); err != nil {
					return err
				}
			}
		case now != prev || now.ctime >= recent:
			if err := os.Remove(p); err != nil {
				return err
			}
			redo = append(redo, rel)
		}
		return nil
	})
	if err != nil {
		return false
	}
	for rel := range s.snap {
		if !seen[rel] {
			redo = append(redo, rel)
		}
	}
	sort.Strings(redo)
	done := ""
	for _, rel := range redo {
		if done != "" && strings.HasPrefix(rel, done+"/") {
			continue // copied with its directory
		}
		if out, err := exec.Command("cp", "-a", filepath.Join(s.pristine, rel), filepath.Join(s.home, rel)).CombinedOutput(); err != nil {
			s.t.Logf("restore %s: %v %s", rel, err, out)
			ok = false
			break
		}
		done = rel
	}
	if !ok {
		return false
	}
	s.snap, s.snapAt = snapshotTree(s.home), time.Now()
	return s.snap != nil
}

// dirtiesGoCache reports a case that may change or remove what the Go
// build cache holds (its control, or what runs after it, is unconfined):
// the slot's cache is checked, and restored, after it.
func dirtiesGoCache(c tableCase) bool {
	if c.Class == "persist-cache" {
		return true
	}
	text := c.Setup + "\n" + c.Cmd + "\n" + c.After
	for _, s := range []string{"go-build", "GOCACHE", "go clean", ".cache", "chmod -R", "chattr"} {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

// prepare writes the case's vehicle and runs its setup, unconfined, and
// returns the line the agent's tool call carries.
func (s *tslot) prepare(c tableCase) (string, error) {
	if c.WS == "open" {
		for _, n := range rootProtected(s.ws) {
			p := filepath.Join(s.ws, n)
			if _, err := os.Lstat(p); err == nil {
				continue
			}
			if strings.HasSuffix(n, "/") {
				os.MkdirAll(p, 0o755)
			} else {
				os.WriteFile(p, []byte("{}\n"), 0o644)
			}
		}
	}
	// The setup first: it is the repository as the agent found it; the
	// vehicle is what the agent wrote there.
	if c.Setup != "" {
		r := s.run([]string{"bash", "-c", c.Setup}, nil, 60*time.Second, false)
		if r.code != 0 {
			return "", fmt.Errorf("setup exited %d:\n%s", r.code, r.out)
		}
	}
	line := c.Cmd
	if c.Via != "" {
		os.MkdirAll(filepath.Join(s.ws, "tools"), 0o755)
		os.WriteFile(filepath.Join(s.ws, "tools", "attack.sh"), []byte(c.Cmd+"\n"), 0o755)
		switch c.Via {
		case "make":
			os.WriteFile(filepath.Join(s.ws, "Makefile"), []byte("attack:\n\t@bash tools/attack.sh\n"), 0o644)
			line = "make -s attack"
		case "gotest":
			writeGoTestVehicle(s.ws, c.Cmd)
			line = "go test -count=1 ./tools/attack/"
		case "npm":
			os.WriteFile(filepath.Join(s.ws, "package.json"), []byte(`{"name":"ws","version":"1.0.0","private":true,"scripts":{"test":"bash tools/attack.sh"}}`+"\n"), 0o644)
			line = "npm test --silent"
		case "script":
			line = "bash tools/attack.sh"
		default:
			return "", fmt.Errorf("unknown via %q", c.Via)
		}
	}
	return line, nil
}

// writeGoTestVehicle writes tools/attack.sh and a Go test that runs it.
func writeGoTestVehicle(ws, script string) {
	os.MkdirAll(filepath.Join(ws, "tools", "attack"), 0o755)
	os.WriteFile(filepath.Join(ws, "tools", "attack.sh"), []byte(script+"\n"), 0o755)
	os.WriteFile(filepath.Join(ws, "tools", "attack", "attack_test.go"), []byte("package attack\n\nimport (\n\t\"os\"\n\t\"os/exec\"\n\t\"testing\"\n)\n\n"+
		"func TestAttack(t *testing.T) {\n\tcmd := exec.Command(\"bash\", \"tools/attack.sh\")\n\tcmd.Dir = \"../..\"\n\tcmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr\n\tcmd.Run()\n}\n"), 0o644)
}

type runResult struct {
	out      []byte
	code     int
	dur      time.Duration
	timedOut bool
	peak     int // the most tasks the command's process tree had at once (sampled)
}

// run runs argv in the workspace, stdin /dev/null, output to a file (so
// that a background process holding it does not keep the call open, as
// it does not keep a host's), killing its process group after d. Processes
// it leaves in the background live on until the next reset.
func (s *tslot) run(argv []string, extra []string, d time.Duration, sample bool) runResult {
	f, err := os.CreateTemp(s.root, "out-")
	if err != nil {
		s.t.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = s.ws, append(slices.Clip(s.env), extra...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return runResult{out: []byte(err.Error()), code: -1}
	}
	done := make(chan struct{})
	var peak atomic.Int64
	if sample {
		go func() {
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
					if n := int64(treeTasks(cmd.Process.Pid)); n > peak.Load() {
						peak.Store(n)
					}
				}
			}
		}()
	}
	timer := time.AfterFunc(d, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err = cmd.Wait()
	timedOut := !timer.Stop()
	close(done)
	r := runResult{code: cmd.ProcessState.ExitCode(), dur: time.Since(start), timedOut: timedOut, peak: int(peak.Load())}
	if timedOut {
		r.code = -1
	}
	_ = err
	r.out, _ = os.ReadFile(f.Name())
	return r
}

// treeTasks is the number of tasks (threads) of root and its
// descendants, from /proc. Only the command's own tree counts: the
// machine's total moved with whatever else ran beside the table (another
// slot, another test package's browser), which made a bounded bomb look
// unbounded on a busy machine.
func treeTasks(root int) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	type proc struct{ ppid, threads int }
	procs := make(map[int]proc, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // it ended while we looked
		}
		// The command name (field 2) may hold spaces and parentheses;
		// the fields after it start behind the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 18 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])     // field 4
		threads, _ := strconv.Atoi(f[17]) // field 20
		procs[pid] = proc{ppid, threads}
	}
	children := make(map[int][]int, len(procs))
	for pid, p := range procs {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	n := 0
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if p, ok := procs[pid]; ok {
			n += max(p.threads, 1)
		}
		queue = append(queue, children[pid]...)
	}
	return n
}

type hookAnswer struct {
	decision, code, reason, command string
}

var reasonCode = regexp.MustCompile(`joule (?:deny|ask) \(([^)]+)\)`)

// hook puts one tool call to joule hook claude-code --contain, in the
// session of grant.
func (s *tslot) hook(grant, tool string, input map[string]any) hookAnswer {
	payload, _ := json.Marshal(map[string]any{"session_id": grant, "hook_event_name": "PreToolUse", "tool_name": tool,
		"tool_input": input, "cwd": s.ws, "transcript_path": filepath.Join(s.root, "transcript.jsonl"), "permission_mode": "default"})
	r := joule(s.t, payload, s.env, "hook", "claude-code", "--contain")
	var a struct {
		HookSpecificOutput struct {
			PermissionDecision       string         `json:"permissionDecision"`
			PermissionDecisionReason string         `json:"permissionDecisionReason"`
			UpdatedInput             map[string]any `json:"updatedInput"`
		} `json:"hookSpecificOutput"`
	}
	if r.code != 0 || (strings.TrimSpace(r.stdout) != "" && json.Unmarshal([]byte(r.stdout), &a) != nil) {
		return hookAnswer{decision: "error", code: fmt.Sprintf("exit %d", r.code), reason: r.stdout + r.stderr}
	}
	h := a.HookSpecificOutput
	ans := hookAnswer{decision: h.PermissionDecision, reason: h.PermissionDecisionReason}
	if m := reasonCode.FindStringSubmatch(h.PermissionDecisionReason); m != nil {
		ans.code = m[1]
	}
	if cmd, ok := h.UpdatedInput["command"].(string); ok {
		ans.command = cmd
		if ans.decision == "" {
			ans.decision = "rewrite"
		}
	}
	if ans.decision == "" {
		ans.decision = "allow"
	}
	return ans
}

// path resolves a case's path: ~/ the home, $JOULE_HOME/, else the workspace.
func (s *tslot) path(p string) string {
	switch {
	case strings.HasPrefix(p, "~/"):
		return filepath.Join(s.home, p[2:])
	case p == "$JOULE_HOME":
		return s.jh
	case strings.HasPrefix(p, "$JOULE_HOME/"):
		return filepath.Join(s.jh, strings.TrimPrefix(p, "$JOULE_HOME/"))
	case strings.HasPrefix(p, "$TMPDIR/"):
		return filepath.Join(s.tmp, strings.TrimPrefix(p, "$TMPDIR/"))
	}
	return filepath.Join(s.ws, p)
}

// fileState is what an effect compares: the entry's type, mode, owner,
// times, extended attributes and inode flags, and its bytes (a link's
// target).
type fileState struct {
	exists              bool
	meta, mode, content string
}

func stateOf(p string) fileState {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return fileState{}
	}
	fs := fileState{exists: true}
	xattrs := make([]byte, 4096)
	n, _ := syscall.Listxattr(p, xattrs)
	if n < 0 {
		n = 0
	}
	flags := -1
	if st.Mode&syscall.S_IFMT == syscall.S_IFREG || st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		if fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0); err == nil {
			var v int32
			if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), 0x80086601, uintptr(unsafe.Pointer(&v))); e == 0 {
				flags = int(v)
			}
			syscall.Close(fd)
		}
	}
	fs.meta = fmt.Sprintf("mode %o uid %d gid %d mtime %d.%d xattr %q flags %x", st.Mode, st.Uid, st.Gid, st.Mtim.Sec, st.Mtim.Nsec, xattrs[:n], flags)
	fs.mode = fmt.Sprintf("mode %o uid %d gid %d", st.Mode, st.Uid, st.Gid)
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFLNK:
		l, _ := os.Readlink(p)
		fs.content = "link " + l
	case syscall.S_IFREG:
		b, _ := os.ReadFile(p)
		fs.content = "file " + string(b)
	case syscall.S_IFDIR:
		ents, _ := os.ReadDir(p)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		fs.content = "dir " + strings.Join(names, "/")
	default:
		fs.content = fmt.Sprintf("type %o", st.Mode&syscall.S_IFMT)
	}
	return fs
}

// effects parses a case's effect.
func effects(e string) []string {
	var out []string
	for _, f := range strings.Split(e, " | ") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// snapshot records the state the case's effects compare against.
func (s *tslot) snapshot(c tableCase) map[string]fileState {
	snap := map[string]fileState{}
	for _, e := range effects(c.Effect) {
		kind, arg, _ := strings.Cut(e, ":")
		switch kind {
		case "content", "meta", "mode", "exists", "gone":
			snap[arg] = stateOf(s.path(arg))
		}
	}
	return snap
}

// happened reports which of the case's effects took place, given the
// snapshot from before the line, every output, and the line's run.
func (s *tslot) happened(c tableCase, snap map[string]fileState, outs [][]byte, r runResult, since time.Time) []string {
	var got []string
	for _, e := range effects(c.Effect) {
		kind, arg, _ := strings.Cut(e, ":")
		ok := false
		switch kind {
		case "marker":
			_, err := os.Lstat(s.mark)
			ok = err == nil
		case "secret":
			ok = s.secretSeen(outs, since)
		case "content":
			before, now := snap[arg], stateOf(s.path(arg))
			ok = before.exists != now.exists || before.content != now.content
		case "meta":
			before, now := snap[arg], stateOf(s.path(arg))
			ok = before.exists && now.exists && before.meta != now.meta
		case "mode":
			before, now := snap[arg], stateOf(s.path(arg))
			ok = before.exists && now.exists && before.mode != now.mode
		case "exists":
			ok = !snap[arg].exists && stateOf(s.path(arg)).exists
		case "gone":
			ok = snap[arg].exists && !stateOf(s.path(arg)).exists
		case "hidden":
			ok = s.hiddenChange(arg)
		case "output":
			ok = slices.ContainsFunc(outs, func(b []byte) bool { return bytes.Contains(b, []byte(arg)) })
		case "procs":
			n, _ := strconv.Atoi(arg)
			if arg == "bound" {
				n = procsBound()
			}
			ok = r.peak >= n
		case "slow":
			ok = r.timedOut
		case "tcp":
			ok = waitCount(&s.tcp)
		case "udp":
			ok = waitCount(&s.udp)
		case "unix":
			ok = waitCount(&s.unix) || waitCount(&s.abstr)
		default:
			s.t.Errorf("%s: unknown effect %q", c.where, e)
		}
		if ok {
			got = append(got, e)
		}
	}
	return got
}

func waitCount(n *atomic.Int32) bool {
	deadline := time.Now().Add(500 * time.Millisecond)
	for n.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return n.Load() > 0
}

// secretSeen: the steward key or the home's secret in any output, or in a
// file below the slot's root written since the case started (but the
// secrets' own files).
func (s *tslot) secretSeen(outs [][]byte, since time.Time) bool {
	secrets := [][]byte{[]byte(s.stewardSecret), []byte(s.tpl.secret)}
	for _, o := range outs {
		for _, sec := range secrets {
			if bytes.Contains(o, sec) {
				return true
			}
		}
	}
	own := map[string]bool{filepath.Join(s.jh, "steward.key"): true, filepath.Join(s.home, ".ssh", "id_rsa"): true,
		filepath.Join(s.home, ".netrc"): true, filepath.Join(s.home, ".aws", "credentials"): true}
	found := false
	filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || found {
			return nil
		}
		if d.IsDir() && (p == s.pristine || p == s.pristineGC || p == filepath.Join(s.root, "trash")) {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() || own[p] {
			return nil
		}
		if fi, err := d.Info(); err != nil || fi.ModTime().Before(since) {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil {
			for _, sec := range secrets {
				if bytes.Contains(b, sec) {
					found = true
				}
			}
		}
		return nil
	})
	return found
}

// hiddenChange: the workspace file p differs from HEAD (or is new), and the
// person's git status does not show it (nor a directory or submodule that
// holds it).
func (s *tslot) hiddenChange(p string) bool {
	now, err := os.ReadFile(filepath.Join(s.ws, p))
	if err != nil {
		return false
	}
	head := s.run([]string{"git", "--no-replace-objects", "show", "HEAD:" + p}, nil, 20*time.Second, false)
	if head.code == 0 && bytes.Equal(head.out, now) {
		return false
	}
	status := s.run([]string{"git", "status", "--porcelain"}, nil, 20*time.Second, false)
	for _, l := range strings.Split(string(status.out), "\n") {
		if len(l) < 4 {
			continue
		}
		// A directory, or a submodule whose content changed, covers p.
		shown := strings.Trim(l[3:], `"`)
		if shown == p || strings.HasPrefix(p, strings.TrimSuffix(shown, "/")+"/") {
			return false
		}
	}
	return true
}

// outcome of one run of a case.
type outcome struct {
	ran      bool     // the line ran (a rewrite, or unconfined)
	decision string   // the hook's: rewrite, deny, ask, allow; "" unconfined
	code     string   // the deny or ask code
	hostCode string   // the host tool's deny code, when refused
	effects  []string // the effects that happened
	run      runResult
	after    runResult
	detail   string
}

// play runs case c once: unconfined (contained false: the control), or
// through the hook. vehicleLine is prepare's.
func (s *tslot) play(c tableCase, contained bool) (o outcome, err error) {
	t0 := time.Now()
	cpu := func() time.Duration {
		var ru, self syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
		syscall.Getrusage(syscall.RUSAGE_SELF, &self)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano() + self.Utime.Nano() + self.Stime.Nano())
	}
	cpu0 := cpu()
	trace := func(what string) {
		if os.Getenv("JOULE_TABLE_TRACE") != "" {
			fmt.Fprintf(os.Stderr, "%s %v %s %s cpu %s\n", c.Name, contained, what, time.Since(t0).Round(time.Millisecond), (cpu() - cpu0).Round(time.Millisecond))
		}
	}
	defer trace("end")
	trace("start")
	s.reset()
	s.dirtyGC = dirtiesGoCache(c)
	trace("reset")
	line, err := s.prepare(c)
	trace("prepare")
	if err != nil {
		return o, err
	}
	since := time.Now().Add(-time.Second)
	timeout := 90 * time.Second
	if c.Timeout > 0 {
		timeout = time.Duration(c.Timeout * float64(time.Second))
	}
	sample := strings.Contains(c.Effect, "procs:")
	argv := []string{"/bin/bash", "-c", line}
	var extra []string
	if contained {
		a := s.hook(c.Grant, "Bash", map[string]any{"command": line, "description": c.Name})
		trace("hook")
		o.decision, o.code = a.decision, a.code
		switch a.decision {
		case "rewrite":
			argv = []string{"/bin/bash", "-c", a.command}
		case "allow":
			// Allowed as it is (no containment for it): the host runs the line.
		default:
			o.detail = a.reason
			return o, nil
		}
		if c.Construction == "landlock" {
			extra = append(extra, sandbox.LandlockOnlyEnv+"=1")
		}
		if c.Unbounded && !kernelBoundsProcs() {
			o.detail = "allowed, and not run: the kernel does not bound the processes of uid 0"
			o.effects = []string{"procs (not run)"}
			return o, nil
		}
	}
	// The state the effects compare against, taken after the hook (which
	// writes to $JOULE_HOME itself) and just before the line runs.
	snap := s.snapshot(c)
	o.ran = true
	o.run = s.run(argv, extra, timeout, sample)
	trace("run")
	outs := [][]byte{o.run.out}
	var hostTool, hostPath string
	if c.Host != "" {
		hostTool, hostPath, _ = strings.Cut(c.Host, " ")
		p := s.path(hostPath)
		allowed := true
		if contained {
			in := map[string]any{"file_path": p}
			tool := "Read"
			if hostTool == "write" {
				tool, in["content"] = "Write", "HOSTWRITE\n"
			}
			if a := s.hook(c.Grant, tool, in); a.decision != "allow" && a.decision != "rewrite" {
				allowed, o.hostCode = false, a.decision+" "+a.code
			}
		}
		// A process racing the host's tool may wait for this, as a lucky
		// attacker's timing would fall.
		os.WriteFile(filepath.Join(s.tmp, "host-decided"), nil, 0o644)
		time.Sleep(time.Duration(c.Wait * float64(time.Second)))
		if allowed {
			switch hostTool {
			case "write":
				if err := os.WriteFile(p, []byte("HOSTWRITE\n"), 0o644); err != nil {
					o.detail += "host write: " + err.Error() + "\n"
				}
			case "read":
				b, err := os.ReadFile(p)
				if err != nil {
					o.detail += "host read: " + err.Error() + "\n"
				}
				outs = append(outs, b)
			default:
				return o, fmt.Errorf("unknown host tool %q", c.Host)
			}
		}
	} else if c.Wait > 0 {
		time.Sleep(time.Duration(c.Wait * float64(time.Second)))
	}
	if c.After != "" {
		after := c.After
		if named, ok := afterSteps[after]; ok {
			after = named
		}
		o.after = s.run([]string{"/bin/bash", "-c", after}, nil, 120*time.Second, false)
		outs = append(outs, o.after.out)
	}
	trace("after")
	o.effects = s.happened(c, snap, outs, o.run, since)
	trace("effects")
	return o, nil
}

// pendingHere is a case's pending mark where it applies: a mark that
// starts "unbounded-procs: " holds only where the kernel does not bound a
// contained command's processes (kernelBoundsProcs).
func pendingHere(p string) string {
	if rest, ok := strings.CutPrefix(p, "unbounded-procs: "); ok {
		if kernelBoundsProcs() {
			return ""
		}
		return rest
	}
	return p
}

// kernelBoundsProcs: RLIMIT_NPROC, which the sandbox sets, is not applied
// to uid 0; the PID namespace's pid_max, which it sets from Linux 6.14, is,
// and so is the pids.max of the command's own control group, where one
// can be made.
func kernelBoundsProcs() bool {
	if os.Geteuid() != 0 || sandbox.CgroupAvailable() {
		return true
	}
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return false
	}
	var rel []byte
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		rel = append(rel, byte(c))
	}
	var major, minor int
	fmt.Sscanf(string(rel), "%d.%d", &major, &minor)
	return major > 6 || major == 6 && minor >= 14
}

// procsBound is what the "procs:bound" effect counts from: more tasks than
// the sandbox lets a command have (its Procs, and the PID namespace's
// reserved numbers), so that only an unbounded bomb reaches it.
func procsBound() int { return int(sandbox.DefaultLimits().Procs) + 300 + 64 }

// needsMet reports the first need of c this machine lacks.
func needsMet(c tableCase) string {
	for _, n := range c.Needs {
		switch n {
		case "root":
			if os.Geteuid() != 0 {
				return n
			}
		case "nonroot":
			if os.Geteuid() == 0 {
				return n
			}
		case "userns":
			if !sandbox.NamespacesAvailable() {
				return n
			}
		case "corefile":
			// The kernel writes core files into the working directory
			// (a core_pattern without a pipe or a directory) and the
			// hard limit lets a process ask for them.
			b, _ := os.ReadFile("/proc/sys/kernel/core_pattern")
			p := strings.TrimSpace(string(b))
			var lim syscall.Rlimit
			syscall.Getrlimit(4 /* RLIMIT_CORE */, &lim)
			if p == "" || strings.ContainsAny(p[:1], "|/") || strings.Contains(p, "/") || lim.Max == 0 {
				return n
			}
		default:
			if _, err := exec.LookPath(n); err != nil {
				return n
			}
		}
	}
	return ""
}

// tableRecord is one case's result, for the summary and JOULE_TABLE_REPORT.
type tableRecord struct {
	Name, Class, Result, Code, Detail string
	Effects                           []string
	Seconds                           float64
}

// runTable runs cases over slots, each case a subtest (go test -run
// 'TestHookContainAttacks/NAME' runs one), the serial ones (resources)
// alone at the end, and returns the records in table order. Cases run
// in parallel whatever -parallel says: the slots are independent homes.
func runTable(t *testing.T, cases []tableCase, slots int, one func(*testing.T, *tslot, tableCase) tableRecord) []tableRecord {
	began := time.Now()
	cases = runFilter(cases)
	if len(cases) == 0 {
		t.Skip("no case matches -run")
	}
	if n, err := strconv.Atoi(os.Getenv("JOULE_TABLE_SLOTS")); err == nil && n > 0 {
		slots = n
	}
	slots = min(slots, len(cases))
	tpl := newTableTemplate(t)
	made := time.Now()
	var ss []*tslot
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newTSlot(t, tpl)
			mu.Lock()
			ss = append(ss, s)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() || len(ss) < slots {
		t.FailNow()
	}
	t.Logf("template %s, %d slots %s", made.Sub(began).Round(time.Millisecond), slots, time.Since(made).Round(time.Millisecond))
	recs := make([]tableRecord, len(cases))
	runOne := func(s *tslot, i int) {
		t.Run(cases[i].Name, func(t *testing.T) {
			s.t = t
			recs[i] = one(t, s, cases[i])
		})
	}
	work := make(chan int)
	for _, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				runOne(s, i)
			}
		}()
	}
	var serial []int
	for i, c := range cases {
		if c.Class == "resources" {
			serial = append(serial, i)
			continue
		}
		work <- i
	}
	close(work)
	wg.Wait()
	for _, i := range serial {
		runOne(ss[0], i)
	}
	for _, s := range ss {
		s.t = t
	}
	if p := os.Getenv("JOULE_TABLE_REPORT"); p != "" {
		var b bytes.Buffer
		for _, r := range recs {
			json.NewEncoder(&b).Encode(r)
		}
		os.WriteFile(p, b.Bytes(), 0o644)
	}
	return recs
}

// runTableFile runs the table at path over slots slots: at least least
// cases (a table that shrank is an error), short of them under -short.
// judge fills each case's record; a case whose needs the machine lacks is
// skipped here, and every record is timed.
func runTableFile(t *testing.T, path string, least, short, slots int, judge func(*testing.T, *tslot, tableCase, *tableRecord)) ([]tableRecord, time.Duration) {
	cases := loadTable(t, path)
	if len(cases) < least && !testing.Short() {
		t.Fatalf("%s has %d cases; it needs at least %d", path, len(cases), least)
	}
	if testing.Short() {
		cases = shortSubset(cases, short)
	}
	start := time.Now()
	recs := runTable(t, cases, slots, func(t *testing.T, s *tslot, c tableCase) tableRecord {
		began := time.Now()
		rec := tableRecord{Name: c.Name, Class: c.Class}
		if need := needsMet(c); need != "" {
			rec.Result, rec.Detail = "skipped", "needs "+need
		} else {
			judge(t, s, c, &rec)
		}
		rec.Seconds = time.Since(began).Seconds()
		return rec
	})
	return recs, time.Since(start)
}

// TestHookContainAttacks runs testdata/hook-attacks.jsonl (see tableCase).
func TestHookContainAttacks(t *testing.T) {
	needLandlock(t)
	t.Parallel()
	recs, took := runTableFile(t, "testdata/hook-attacks.jsonl", 300, 40, 4, func(t *testing.T, s *tslot, c tableCase, rec *tableRecord) {
		pending := pendingHere(c.Pending)
		control := !c.Unbounded
		if control {
			o, err := s.play(c, false)
			if err != nil {
				t.Errorf("%s: %s: %v", c.where, c.Name, err)
				rec.Result = "error"
				return
			}
			control = len(o.effects) > 0
			if !control {
				rec.Result, rec.Detail = "noattack", fmt.Sprintf("the control had no effect (exit %d): %s%s", o.run.code, tail(o.run.out), tail(o.after.out))
				if c.NoAttack == "" {
					t.Errorf("%s: %s: the control did not have its effect (%s) unconfined: not an attack in this sandbox; fix it or mark it noattack with the reason\n  run (exit %d): %s\n  after (exit %d): %s",
						c.where, c.Name, c.Effect, o.run.code, tail(o.run.out), o.after.code, tail(o.after.out))
				}
				return
			}
			if c.NoAttack != "" {
				t.Errorf("%s: %s: marked noattack (%s), but the control has its effect now: remove the mark", c.where, c.Name, c.NoAttack)
			}
		}
		o, err := s.play(c, true)
		if err != nil {
			t.Errorf("%s: %s: %v", c.where, c.Name, err)
			rec.Result = "error"
			return
		}
		rec.Effects = o.effects
		switch {
		case len(o.effects) > 0:
			rec.Result, rec.Code = "through", o.decision
			rec.Detail = fmt.Sprintf("%s: %s", o.decision, tail(o.run.out))
			if pending == "" {
				t.Errorf("%s: %s (%s) got through %s containment: %v\n  decision %s; line exit %d: %s\n  after: %s",
					c.where, c.Name, c.Class, c.Grant, o.effects, o.decision, o.run.code, tail(o.run.out), tail(o.after.out))
			}
		case !o.ran:
			rec.Result, rec.Code, rec.Detail = "denied", o.decision+" "+o.code, o.detail
		case o.hostCode != "":
			rec.Result, rec.Code = "host-denied", o.hostCode
		default:
			rec.Result, rec.Code = "kernel", o.decision
		}
		if rec.Result != "through" && pending != "" {
			t.Errorf("%s: %s is marked pending (%s) but is stopped now (%s %s): remove the mark", c.where, c.Name, pending, rec.Result, rec.Code)
		}
	})
	summarize(t, recs, took, false)
}

// TestHookContainOrdinary runs testdata/hook-ordinary.jsonl (see tableCase).
func TestHookContainOrdinary(t *testing.T) {
	needLandlock(t)
	t.Parallel()
	recs, took := runTableFile(t, "testdata/hook-ordinary.jsonl", 100, 25, 3, func(t *testing.T, s *tslot, c tableCase, rec *tableRecord) {
		works := func(o outcome) bool {
			return o.ran && o.run.code == 0 && (c.Effect == "" || len(o.effects) == len(effects(c.Effect))) && (c.After == "" || o.after.code == 0)
		}
		// Contained first: a case that works there works. One that does
		// not is run unconfined too, to tell a broken case from a refusal
		// or a breakage by containment.
		o, err := s.play(c, true)
		if err != nil {
			t.Errorf("%s: %s: %v", c.where, c.Name, err)
			rec.Result = "error"
			return
		}
		if !works(o) {
			u, err := s.play(c, false)
			if err != nil {
				t.Errorf("%s: %s: %v", c.where, c.Name, err)
				rec.Result = "error"
				return
			}
			if !works(u) {
				t.Errorf("%s: %s does not work unconfined: exit %d, effects %v of %q\n%s\nafter (exit %d): %s", c.where, c.Name, u.run.code, u.effects, c.Effect, tail(u.run.out), u.after.code, tail(u.after.out))
				rec.Result = "error"
				return
			}
		}
		rec.Effects = o.effects
		switch {
		case works(o):
			rec.Result = "works"
		case !o.ran:
			rec.Result, rec.Code, rec.Detail = "refused", o.decision+" "+o.code, o.detail
		default:
			rec.Result, rec.Code = "broken", fmt.Sprintf("exit %d", o.run.code)
			rec.Detail = fmt.Sprintf("effects %v of %q; %s; after exit %d: %s", o.effects, c.Effect, tail(o.run.out), o.after.code, tail(o.after.out))
		}
		switch {
		case rec.Result == "works" && c.Pending != "":
			t.Errorf("%s: %s is marked pending (%s) but works now: remove the mark", c.where, c.Name, c.Pending)
		case rec.Result != "works" && c.Pending == "":
			t.Errorf("%s: %s does not work inside containment: %s %s %s", c.where, c.Name, rec.Result, rec.Code, rec.Detail)
		}
	})
	summarize(t, recs, took, true)
}

// runFilter keeps the cases the second element of -run matches, so that a
// run of a few cases makes only the slots it needs.
func runFilter(cases []tableCase) []tableCase {
	f := flag.Lookup("test.run")
	if f == nil {
		return cases
	}
	_, sub, ok := strings.Cut(f.Value.String(), "/")
	if !ok {
		return cases
	}
	sub, _, _ = strings.Cut(sub, "/")
	re, err := regexp.Compile(sub)
	if err != nil {
		return cases
	}
	var out []tableCase
	for _, c := range cases {
		if re.MatchString(c.Name) {
			out = append(out, c)
		}
	}
	return out
}

// tail is the end of an output, for messages.
func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 600 {
		s = "…" + s[len(s)-600:]
	}
	return s
}

// summarize logs the counts per class and result, and the cases by result.
func summarize(t *testing.T, recs []tableRecord, took time.Duration, ordinary bool) {
	counts := map[string]map[string]int{}
	byResult := map[string][]string{}
	var classes []string
	var total float64
	for _, r := range recs {
		if counts[r.Class] == nil {
			counts[r.Class] = map[string]int{}
			classes = append(classes, r.Class)
		}
		counts[r.Class][r.Result]++
		label := r.Name
		if r.Code != "" {
			label += " (" + strings.TrimSpace(r.Code) + ")"
		}
		byResult[r.Result] = append(byResult[r.Result], label)
		total += r.Seconds
	}
	sort.Strings(classes)
	results := []string{"denied", "host-denied", "kernel", "through", "noattack", "skipped", "error"}
	if ordinary {
		results = []string{"works", "refused", "broken", "skipped", "error"}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d cases in %s (%.0f case-seconds over the slots)\n", len(recs), took.Round(time.Second), total)
	fmt.Fprintf(&b, "%-16s", "class")
	for _, r := range results {
		fmt.Fprintf(&b, " %11s", r)
	}
	b.WriteString("\n")
	for _, c := range classes {
		fmt.Fprintf(&b, "%-16s", c)
		for _, r := range results {
			fmt.Fprintf(&b, " %11d", counts[c][r])
		}
		b.WriteString("\n")
	}
	for _, r := range results {
		if len(byResult[r]) > 0 && !(ordinary && r == "works") {
			fmt.Fprintf(&b, "%s: %s\n", r, strings.Join(byResult[r], ", "))
		}
	}
	t.Log(b.String())
}

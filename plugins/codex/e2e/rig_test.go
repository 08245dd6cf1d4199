package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/joulehook/joule/plugins/codex"
)

// rig is one user's machine: a $JOULE_HOME with a grant for ws, a
// $CODEX_HOME whose config.toml points Codex at the fake, and a HOME.
type rig struct {
	t                            *testing.T
	codex                        string
	fake                         *fakeResponses
	dir, ws, jhome, chome, uhome string
}

type result struct {
	code           int
	stdout, stderr string
}

func newRig(t *testing.T, fake *fakeResponses) *rig {
	t.Helper()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	r := &rig{t: t, codex: codexBin(t), fake: fake, dir: dir, ws: filepath.Join(dir, "ws"),
		jhome: filepath.Join(dir, "jhome"), chome: filepath.Join(dir, "codexhome"), uhome: filepath.Join(dir, "home")}
	for _, d := range []string{r.ws, r.chome, r.uhome} {
		os.MkdirAll(d, 0o755)
	}
	if res := r.joule("init", "--steward", "test.example", "--workspace", r.ws); res.code != 0 {
		t.Fatalf("joule init: %+v", res)
	}
	r.writeUserConfig("")
	return r
}

// providerConfig is the part of $CODEX_HOME/config.toml that makes Codex
// talk to the fake: a provider of its own with the Responses wire API.
func (r *rig) providerConfig() string {
	return `model = "gpt-5.5"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.fake]
name = "fake"
base_url = "` + r.fake.url + `"
wire_api = "responses"
env_key = "FAKE_OPENAI_KEY"
request_max_retries = 0
stream_max_retries = 0

# Offline, the curated-plugin sync (git, then GitHub, then an archive)
# holds every run's exit for seconds; joule is not a plugin here.
[features]
plugins = false
remote_plugin = false
daemon_auto_start = false
`
}

// writeUserConfig writes $CODEX_HOME/config.toml: the provider, then extra.
func (r *rig) writeUserConfig(extra string) {
	r.t.Helper()
	if err := os.WriteFile(filepath.Join(r.chome, "config.toml"), []byte(r.providerConfig()+extra), 0o600); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) env() []string {
	return []string{"HOME=" + r.uhome, "JOULE_HOME=" + r.jhome, "CODEX_HOME=" + r.chome,
		"PATH=" + binDir + ":/usr/local/bin:/usr/bin:/bin", "FAKE_OPENAI_KEY=sk-test-dummy", "JOULE_GATE_IDLE=2m",
		"RUST_LOG=error", "NO_COLOR=1", "TMPDIR=" + filepath.Join(r.dir, "tmp")}
}

// run runs name with args in the rig's environment, in a process group
// of its own that is killed when it ends or times out.
func (r *rig) run(timeout time.Duration, stdin string, name string, args ...string) result {
	r.t.Helper()
	os.MkdirAll(filepath.Join(r.dir, "tmp"), 0o755)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = r.ws
	cmd.Env = r.env()
	cmd.Stdin = strings.NewReader(stdin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	res := result{stdout: out.String(), stderr: errb.String()}
	if err != nil {
		res.code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			res.code = ee.ExitCode()
		}
		if ctx.Err() != nil {
			res.stderr += "\n(timed out after " + timeout.String() + ")"
		}
	}
	return res
}

func (r *rig) joule(args ...string) result {
	r.t.Helper()
	return r.run(time.Minute, "", filepath.Join(binDir, "joule"), args...)
}

// exec runs `codex exec` headless in ws with the fake's script.
func (r *rig) exec(prompt string, calls ...call) result {
	r.t.Helper()
	r.fake.play(calls...)
	return r.run(3*time.Minute, "", r.codex, "exec", "--skip-git-repo-check", "--json", prompt)
}

// stopGate stops the resident gate the hooks started, so nothing writes
// into the temp dir after the test.
func (r *rig) stopGate() {
	r.joule("gate", "stop")
}

// hookEntry is one hook as Codex's app-server reports it (hooks/list).
type hookEntry struct {
	Key         string `json:"key"`
	EventName   string `json:"eventName"`
	Command     string `json:"command"`
	CurrentHash string `json:"currentHash"`
	TrustStatus string `json:"trustStatus"`
	Enabled     bool   `json:"enabled"`
}

// hooksList asks the real CLI which hooks it sees for ws and whether it
// trusts them: `codex app-server`'s JSON-RPC hooks/list, what its /hooks
// screen shows.
func (r *rig) hooksList() ([]hookEntry, string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.codex, "app-server")
	cmd.Dir, cmd.Env = r.ws, r.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	in, _ := cmd.StdinPipe()
	outp, _ := cmd.StdoutPipe()
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	defer func() {
		in.Close()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}()
	wsJSON, _ := json.Marshal(r.ws)
	io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"joule-e2e","version":"1"}}}`+"\n")
	io.WriteString(in, `{"jsonrpc":"2.0","method":"initialized"}`+"\n")
	io.WriteString(in, `{"jsonrpc":"2.0","id":2,"method":"hooks/list","params":{"cwds":[`+string(wsJSON)+`]}}`+"\n")
	sc := bufio.NewScanner(outp)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var msg struct {
			ID     int `json:"id"`
			Result struct {
				Data []struct {
					Hooks    []hookEntry `json:"hooks"`
					Warnings []string    `json:"warnings"`
				} `json:"data"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.ID != 2 {
			continue
		}
		if msg.Error != nil {
			r.t.Fatalf("hooks/list: %s", msg.Error)
		}
		var hooks []hookEntry
		for _, d := range msg.Result.Data {
			hooks = append(hooks, d.Hooks...)
		}
		return hooks, sc.Text()
	}
	r.t.Fatalf("codex app-server gave no hooks/list answer; stderr:\n%s", errb.String())
	return nil, ""
}

// trustConfig is the [projects] and [hooks.state] tables that trust ws
// and every command hook in ws/.codex/hooks.json, as Codex's trust
// dialog and /hooks screen record them; project and hooks pick which.
func (r *rig) trustConfig(project, hooks bool) string {
	r.t.Helper()
	var b strings.Builder
	if project {
		fmt.Fprintf(&b, "\n[projects.%q]\ntrust_level = \"trusted\"\n", r.ws)
	}
	if !hooks {
		return b.String()
	}
	path := filepath.Join(r.ws, ".codex", "hooks.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		r.t.Fatal(err)
	}
	var doc struct {
		Hooks map[string][]struct {
			Matcher string           `json:"matcher"`
			Hooks   []map[string]any `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		r.t.Fatal(err)
	}
	for event, groups := range doc.Hooks {
		for gi, g := range groups {
			for hi, h := range g.Hooks {
				sum, err := codex.TrustHash(event, g.Matcher, h)
				if err != nil {
					r.t.Fatal(err)
				}
				fmt.Fprintf(&b, "\n[hooks.state.%q]\ntrusted_hash = %q\n", codex.HookKey(path, event, gi, hi), sum)
			}
		}
	}
	return b.String()
}

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/joulehook/joule/internal/testdeps"
)

// opencodeRemote is the remote command line and environment for the real
// OpenCode (`opencode acp`, the CLI pinned for plugins/opencode/e2e),
// offline: Anthropic's API through its own provider, with an API key of no
// worth. joule acp points that provider at joule proxy in the OpenCode
// configuration it writes in the agent's private home (l4.Containment);
// the model is the person's choice, in OPENCODE_CONFIG_CONTENT.
func opencodeRemote(t testing.TB, h *home) ([]string, []string) {
	t.Helper()
	root := testdeps.NodeModules("../../../plugins/opencode/e2e/testdata")
	bin := filepath.Join(root, "opencode-linux-x64", "bin", "opencode")
	if out, err := exec.Command(bin, "--version").Output(); err != nil || strings.TrimSpace(string(out)) != "1.18.33" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the pinned OpenCode CLI (opencode-ai 1.18.33) is not at %s (%v %q): run .ci/setup.d/10-hosts.sh", bin, err, out)
		}
		t.Skipf("the pinned OpenCode CLI is not installed: run .ci/setup.d/10-hosts.sh")
	}
	// A project configured for OpenCode: each name OpenCode reads at the
	// workspace root exists (TestOpenCodeACPUnconfigured removes them).
	os.WriteFile(filepath.Join(h.ws, "opencode.json"), []byte(`{"$schema": "https://opencode.ai/config.json"}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(h.ws, "opencode.jsonc"), []byte("{}\n"), 0o644)
	os.MkdirAll(filepath.Join(h.ws, ".opencode"), 0o755)
	return []string{bin, "acp", "--print-logs", "--log-level", "WARN"}, []string{"ANTHROPIC_API_KEY=sk-ant-test-dummy-key-0000000000",
		`OPENCODE_CONFIG_CONTENT={"model": "anthropic/claude-sonnet-4-5", "small_model": "anthropic/claude-sonnet-4-5"}`,
		"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS=1", "OPENCODE_DISABLE_SHARE=1"}
}

// TestOpenCodeACP: the real OpenCode through `opencode acp` as joule acp's
// L4, its whole process tree contained by joule-exec with the session's
// grant, in its default permissions and in its most permissive ones
// (OPENCODE_PERMISSION allowing everything: it asks about nothing, not even a path
// outside the workspace). Allowed, its own write and bash tools land on the
// disk and are one signed op, its model calls metered through joule proxy;
// denied, nothing touches the disk and its tool reports the failure to the
// model in the turn.
func TestOpenCodeACP(t *testing.T) {
	// One OpenCode session at a time: two at once on a loaded 2-core
	// machine took longer than the remote timeout to answer session/new.
	for _, mode := range []string{"default", "allow"} {
		t.Run(mode, func(t *testing.T) {
			t.Run("allowed", func(t *testing.T) {
				h, remote, env, api, proxyURL := opencodeHome(t, mode)
				h.run(t, "grant", "issue", "--allow", "Read", "--allow", "Write", "--allow", "Bash(echo:*)", "--tiers", "l0,l1,l4", "--budget", "1MJ", "--workspace", h.ws, "--use")
				s := h.acp(t, remote, proxyURL, env...)
				stop, said := s.prompt(t, "WRITE AND RUN: make out.txt and record the run")
				t.Logf("the editor saw:\n%s\ntool results: %v\nrequests: %v", said, api.results, api.requests)
				if stop != acp.StopReasonEndTurn {
					t.Fatalf("stop %s", stop)
				}
				if b, err := os.ReadFile(filepath.Join(h.ws, "out.txt")); err != nil || string(b) != "hello from claude\n" {
					t.Errorf("out.txt: %q %v; tool results %v", b, err, api.results)
				}
				if b, err := os.ReadFile(filepath.Join(h.ws, "ran.txt")); err != nil || string(b) != "ran\n" {
					t.Errorf("ran.txt: %q %v; tool results %v", b, err, api.results)
				}
				if strings.Contains(said, "undid") {
					t.Errorf("joule undid something of an allowed turn: %s", said)
				}
				checkSealed(t, h, s, api, []string{"out.txt", "ran.txt"})
				s.close(t)
				h.noneLeft(t, "after the session")
			})
			t.Run("denied", func(t *testing.T) {
				h, remote, env, api, proxyURL := opencodeHome(t, mode)
				h.run(t, "grant", "issue", "--allow", "Read", "--deny", "Write", "--deny", "Bash(echo:*)", "--tiers", "l0,l1,l4", "--budget", "1MJ", "--workspace", h.ws, "--use")
				s := h.acp(t, remote, proxyURL, env...)
				prompts := []string{"WRITE AND RUN: make out.txt", "RUN ONLY: record the run"}
				if mode == "allow" {
					// In its default permissions OpenCode asks before it
					// writes outside the workspace (joule refuses); allowed
					// everything, only the kernel stops it.
					prompts = append(prompts, "OUTSIDE: write next to the workspace")
				}
				for _, p := range prompts {
					checkDeniedTurn(t, s, api, p, true, failed)
				}
				checkNothingWritten(t, h)
				if len(s.ed.asked) != 0 {
					t.Errorf("the editor was asked %v: the grant decides", s.ed.asked)
				}
				checkMetered(t, h, s, api)
				s.close(t)
				h.noneLeft(t, "after the session")
			})
		})
	}
}

// opencodeHome is a fresh home, workspace, fake Anthropic endpoint and joule
// proxy for one `opencode acp` session with OpenCode's permissions mode.
func opencodeHome(t *testing.T, mode string) (*home, []string, []string, *fakeAnthropic, string) {
	h := newHome(t)
	remote, env := opencodeRemote(t, h)
	if mode == "allow" {
		env = append(env, `OPENCODE_PERMISSION={"*": "allow", "edit": "allow", "bash": "allow", "external_directory": "allow"}`)
	}
	api := &fakeAnthropic{ws: h.ws}
	return h, remote, env, api, h.proxy(t, "--anthropic", serve(t, api))
}

// TestOpenCodeACPUnconfigured: in a workspace with no OpenCode project
// configuration (none of opencode.json, opencode.jsonc, .opencode/), the
// contained OpenCode finishes a turn: the sandbox's stand-ins for those
// absent protected names refuse to be opened (EACCES), which OpenCode's
// configuration reader takes for an absent file. Its own attempts to make
// each of them, by its write tool and by a command, fail in the turn, and
// after the session none of the names is there: the stand-ins are gone,
// and the real OpenCode, unconfined, run in the workspace, loads no
// project configuration.
func TestOpenCodeACPUnconfigured(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	remote, env := opencodeRemote(t, h)
	names := []string{"opencode.json", "opencode.jsonc", ".opencode"}
	for _, f := range names {
		os.RemoveAll(filepath.Join(h.ws, f))
	}
	api := &fakeAnthropic{ws: h.ws}
	proxyURL := h.proxy(t, "--anthropic", serve(t, api))
	h.run(t, "grant", "issue", "--allow", "Read", "--allow", "Write", "--allow", "Bash(echo:*)", "--tiers", "l0,l1,l4", "--budget", "1MJ", "--workspace", h.ws, "--use")
	s := h.acp(t, remote, proxyURL, env...)
	stop, said := s.prompt(t, "WRITE AND RUN: make out.txt and record the run")
	t.Logf("the editor saw:\n%s\ntool results: %v", said, api.results)
	if stop != acp.StopReasonEndTurn {
		t.Fatalf("stop %s; stderr:\n%s", stop, s.stderr.String())
	}
	for f, want := range map[string]string{"out.txt": "hello from claude\n", "ran.txt": "ran\n"} {
		if b, err := os.ReadFile(filepath.Join(h.ws, f)); err != nil || string(b) != want {
			t.Errorf("%s: %q %v; tool results %v", f, b, err, api.results)
		}
	}
	checkSealed(t, h, s, api, []string{"out.txt", "ran.txt"})
	checkDeniedTurn(t, s, api, "CONFIGURE: an OpenCode project configuration", true, failed)
	s.close(t)
	h.noneLeft(t, "after the session")
	// joule ends the remote's process group with SIGTERM, which ends its
	// joule-exec too before it can remove its stand-ins: they stay,
	// recorded, until the next contained command of the workspace ends
	// (docs/acp.md, Known gaps). What is left must be a stand-in, never
	// a configuration: a socket node with no permission bits, or an empty
	// directory.
	left := false
	for _, f := range names {
		p := filepath.Join(h.ws, f)
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		left = true
		entries, _ := os.ReadDir(p)
		if !(fi.Mode().Type() == os.ModeSocket && fi.Mode().Perm() == 0) && !(fi.IsDir() && len(entries) == 0) {
			t.Errorf("%s is left in the workspace and is not a stand-in (%v, %d entries)", f, fi.Mode(), len(entries))
		} else {
			t.Logf("%s: a stand-in is left after the session (%v)", f, fi.Mode())
		}
	}
	if left {
		// The next contained command of the workspace removes them when
		// it ends.
		c := exec.Command(jouleBin, "exec", "--", "/bin/true")
		c.Dir, c.Env = h.ws, append(os.Environ(), h.env...)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("joule exec in the workspace: %v\n%s", err, out)
		}
		for _, f := range names {
			if fi, err := os.Lstat(filepath.Join(h.ws, f)); err == nil {
				t.Errorf("%s is still there after the next contained command (%v)", f, fi.Mode())
			}
		}
	}
	// The person's own OpenCode, unconfined, in the workspace: its resolved
	// configuration has nothing of the workspace's.
	cmd := exec.Command(remote[0], "debug", "config", "--print-logs", "--log-level", "INFO")
	cmd.Dir = h.ws
	cmd.Env = append([]string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), `"plugin"`) {
		t.Fatalf("opencode debug config: %v\n%s\n%s", err, out, stderr.String())
	}
	if strings.Contains(string(out), "joule-config-probe") || strings.Contains(stderr.String(), "path="+h.ws+"/") {
		t.Errorf("the unconfined OpenCode loads a project configuration the contained one left:\n%s\n%s", out, stderr.String())
	}
}

package l4

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/sandbox"
)

// Containment runs the remote agent's whole process tree under joule-exec,
// confined by the kernel to the session's grant (core/sandbox), the
// mechanism contained hook commands use. The agent's own tools (Claude
// Code's Write in auto mode, Codex's shell in danger-full-access) never
// ask joule, so a grant enforced only on permission requests and
// fs/write_text_file misses them: confined, a write or command the grant
// refuses fails at the system call inside the agent's tool, the agent sees
// the failure in its turn, and nothing is left to undo.
//
// What the agent gets besides the grant:
//   - the network: with a joule proxy, TCP connect to the proxy's port only
//     (sandbox.Policy.Connect: Landlock names a port, not an address, so
//     that port on any host); without one, the network, since it must
//     reach its model's API;
//   - a home and a temp dir of its own: TMPDIR names a fresh directory
//     (the only temp dir it may write: the shared /tmp is read-only to
//     it), and HOME, XDG_DATA/STATE/CACHE_HOME, CLAUDE_CONFIG_DIR, CODEX_HOME and
//     GEMINI_CLI_HOME a directory in it, all removed after the turn, so
//     its configuration, sessions and caches are written there and never
//     into the user's. Credentials come from the
//     environment (ANTHROPIC_API_KEY, OPENAI_API_KEY, …): the sandbox
//     refuses reading the stored ones anyway (sandbox.HomeSecrets).
type Containment struct {
	// Runner is the absolute path of joule-exec.
	Runner string
	// PolicyDir is $JOULE_HOME/policy, where the policy is written; the
	// session's private layers over the toolchains' caches are beside it
	// (sandbox.LayerDir).
	PolicyDir string
}

// wrap returns the command line that runs argv confined to the session's
// grant, the environment the agent gets on top of its own, and a cleanup
// that removes its home. proxy is the base URL its model traffic goes to
// ("" when none).
func (c *Containment) wrap(ctx context.Context, g *gate.Gate, session, root string, argv []string, proxy, sessionURL string) ([]string, []string, func(), error) {
	if c.Runner == "" || c.PolicyDir == "" {
		return nil, nil, nil, errors.New("no joule-exec to contain the remote agent with")
	}
	// The grant the session's actions in root are decided by.
	chain, err := g.ActiveChainAt(ctx, session, root)
	if err != nil {
		return nil, nil, nil, err
	}
	p, err := g.Policy(chain)
	if err != nil {
		return nil, nil, nil, err
	}
	sp := gate.SandboxPolicy(p)
	sp.Layer = sandbox.LayerDir(filepath.Dir(c.PolicyDir), session)
	netFlag := true
	if proxy != "" {
		port, err := loopbackPort(proxy)
		if err != nil {
			return nil, nil, nil, err
		}
		sp.Connect, netFlag = []uint16{port}, false
	}
	base, err := os.MkdirTemp("", "joule-l4-*")
	if err != nil {
		return nil, nil, nil, err
	}
	if base, err = filepath.EvalSymlinks(base); err != nil {
		os.RemoveAll(base)
		return nil, nil, nil, err
	}
	home := filepath.Join(base, "home")
	// The agent's temp dir is its own: the sandbox's writable temp is
	// $TMPDIR, and the shared /tmp (where other programs, and the
	// workspace, may live) stays read-only to it.
	// XDG_CONFIG_HOME is emptied, not pointed into the home: the sandbox
	// makes the directory it names read-only (what programs run later
	// read, persist.go), and an empty one means $HOME/.config.
	env := []string{"TMPDIR=" + base, "HOME=" + home,
		"XDG_CONFIG_HOME=", "XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"), "CODEX_HOME=" + filepath.Join(home, ".codex"),
		"GEMINI_CLI_HOME=" + home}
	for _, d := range []string{".config", ".local/share", ".local/state", ".cache", ".claude", ".codex"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o700); err != nil {
			os.RemoveAll(base)
			return nil, nil, nil, err
		}
	}
	argv, agentEnv, listen, err := agentHome(argv, home, sessionURL)
	if err != nil {
		os.RemoveAll(base)
		return nil, nil, nil, err
	}
	env = append(env, agentEnv...)
	if !netFlag {
		sp.Listen = listen
	}
	path, err := sp.Write(c.PolicyDir)
	if err != nil {
		os.RemoveAll(base)
		return nil, nil, nil, fmt.Errorf("writing the remote agent's policy: %v", err)
	}
	wrapped := []string{c.Runner, "--policy", path}
	if netFlag {
		wrapped = append(wrapped, "--net")
	}
	wrapped = append(append(wrapped, "--"), argv...)
	return wrapped, env, func() { os.RemoveAll(base) }, nil
}

// loopbackPort is the port of a proxy URL on a loopback address: the one
// port the contained agent may connect to.
func loopbackPort(base string) (uint16, error) {
	u, err := url.Parse(base)
	if err != nil {
		return 0, fmt.Errorf("the proxy URL %q: %v", base, err)
	}
	host, p := u.Hostname(), u.Port()
	if p == "" {
		p = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	ip := net.ParseIP(host)
	if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return 0, fmt.Errorf("the proxy %s is not on a loopback address: a contained remote agent reaches joule proxy on this machine only", base)
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("the proxy URL %q has no port", base)
	}
	return uint16(n), nil
}

// agentHome writes into the contained agent's private home what a remote
// needs there to start confined and to send its model calls to joule
// proxy's sessionURL ("" when none) where its environment cannot say so,
// and returns its command line, the environment that goes with it and the
// loopback ports it serves itself on (sandbox.Policy.Listen).
//
// OpenCode (`opencode acp`):
//   - it takes its providers' addresses from its configuration only (its
//     Anthropic provider's base URL ends in /v1, which ANTHROPIC_BASE_URL
//     as Claude Code reads it does not): joule writes its global
//     configuration, $HOME/.config/opencode/opencode.json in the private
//     home, with the Anthropic and OpenAI providers pointed at the proxy.
//     The person's own, in their real home, is neither read nor written;
//     the model is the environment's choice (OPENCODE_CONFIG_CONTENT,
//     merged over this file) or OpenCode's default. A configuration that
//     sends the calls elsewhere fails at connect(2): the proxy's port is
//     the only one the agent may reach.
//   - its project configuration is not loaded
//     (OPENCODE_DISABLE_PROJECT_CONFIG): OpenCode writes into each
//     configuration directory it loads (.opencode/.gitignore,
//     package.json, a plugin install), and the workspace's are protected,
//     so it would exit at the first refused write.
//   - opencode.json, opencode.jsonc and .opencode/ at the workspace root
//     are protected; where one is absent the sandbox's stand-in for it
//     refuses to be opened with EACCES, which OpenCode, reading
//     opencode.json in a turn, takes for an absent file (core/sandbox
//     makeStandIn).
//   - it serves its own HTTP API on a loopback port and calls it: joule
//     picks a free port, names it with --port, and the policy lets the
//     agent bind and connect to that port only.
func agentHome(argv []string, home, sessionURL string) ([]string, []string, []uint16, error) {
	if !runs(argv, "opencode", "opencode-ai") {
		return argv, nil, nil, nil
	}
	cfg := map[string]any{"$schema": "https://opencode.ai/config.json", "autoupdate": false, "share": "disabled"}
	if sessionURL != "" {
		v1 := map[string]any{"options": map[string]any{"baseURL": strings.TrimSuffix(sessionURL, "/") + "/v1"}}
		cfg["provider"] = map[string]any{"anthropic": v1, "openai": v1}
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, nil, nil, err
	}
	dir := filepath.Join(home, ".config", "opencode")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "opencode.json"), append(b, '\n'), 0o600); err != nil {
		return nil, nil, nil, fmt.Errorf("writing the remote agent's OpenCode configuration: %v", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("a port for the remote agent's own server: %v", err)
	}
	out := append(append([]string(nil), argv...), "--hostname", "127.0.0.1", "--port", strconv.Itoa(int(port)))
	return out, []string{"OPENCODE_DISABLE_PROJECT_CONFIG=1", "OPENCODE_DISABLE_AUTOUPDATE=1"}, []uint16{port}, nil
}

// freePort is a loopback TCP port free now. Another program may take it
// before the agent binds it: the agent then fails to start, and the turn
// with it (no other port is open to it).
func freePort() (uint16, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return uint16(l.Addr().(*net.TCPAddr).Port), nil
}

// runs reports whether argv runs one of the named programs: its command,
// or a later word (npx opencode-ai@1.18.33 acp, node …/opencode), a
// version after @ ignored.
func runs(argv []string, names ...string) bool {
	for _, a := range argv {
		name := filepath.Base(a)
		if i := strings.LastIndex(name, "@"); i > 0 {
			name = name[:i]
		}
		name = strings.TrimSuffix(name, ".js")
		for _, n := range names {
			if name == n {
				return true
			}
		}
	}
	return false
}

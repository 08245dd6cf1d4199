package l4

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

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
func (c *Containment) wrap(ctx context.Context, g *gate.Gate, session, root string, argv []string, proxy string) ([]string, []string, func(), error) {
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
	path, err := sp.Write(c.PolicyDir)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("writing the remote agent's policy: %v", err)
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

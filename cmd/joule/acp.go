package main

import (
	"context"
	"crypto/ed25519"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"mvdan.cc/sh/v3/shell"

	"github.com/joulehook/joule/acpagent"
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/sandbox"
	"github.com/joulehook/joule/energy"
	"github.com/joulehook/joule/plugins/hook/resident"
	"github.com/joulehook/joule/tiers/config"
	"github.com/joulehook/joule/tiers/l0"
	"github.com/joulehook/joule/tiers/l1/lsp"
	"github.com/joulehook/joule/tiers/l2"
	"github.com/joulehook/joule/tiers/l4"
	"github.com/joulehook/joule/tiers/tierconfig"
)

func init() {
	register(&command{name: "acp", summary: "serve an editor (Zed, JetBrains, Neovim) as an ACP agent over stdio: the gated L0–L4 cascade", run: runACP})
}

// OpsDir holds the JCR-1 receipts of the ops joule acp applied, in $JOULE_HOME.
const OpsDir = "ops"

// ACPSessionsDir marks the ACP session ids joule acp issued, in $JOULE_HOME,
// so that a session is loadable before its first receipt.
const ACPSessionsDir = "acp-sessions"

const acpUsage = `acp [--remote 'COMMAND ARGS…' [--remote-timeout 30m] [--remote-mode MODE] [--proxy URL]] [--no-cache] [--log FILE]

Speaks the Agent Client Protocol (version 1) on stdin/stdout, as Zed,
JetBrains IDEs and Neovim (CodeCompanion, avante.nvim) launch an agent. Each
prompt runs the cascade, stopping at the first tier that closes it:
L0 (cache of signed ops) → L1 (lawful edits and look-ups: /rename, /format,
/replace, /diff, /find, or requests as typed: "rename the method Hello of
Greeter to Greet", "Run gofmt on main.go.", "where is X defined", "who calls
X") → L2 (retrieval over the workspace index) → L3 (a local model) → L4 (the
remote agent given by --remote or $JOULE_ACP_REMOTE, e.g.
'npx @zed-industries/claude-code-acp'). Every tier consultation and every
file write is decided by the active grant and sealed; every change is a
signed coding op with receipts. See docs/acp.md.

The "tiers" section of $JOULE_HOME/config.json (docs/models.md) turns tiers
on and off and configures L2 (with an optional embedding model; on by
default), L3 (Ollama or an OpenAI-compatible server such as vLLM; off until
configured) and L4's default command and timeout; flags win over it.
'joule doctor' reports what is reachable.`

func runACP(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "acp", acpUsage)
	remote := fs.String("remote", os.Getenv("JOULE_ACP_REMOTE"), "the remote ACP agent's command line for L4 (default $JOULE_ACP_REMOTE; empty: no L4)")
	remoteTimeout := fs.Duration("remote-timeout", 30*time.Minute, "the longest one prompt may run at the remote agent before L4 gives up")
	noCache := fs.Bool("no-cache", false, "do not consult or fill the L0 cache")
	logFile := fs.String("log", "", "append diagnostics to FILE (default: stderr)")
	remoteMode := fs.String("remote-mode", os.Getenv("JOULE_ACP_REMOTE_MODE"), "the ACP session mode the remote agent's sessions are put in (e.g. bypassPermissions for claude-agent-acp); default its own (default $JOULE_ACP_REMOTE_MODE)")
	proxyURL := fs.String("proxy", os.Getenv("JOULE_PROXY_URL"), "a running joule proxy's base URL; the remote agent's model calls are pointed at it (default $JOULE_PROXY_URL)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	ep, err := openEndpoint()
	if err != nil {
		return err
	}
	defer ep.Close()
	// language servers L1 starts stay resident for the session, shown in
	// joule doctor, and end with it
	lsp.Default.StateDir = lsp.StateDir(ep.home)
	defer lsp.Default.Close()
	g, err := ep.gate()
	if err != nil {
		return err
	}
	cfg, err := config.Load(ep.home)
	if err != nil {
		return err
	}
	tc, err := tierconfig.Parse(cfg.Tiers)
	if err != nil {
		return fmt.Errorf("%s: %v", filepath.Join(ep.home, ConfigFile), err)
	}
	if !set["remote"] && *remote == "" && tc.Enabled("l4") {
		*remote = tc.L4.Command
	}
	if !set["remote-timeout"] {
		*remoteTimeout = tc.L4.Timeout
	}
	if tc.On != nil && !tc.On["l4"] && !set["remote"] {
		*remote = ""
	}
	logw := e.stderr
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		logw = f
	}
	opt := acpagent.Options{Gate: g, Key: ep.id.Key, OpsDir: filepath.Join(ep.home, OpsDir), SessionsDir: filepath.Join(ep.home, ACPSessionsDir), Version: version(),
		Log: slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if !*noCache && tc.Enabled("l0") {
		if opt.Cache, err = l0.Open(filepath.Join(ep.home, l0.Dir)); err != nil {
			return err
		}
	}
	opt.NoL1 = !tc.Enabled("l1")
	if tc.Enabled("l2") {
		emb, rt, err := tc.Embedder(ep.home)
		if err != nil {
			return err
		}
		x := &acpagent.Indexes{Home: ep.home, Context: tc.L2.Context, Progress: logw}
		if emb != nil {
			x.Options = append(x.Options, l2.WithEmbedder(emb))
		}
		opt.Log.Info("l2", "embedder", rt.Note)
		defer x.Close()
		opt.Index = x
	}
	if tc.Enabled("l3") {
		m, err := config.LoadMeter(ep.home)
		if err != nil {
			return err
		}
		grants, err := ep.grantSource()
		if err != nil {
			return err
		}
		ids := func(ctx context.Context, session string) []string {
			ids, _ := grants(ctx, session)
			return ids
		}
		st, rt, err := tc.LocalStage(ep.home, ep.id.Key, m.Table, &energy.Recorder{Store: ep.store, Sealer: g.Sealer}, ep.store, ids)
		if err != nil {
			return err
		}
		opt.Log.Info("l3", "model", tc.L3.Model, "route", rt.Note)
		opt.Local = st
	}
	if *remote != "" {
		r, err := newRemote(*remote, logw, g, ep.id.Key, *proxyURL)
		if err != nil {
			return err
		}
		r.Log = opt.Log
		r.Timeout = *remoteTimeout
		r.Mode = *remoteMode
		if r.Contain, err = remoteContainment(ep.home, cfg); err != nil {
			return err
		}
		if r.Contain == nil {
			opt.Log.Warn("l4: the remote agent runs uncontained (exec_fallback is unconfined): its own changes to the disk are decided after its turn and undone if denied")
		}
		opt.Remote = r
		opt.Metered = *proxyURL != ""
		if *proxyURL == "" {
			r.Proxy = discoverProxy(ep.home, opt.Log)
		}
	}
	return acpagent.New(opt).Serve(ctx, e.stdin, e.stdout)
}

// newRemote configures L4 from a command line, split as a shell would
// split words (quotes honoured, nothing expanded).
func newRemote(cmdline string, stderr io.Writer, g *gate.Gate, key ed25519.PrivateKey, proxyURL string) (*l4.Remote, error) {
	argv, err := shell.Fields(cmdline, func(string) string { return "" })
	if err != nil || len(argv) == 0 {
		return nil, usagef("acp: --remote %q is not a command line", cmdline)
	}
	r := &l4.Remote{Argv: argv, Gate: g, Key: key, Stderr: stderr}
	if proxyURL != "" {
		// The remote agent's model calls go through joule proxy, metered,
		// at a base URL of the session's own (l4.SessionURL).
		r.Proxy = func() string { return proxyURL }
	}
	return r, nil
}

// remoteContainment is how L4 confines the remote agent's process tree:
// under joule-exec beside this binary, with the session's grant
// (l4.Containment). Where it cannot (no joule-exec, no Landlock) L4 does
// not start unless exec_fallback is "unconfined": then nil, and the
// agent runs as it is.
func remoteContainment(home string, cfg *config.Config) (*l4.Containment, error) {
	c, err := containment(home, resident.ModeContain)
	if err != nil {
		return nil, err
	}
	switch {
	case c.Runner != "" && c.ABI > 0:
		return &l4.Containment{Runner: c.Runner, PolicyDir: c.PolicyDir}, nil
	case cfg.ExecFallback == "unconfined":
		return nil, nil
	case c.ABI == 0:
		return nil, fmt.Errorf("acp: --remote runs the remote agent contained, but %v; set \"exec_fallback\": \"unconfined\" in %s to run it uncontained", sandbox.ErrUnavailable, filepath.Join(home, ConfigFile))
	}
	return nil, fmt.Errorf("acp: --remote runs the remote agent contained under joule-exec, which is not beside this binary (make build puts it there); set \"exec_fallback\": \"unconfined\" in %s to run it uncontained", filepath.Join(home, ConfigFile))
}

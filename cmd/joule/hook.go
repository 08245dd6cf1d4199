package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/sandbox"
	"github.com/joulehook/joule/plugins/antigravity"
	"github.com/joulehook/joule/plugins/claudecode"
	"github.com/joulehook/joule/plugins/cline"
	"github.com/joulehook/joule/plugins/codex"
	"github.com/joulehook/joule/plugins/cursor"
	"github.com/joulehook/joule/plugins/geminicli"
	"github.com/joulehook/joule/plugins/hook"
	"github.com/joulehook/joule/plugins/opencode"
	"github.com/joulehook/joule/plugins/windsurf"
)

func init() {
	register(&command{name: "hook", summary: "answer one host hook (claude-code, cursor, …) from its payload on stdin", run: runHook})
}

// adapters are the hosts joule hook serves, by command-line name.
var adapters = map[string]hook.Adapter{}

func addAdapter(a hook.Adapter) { adapters[a.Host()] = a }

func init() {
	// Cascade and agy send no cwd for some events: they run hooks in the
	// workspace, so the hook's own working directory stands in.
	dir, _ := os.Getwd()
	for _, a := range []hook.Adapter{claudecode.Adapter{}, codex.Adapter{}, geminicli.Adapter{}, cursor.Adapter{},
		windsurf.Adapter{Dir: dir}, antigravity.Adapter{Dir: dir}, cline.Adapter{}, opencode.Adapter{}} {
		addAdapter(a)
	}
}

func hostNames() string {
	var names []string
	for n := range adapters {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// containHosts are the hosts whose hook can replace a shell command's
// input without approving it past the host's own prompt (docs/hosts.md,
// "Containment on the other hosts").
var containHosts = map[string]bool{claudecode.Host: true, cline.Host: true, codex.Host: true, geminicli.Host: true, opencode.Host: true}

func containHostNames() string {
	var names []string
	for n := range containHosts {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func runHook(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "hook", `hook HOST < payload.json

Reads one hook payload from HOST on stdin, decides it with the active grant,
seals the decision as a receipt and answers in HOST's own format (JSON on
stdout, stderr, exit status). Every failure is HOST's explicit deny.
Hosts: `+hostNames()+`.`)
	contain := fs.Bool("contain", false, "rewrite allowed shell commands to run under 'joule exec', confined by the kernel ("+containHostNames()+")")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("hook: want exactly one HOST (%s)", hostNames())
	}
	a, ok := adapters[fs.Arg(0)]
	if !ok {
		return usagef("hook: unknown host %q (hosts: %s)", fs.Arg(0), hostNames())
	}
	if *contain && !containHosts[a.Host()] {
		return usagef("hook: --contain is for %s, the hosts whose rewrite keeps their own prompts (docs/hosts.md)", containHostNames())
	}
	out := answerHook(ctx, e, a, *contain)
	e.stdout.Write(out.Stdout)
	fmt.Fprint(e.stderr, out.Stderr)
	if out.Exit != 0 {
		return &exitError{out.Exit}
	}
	return nil
}

// answerHook reads the payload and decides it, failing closed on anything,
// including failures before a gate exists.
func answerHook(ctx context.Context, e *env, a hook.Adapter, contain bool) (out hook.Output) {
	defer func() {
		if p := recover(); p != nil {
			out = hook.Fallback(a, nil, hook.Deny(gate.CodeInternal, fmt.Sprintf("internal error: %v", p)))
		}
	}()
	// One byte past the limit is enough for the adapter to refuse, sealed,
	// a payload that is too large.
	b, err := io.ReadAll(io.LimitReader(e.stdin, hook.MaxPayload+1))
	if err != nil {
		return hook.Fallback(a, nil, hook.Deny(gate.CodeMalformed, "joule cannot read this "+a.Host()+" hook payload: "+err.Error()))
	}
	ep, err := openEndpoint()
	if err != nil {
		reason := err.Error()
		if errors.Is(err, identity.ErrNoKey) {
			reason += "; run 'joule init' in the workspace"
		}
		return hook.Fallback(a, nil, hook.Deny(endpointCode(err), reason))
	}
	// The store stays open until exit: see the note above openEndpoint.
	g, err := ep.gate()
	if err != nil {
		return hook.Fallback(a, nil, hook.Deny(gate.CodeGrantInvalid, err.Error()))
	}
	if contain {
		c, err := containment(ep)
		if err != nil {
			return hook.Fallback(a, nil, hook.Deny(gate.CodeInternal, err.Error()))
		}
		g.Contain = c
	}
	return hook.Run(ctx, a, g, b)
}

// containment is what joule hook --contain rewrites with: this binary, the
// kernel's Landlock ABI and the configured fallback.
func containment(ep *endpoint) (*gate.Containment, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if r, err := filepath.EvalSymlinks(self); err == nil {
		self = r
	}
	cfg, err := loadConfig(ep.home)
	if err != nil {
		return nil, err
	}
	abi := sandbox.ABI()
	if os.Getenv(simulateNoLandlock) == "1" {
		abi = 0
	}
	c := &gate.Containment{Exe: self, ABI: abi, Fallback: cfg.ExecFallback == "unconfined"}
	// joule-exec beside this binary (make build puts it there) confines
	// without opening the store; without it lines run under joule exec.
	if runner := filepath.Join(filepath.Dir(self), "joule-exec"); isExecutable(runner) {
		c.Runner, c.PolicyDir = runner, filepath.Join(ep.home, sandbox.PolicyDir)
	}
	return c, nil
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

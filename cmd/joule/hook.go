package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/sandbox"
	"github.com/joulehook/joule/plugins/hook"
	"github.com/joulehook/joule/plugins/hook/resident"
	"github.com/joulehook/joule/plugins/hook/server"
	"github.com/joulehook/joule/plugins/hosts"
	"github.com/joulehook/joule/tiers/config"
)

func init() {
	register(&command{name: "hook", summary: "answer one host hook (claude-code, cursor, …) from its payload on stdin", run: runHook})
}

// hookAdapter is the adapter joule hook uses for host: Cascade and agy
// send no cwd for some events, since they run hooks in the workspace, so
// the hook's own working directory stands in.
func hookAdapter(host string) (hook.Adapter, bool) {
	h, ok := hosts.Lookup(host)
	if !ok || h.Adapter == nil {
		return nil, false
	}
	dir, _ := os.Getwd()
	return h.Adapter(dir), true
}

// hostNames are the hosts joule hook serves.
func hostNames() string { return strings.Join(hosts.Names(hosts.Hooked), ", ") }

// containHostNames are the hosts whose hook can replace a shell command's
// input without approving it past the host's own prompt (docs/hosts.md,
// "Containment on the other hosts").
func containHostNames() string { return strings.Join(hosts.Names(hosts.Contained), ", ") }

func runHook(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "hook", `hook HOST < payload.json

Reads one hook payload from HOST on stdin, decides it with the active grant,
seals the decision as a receipt and answers in HOST's own format (JSON on
stdout, stderr, exit status). Every failure is HOST's explicit deny.
Hosts: `+hostNames()+`.`)
	contain := fs.Bool("contain", false, "rewrite allowed shell commands to run under 'joule exec', confined by the kernel ("+containHostNames()+"; what joule install writes there by default)")
	noContain := fs.Bool("no-contain", false, "rewrite nothing, and say in each receipt of an allowed shell command that it was not contained (the hook of 'joule install --no-contain')")
	answerFD := fs.Int("answer-fd", 0, internalFlag+"write the whole answer (stdout, stderr, exit status) as one joule-hook frame on this file descriptor instead (joule-hook's fallback)")
	thenServe := fs.Bool("then-serve", false, internalFlag+"with --answer-fd: once the answer is written, stay as the resident gate of $JOULE_HOME (joule-hook's first call)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *contain && *noContain {
		return usagef("hook: --contain or --no-contain, not both")
	}
	mode := ""
	switch {
	case *contain:
		mode = resident.ModeContain
	case *noContain:
		mode = resident.ModeNoContain
	}
	if *answerFD <= 2 {
		if *thenServe {
			return usagef("hook: --then-serve needs --answer-fd above 2")
		}
		return withinBudget(e, fs.Arg(0), func(e *env) error {
			_, _, err := hookCommand(ctx, e, fs, mode)
			return err
		})
	}
	var origin *server.Gate
	if *thenServe {
		origin = gateOrigin(e)
	}
	// The answer is exactly what joule hook HOST would print and exit
	// with, usage errors included; it reaches the client whole or not at
	// all.
	var stdout, stderr bytes.Buffer
	buffered := &env{stdin: e.stdin, stdout: &stdout, stderr: &stderr}
	ep, g, err := hookCommand(ctx, buffered, fs, mode)
	code := report(buffered, err)
	f := os.NewFile(uintptr(*answerFD), "answer")
	werr := resident.WriteResponse(f, &resident.Response{Kind: resident.Answer, Exit: code, Stdout: stdout.Bytes(), Stderr: stderr.Bytes()})
	f.Close()
	if werr != nil {
		return fmt.Errorf("hook: writing the answer to fd %d: %w", *answerFD, werr)
	}
	if origin == nil || ep == nil || g == nil {
		return nil
	}
	// This process, its binary initialised and its store open, becomes the
	// resident gate of $JOULE_HOME instead of exiting, so a first call
	// costs one joule start, not two, and the gate's start does not compete
	// with the decision. Serve returns at once when another gate serves.
	// It serves every mode (the mode of this call was the call's own).
	server.Detach()
	if err := origin.Serve(ctx, func() (*gate.Gate, error) { return g, nil }); err != nil {
		fmt.Fprintf(e.stderr, "%s joule gate[%d]: not serving: %v\n", time.Now().UTC().Format(time.RFC3339), os.Getpid(), err)
	}
	return nil
}

// hookCommand is joule hook HOST on e, with the containment mode of its
// flag; ep and g are the store and gate it decided with (nil when it could
// not open them).
func hookCommand(ctx context.Context, e *env, fs *flag.FlagSet, mode string) (*endpoint, *gate.Gate, error) {
	if fs.NArg() != 1 {
		return nil, nil, usagef("hook: want exactly one HOST (%s)", hostNames())
	}
	a, ok := hookAdapter(fs.Arg(0))
	if !ok {
		return nil, nil, usagef("hook: unknown host %q (hosts: %s)", fs.Arg(0), hostNames())
	}
	if err := hookModeError(a.Host(), mode); err != nil {
		return nil, nil, err
	}
	out, ep, g := answerHook(ctx, e, a, mode)
	e.stdout.Write(out.Stdout)
	fmt.Fprint(e.stderr, out.Stderr)
	if out.Exit != 0 {
		return ep, g, &exitError{out.Exit}
	}
	return ep, g, nil
}

// hookModeError is the usage error of a containment mode host cannot have
// (nil when it can): joule hook's, which the resident gate answers too.
func hookModeError(host, mode string) error {
	if h, _ := hosts.Lookup(host); mode != "" && !hosts.Contained(h) {
		return usagef("hook: --%s is for %s, the hosts whose rewrite keeps their own prompts (docs/hosts.md)", mode, containHostNames())
	}
	return nil
}

// answerHook reads the payload and decides it, failing closed on anything,
// including failures before a gate exists. ep and g are set once opened;
// g has no containment of its own (it may go on as the resident gate,
// which serves every mode): the call's mode is given to this decision.
func answerHook(ctx context.Context, e *env, a hook.Adapter, mode string) (out hook.Output, ep *endpoint, g *gate.Gate) {
	defer func() {
		if p := recover(); p != nil {
			out = hook.Fallback(a, nil, hook.Deny(gate.CodeInternal, fmt.Sprintf("internal error: %v", p)))
		}
	}()
	// One byte past the limit is enough for the adapter to refuse, sealed,
	// a payload that is too large.
	b, err := io.ReadAll(io.LimitReader(e.stdin, hook.MaxPayload+1))
	if err != nil {
		return hook.Fallback(a, nil, hook.Deny(gate.CodeMalformed, "joule cannot read this "+a.Host()+" hook payload: "+err.Error())), nil, nil
	}
	ep, err = openEndpoint()
	if err != nil {
		reason := err.Error()
		if errors.Is(err, identity.ErrNoKey) {
			reason += "; run 'joule init' in the workspace"
		}
		return hook.Fallback(a, nil, hook.Deny(endpointCode(err), reason)), nil, nil
	}
	// The store stays open until exit: see the note above openEndpoint.
	g, err = ep.gate()
	if err != nil {
		return hook.Fallback(a, nil, hook.Deny(gate.CodeGrantInvalid, err.Error())), ep, nil
	}
	var d hook.Decider = g
	if mode != "" {
		c, err := containment(ep.home, mode)
		if err != nil {
			return hook.Fallback(a, nil, hook.Deny(gate.CodeInternal, err.Error())), ep, g
		}
		d = gate.Contained{Gate: g, C: c}
	}
	return hook.Run(ctx, a, d, b), ep, g
}

// notContained is the containment of a hook installed with --no-contain.
var notContained = &gate.Containment{Off: "installed with --no-contain"}

// containment is what joule hook rewrites with in mode: for --contain this
// binary, the kernel's Landlock ABI, the construction joule-exec will use
// and the configured fallback of $JOULE_HOME home.
func containment(home, mode string) (*gate.Containment, error) {
	switch mode {
	case resident.ModeNoContain:
		return notContained, nil
	case resident.ModeContain:
	default:
		return nil, fmt.Errorf("unknown containment mode %q", mode)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if r, err := filepath.EvalSymlinks(self); err == nil {
		self = r
	}
	cfg, err := config.Load(home)
	if err != nil {
		return nil, err
	}
	abi, namespaces := sandboxState()
	c := &gate.Containment{Exe: self, ABI: abi, Fallback: cfg.ExecFallback == "unconfined", LandlockOnly: !namespaces, Config: cfg.TrustDigest()}
	// joule-exec beside this binary (make build puts it there) confines
	// without opening the store; without it lines run under joule exec.
	if runner := filepath.Join(filepath.Dir(self), "joule-exec"); isExecutable(runner) {
		c.Runner, c.PolicyDir = runner, filepath.Join(home, sandbox.PolicyDir)
	}
	return c, nil
}

// gateContainment is the resident gate's Contain (server.Config): the
// containment of each mode, built once, as joule hook builds it.
func gateContainment(home string) func(host, mode string) (*gate.Containment, error) {
	var once sync.Once
	var c *gate.Containment
	var err error
	return func(host, mode string) (*gate.Containment, error) {
		if err := hookModeError(host, mode); err != nil {
			return nil, &server.ModeError{Text: err.Error()}
		}
		if mode != resident.ModeContain {
			return containment(home, mode)
		}
		once.Do(func() { c, err = containment(home, mode) })
		return c, err
	}
}

// sandboxState is what a contained command gets on this machine: the
// kernel's Landlock ABI (0 under JOULE_EXEC_SIMULATE_NO_LANDLOCK=1) and
// whether joule-exec builds its user, mount and PID namespaces (not where
// they are off, nor under JOULE_EXEC_LANDLOCK_ONLY=1).
func sandboxState() (abi int, namespaces bool) {
	abi = sandbox.ABI()
	if os.Getenv(simulateNoLandlock) == "1" {
		abi = 0
	}
	return abi, sandbox.NamespacesAvailable() && os.Getenv(sandbox.LandlockOnlyEnv) != "1"
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// withinBudget runs answer (joule hook HOST as the host runs it) with its
// output held back, and prints it if it comes within the hook budget
// (resident.Budget); else it prints host's explicit deny and returns. A
// decision that waits (a FIFO or a lock put in the home by a process of
// the user's, a store that does not answer) is then a deny, never the
// host's own timeout, which Claude Code and others treat as allow.
func withinBudget(e *env, host string, answer func(*env) error) error {
	type answered struct {
		stdout, stderr []byte
		code           int
	}
	done := make(chan answered, 1)
	go func() {
		var stdout, stderr bytes.Buffer
		buffered := &env{stdin: e.stdin, stdout: &stdout, stderr: &stderr}
		code := report(buffered, answer(buffered))
		done <- answered{stdout.Bytes(), stderr.Bytes(), code}
	}()
	budget := resident.Budget(os.Getenv)
	timer := time.NewTimer(budget)
	defer timer.Stop()
	var a answered
	select {
	case a = <-done:
	case <-timer.C:
		a.stdout, a.stderr, a.code = resident.Deny(host, fmt.Sprintf("joule deny (%s): no decision within %v: a file of $JOULE_HOME that blocks (a FIFO, a lock held) or a store that does not answer; run 'joule doctor'", gate.CodeInternal, budget))
	}
	e.stdout.Write(a.stdout)
	e.stderr.Write(a.stderr)
	if a.code != 0 {
		return &exitError{a.code}
	}
	return nil
}

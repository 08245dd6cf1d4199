package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/sandbox"
)

func init() {
	register(&command{name: "exec", summary: "run a program confined by the kernel (Landlock) to what the active grant allows", run: runExec})
}

// simulateNoLandlock makes joule exec behave as on a kernel without
// Landlock, for the tests of the fallback. It can only make joule exec
// refuse, or run unconfined where the configuration already allows that.
const simulateNoLandlock = "JOULE_EXEC_SIMULATE_NO_LANDLOCK"

func runExec(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "exec", `exec [--session ID] [--background] [--net] -- PROGRAM [ARGS...]
       exec [--session ID] --write-policy

Runs PROGRAM confined by the kernel to what the active grant (of session ID,
else the global one) allows, in a user and mount namespace that hides the
refused paths where user namespaces work, by Landlock alone in its own place
elsewhere (JOULE_EXEC_LANDLOCK_ONLY=1 chooses that): writes only in the
trees the grant's Write rules name, in the temp dir, and in the toolchains'
caches through the session's private layer (the real caches stay as they
were); no reads of $JOULE_HOME or of paths Read rules deny; no writes to the
hosts' hook configuration, git's configuration and hooks, shell start-up
files or PATH directories (so go install fails inside); no TCP unless --net. What the kernel refuses is
the program's own EACCES/EPERM error; the exit status is the program's.
Without Landlock it refuses to run, unless exec_fallback is "unconfined" in
$JOULE_HOME/config.json. joule hook --contain rewrites lines to joule-exec
(beside joule), which enforces the same policy without opening the store;
--write-policy writes that policy and prints its path. See docs/gate.md,
"Containment".`)
	session := fs.String("session", "", "the session whose active grant applies")
	net := fs.Bool("net", false, "allow TCP connect and bind")
	background := fs.Bool("background", false, "the host runs PROGRAM in the background: no symbolic link may be made, and no directory removed or renamed, in the writable trees")
	writePolicy := fs.Bool("write-policy", false, "run nothing: write the policy joule-exec would confine the session's commands to into $JOULE_HOME/policy and print its path")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err // fs.Parse printed the help
		}
		return usagef("exec: %v (run 'joule exec -h')", err)
	}
	argv := fs.Args()
	if *writePolicy {
		return execWritePolicy(ctx, e, *session, len(argv))
	}
	if len(argv) == 0 {
		return usagef("exec: want a PROGRAM to run after --")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(e.stderr, "joule exec: %v\n", err)
		return &exitError{127}
	}
	refuse := func(format string, a ...any) error {
		fmt.Fprintf(e.stderr, "joule exec: "+format+"\n", a...)
		return &exitError{126}
	}
	ep, err := openEndpoint()
	if err != nil {
		return refuse("%v", err)
	}
	cfg := ep.cfg
	g, err := ep.gate()
	if err != nil {
		return refuse("%v", err)
	}
	// exec_fallback is a trust setting: it runs only as the home's
	// signed chain records it.
	if _, err := g.HomeState(ctx); err != nil {
		return refuse("%v", gate.ChainError(err))
	}
	abi := sandbox.ABI()
	if os.Getenv(simulateNoLandlock) == "1" {
		abi = 0
	}
	if abi == 0 {
		if cfg.ExecFallback != "unconfined" {
			return refuse("%v, so the command does not run: the grant cannot be enforced by the kernel here. To run commands on analysis alone, set \"exec_fallback\": \"unconfined\" in %s", sandbox.ErrUnavailable, ep.home+"/"+ConfigFile)
		}
		fmt.Fprintf(e.stderr, "joule exec: %v; running %s unconfined (exec_fallback is \"unconfined\")\n", sandbox.ErrUnavailable, argv[0])
		return execUnconfined(path, argv)
	}
	wd, _ := os.Getwd()
	chain, err := g.ActiveChainAt(ctx, *session, wd)
	if err != nil {
		return refuse("%v", err)
	}
	if err := chain.Check(*session, time.Now()); err != nil {
		return refuse("%v", err)
	}
	policy, err := g.Policy(chain)
	if err != nil {
		return refuse("%v", err)
	}
	// The same policy the gate hands joule-exec, built into a Spec here.
	sp := gate.SandboxPolicy(policy)
	sp.Layer = sandbox.LayerDir(ep.home, *session)
	spec, err := sp.Spec(*net, os.Getenv)
	if err != nil {
		return refuse("%v", err)
	}
	spec.Background = *background
	if m := sandbox.Missing(abi, *net); len(m) > 0 {
		fmt.Fprintf(e.stderr, "joule exec: Landlock ABI %d enforces less than joule asks for: %s\n", abi, strings.Join(m, "; "))
	}
	spec.LandlockOnly = os.Getenv(sandbox.LandlockOnlyEnv) == "1"
	err = sandbox.Exec(spec, path, argv, os.Environ(), e.stderr)
	return refuse("%v", err)
}

func execUnconfined(path string, argv []string) error {
	return fmt.Errorf("exec %s: %w", path, syscall.Exec(path, argv, os.Environ()))
}

// execWritePolicy writes the policy joule hook --contain hands joule-exec
// for session's active grant and prints its path: what a contained line
// of that session runs under is then `joule-exec --policy PATH -- ...`.
func execWritePolicy(ctx context.Context, e *env, session string, nargs int) error {
	if nargs != 0 {
		return usagef("exec: --write-policy runs nothing; give no PROGRAM")
	}
	ep, err := openEndpoint()
	if err != nil {
		return err
	}
	g, err := ep.gate()
	if err != nil {
		return err
	}
	wd, _ := os.Getwd()
	chain, err := g.ActiveChainAt(ctx, session, wd)
	if err != nil {
		return err
	}
	if err := chain.Check(session, time.Now()); err != nil {
		return err
	}
	policy, err := g.Policy(chain)
	if err != nil {
		return err
	}
	sp := gate.SandboxPolicy(policy)
	sp.Layer = sandbox.LayerDir(ep.home, session)
	path, err := sp.Write(filepath.Join(ep.home, sandbox.PolicyDir))
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, path)
	return nil
}

//go:build linux

// Command joule-exec runs one command confined by the kernel to a policy
// the gate already decided:
//
//	joule-exec --policy $JOULE_HOME/policy/<sha256>.json [--background] [--net] -- PROGRAM [ARGS...]
//
// It is what `joule hook --contain` rewrites an allowed Bash line to run
// under. It reads the policy file (a regular file of this user, mode 0600,
// whose SHA-256 is its name), builds the Landlock rules from it (deny globs
// expanded over the files that exist now, the temp dir and the
// toolchains' caches writable through the session's private layer, what
// programs run later outside read as configuration read-only, each absent
// protected name held by a stand-in for the run; with
// --background, which the gate adds for a command the host runs in the
// background, no symbolic link made and no directory removed or renamed)
// and runs PROGRAM confined (with the network
// off, under the seccomp filter too), with the policy's resource limits:
// in a user, mount and PID namespace whose mounts make all but the
// writable trees read-only and hide the refused paths, waiting for it,
// ending every process it left behind, taking out what git would run of
// the repositories the command made or that were not guarded while it ran
// (kept in $JOULE_HOME/layers/.quarantine, said on stderr), and exiting
// with its status, or,
// where user namespaces are off, confined by Landlock alone in its own
// place (sandbox.Exec, whose warning says what that leaves open). It opens no store and
// verifies no signature: the gate did that when it decided, and wrote the
// policy where no contained command can read or write it. A contained
// command that runs joule-exec itself only adds restrictions: Landlock
// layers never widen.
//
// It links only core/sandbox (with core/rule and go-landlock) and the
// standard library, so it starts as fast as any small static Go program;
// `joule exec` is the same confinement for people who type it, loading
// the active grant from the store. See docs/gate.md, "Containment".
package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/joulehook/joule/core/sandbox"
)

const usage = "usage: joule-exec --policy FILE [--background] [--net] -- PROGRAM [ARGS...] (the line joule hook --contain writes; to type one, use 'joule exec')"

// simulateNoLandlock is joule exec's test switch: it can only make
// joule-exec refuse.
const simulateNoLandlock = "JOULE_EXEC_SIMULATE_NO_LANDLOCK"

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	refuse := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "joule-exec: "+format+"\n", a...)
		return 126
	}
	var policy string
	var net, background bool
	i := 0
	for ; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			i++
			goto done
		case a == "--net":
			net = true
		case a == "--background":
			background = true
		case a == "--policy" && i+1 < len(args):
			i++
			policy = args[i]
		case strings.HasPrefix(a, "--policy="):
			policy = strings.TrimPrefix(a, "--policy=")
		case a == "-h" || a == "--help":
			fmt.Fprintln(stderr, usage)
			return 2
		default:
			fmt.Fprintf(stderr, "joule-exec: unknown argument %q; %s\n", a, usage)
			return 2
		}
	}
done:
	argv := args[i:]
	if policy == "" || len(argv) == 0 || i > len(args) {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	p, err := sandbox.ReadPolicy(policy)
	if err != nil {
		return refuse("%v; the command does not run", err)
	}
	if err := p.Check(time.Now()); err != nil {
		return refuse("%v; the command does not run", err)
	}
	abi := sandbox.ABI()
	if os.Getenv(simulateNoLandlock) == "1" {
		abi = 0
	}
	if abi == 0 {
		return refuse("%v, so the command does not run: the policy cannot be enforced by the kernel here", sandbox.ErrUnavailable)
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(stderr, "joule-exec: %v\n", err)
		return 127
	}
	spec, err := p.Spec(net, os.Getenv)
	if err != nil {
		return refuse("%v", err)
	}
	if m := sandbox.Missing(abi, net); len(m) > 0 {
		fmt.Fprintf(stderr, "joule-exec: Landlock ABI %d enforces less than joule asks for: %s\n", abi, strings.Join(m, "; "))
	}
	spec.LandlockOnly = os.Getenv(sandbox.LandlockOnlyEnv) == "1"
	spec.Background = background
	return refuse("%v", sandbox.Exec(spec, path, argv, os.Environ(), stderr))
}

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/home"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/plugins/hook"
	"github.com/joulehook/joule/plugins/hook/resident"
	"github.com/joulehook/joule/plugins/hook/server"
	"github.com/joulehook/joule/plugins/hosts"
)

// runGateServe is `joule gate serve`: the resident gate of $JOULE_HOME on
// its Unix socket (plugins/hook/server). cmd/joule-hook starts it; a user
// rarely needs to.
func runGateServe(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "gate serve", `gate serve [--idle 15m]

Runs the resident gate of $JOULE_HOME: it answers joule-hook clients on a
Unix socket in a directory only you can enter (`+"`joule gate status`"+` prints
it), deciding each host payload exactly as 'joule hook HOST' does and
sealing before it answers. It exits after --idle without a request, when
its binary or $JOULE_HOME's configuration changes, and on 'joule gate stop'.
joule-hook starts it when none answers; there is no need to run it by hand.`)
	idle := fs.Duration("idle", gateIdle(), "exit after this long without a request (default $JOULE_GATE_IDLE, else 15m)")
	readyFD := fs.Int("ready-fd", 0, "write one byte to this file descriptor once listening (joule-hook's start signal)")
	var system systemFlag
	fs.Var(&system, "system", "serve as the machine's system gate, as its system user (the configuration "+home.SystemConfig+", or =PATH): see docs/receipts.md, System mode")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if *idle <= 0 {
		return usagef("gate serve: --idle must be positive")
	}
	if system.set {
		return runSystemGate(ctx, e, system.path, *idle)
	}
	cfg, err := gateConfig(e.stderr, *idle)
	if err != nil {
		return err
	}
	if *readyFD > 2 {
		ready := os.NewFile(uintptr(*readyFD), "ready")
		defer ready.Close()
		cfg.Ready = func() {
			ready.Write([]byte{1})
			ready.Close()
		}
	}
	r, err := server.New(cfg)
	if err != nil {
		return err
	}
	var ep *endpoint
	err = r.Serve(ctx, func() (*gate.Gate, error) {
		var err error
		if ep, err = openEndpoint(); err != nil {
			return nil, err
		}
		return ep.gate()
	})
	if err != nil && ep != nil {
		ep.Close()
	}
	return err
}

func gateIdle() time.Duration {
	if v := os.Getenv("JOULE_GATE_IDLE"); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			return d
		}
	}
	return server.DefaultIdle
}

// gateConfig is the resident gate of $JOULE_HOME as this process's
// environment selects it, logging to log. The files it watches are what a
// gate reads once at start and a decision depends on: config.json, the
// trusted issuers and the endpoint's public key.
func gateConfig(log io.Writer, idle time.Duration) (server.Config, error) {
	home, err := identity.Home()
	if err != nil {
		return server.Config{}, err
	}
	userHome, _ := os.UserHomeDir()
	store, set := os.LookupEnv(StoreEnv)
	return server.Config{Home: home, UserHome: userHome, Store: store, StoreSet: set,
		Watch:   []string{ConfigFile, IssuersFile, identity.PubKeyFile},
		Adapter: residentAdapter, Contain: gateContainment(home), ExecEnv: resident.ExecEnvOf(os.Getenv),
		Hosts: hostNames(), Version: version(), Idle: idle, Log: log}, nil
}

// gateOrigin is the resident gate joule hook --then-serve becomes once it
// has answered, taken before the store is opened (so a change after this
// is seen as one), with the gate lock claimed when free; nil when it
// cannot be one.
func gateOrigin(e *env) *server.Gate {
	cfg, err := gateConfig(e.stderr, gateIdle())
	var o *server.Gate
	if err == nil {
		o, err = server.New(cfg)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "joule hook[%d]: not serving after this answer: %v\n", os.Getpid(), err)
		return nil
	}
	o.Claim()
	return o
}

// residentAdapter is the adapter joule hook would use for host in cwd:
// Windsurf's and Antigravity's stand in the hook's own directory for the
// cwd some events lack.
func residentAdapter(host, cwd string) (hook.Adapter, bool) {
	h, ok := hosts.Lookup(host)
	if !ok || h.Adapter == nil {
		return nil, false
	}
	return h.Adapter(cwd), true
}

func runGateStatus(e *env, args []string) error {
	fs := newFlags(e, "gate status", "gate status\n\nPrints the resident gate's pid, version, binary, socket, home and uptime; exits 1 when none runs.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	ok, text := gateState()
	if sys, err := machineSystem(); err != nil {
		ok, text = false, err.Error()
	} else if sys != nil {
		ok, text = systemGateState(sys)
	}
	fmt.Fprintln(e.stdout, text)
	if !ok {
		return &exitError{1}
	}
	return nil
}

// gateState describes the resident gate for doctor and gate status: ok is
// false when none runs (or it is not usable from here).
func gateState() (ok bool, text string) {
	cfg, err := gateConfig(nil, 0)
	if err != nil {
		return false, err.Error()
	}
	return server.Describe(cfg)
}

func runGateStop(e *env, args []string) error {
	fs := newFlags(e, "gate stop", "gate stop\n\nStops the resident gate of $JOULE_HOME after the requests in flight, and one still starting, and returns once it has exited; the next hook call starts a new one.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if sys, err := machineSystem(); err != nil || sys != nil {
		if err != nil {
			return err
		}
		resp, err := resident.AskSystem(sys, &resident.Request{Op: resident.OpStop, Home: sys.Home}, time.Now().Add(15*time.Second), time.Second)
		if err != nil {
			return err
		}
		e.stdout.Write(resp.Stdout)
		e.stderr.Write(resp.Stderr)
		if resp.Exit != 0 {
			return &exitError{resp.Exit}
		}
		return nil
	}
	cfg, err := gateConfig(nil, 0)
	if err != nil {
		return err
	}
	said, err := server.Stop(cfg)
	if err != nil {
		return err
	}
	fmt.Fprint(e.stdout, said)
	return nil
}

//go:build unix

package main

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/joulehook/joule/core/home"
	"github.com/joulehook/joule/plugins/hook/resident"
)

// systemWait is how long a system-mode client waits for a gate that is not
// listening (one restarting after its binary was upgraded) before it
// denies no-system-gate.
const systemWait = 3 * time.Second

// runSystem is the client of a managed machine (joule-hook --system, the
// line joule install --system writes into each host's managed settings):
// it asks the system gate named by the configuration at path (the default
// when empty) and nothing else. The environment selects nothing here: no
// JOULE_HOME, no store, no fallback to deciding in-process (the person's
// processes cannot read the system user's key), no gate started. A socket,
// directory or peer that is not the system user's is the host's deny
// gate-untrusted, sent nothing; a gate that does not answer is
// no-system-gate.
func runSystem(host, mode, path string, stdin *os.File, stdout, stderr *os.File, deadline time.Time, deny func(code, why string) int) int {
	sys, err := home.LoadSystem(path)
	if err != nil {
		code := resident.CodeNoSystemGate
		if errors.Is(err, home.ErrUntrusted) {
			code = resident.CodeGateUntrusted
		}
		return deny(code, "joule's system mode is not usable here: "+err.Error())
	}
	by := deadline.Add(-200 * time.Millisecond)
	conn, err := resident.DialSystem(sys, by, systemWait)
	if err != nil {
		if errors.Is(err, resident.ErrImpostor) {
			return deny(resident.CodeGateUntrusted, "refusing the gate on "+sys.Socket()+": "+err.Error()+"; nothing was sent to it (tell your administrator)")
		}
		return deny(resident.CodeNoSystemGate, "the system gate on "+sys.Socket()+" does not answer ("+err.Error()+"); an administrator starts it (systemctl start joule-gate, or see joule doctor)")
	}
	payload, err := readPayload(stdin, deadline)
	if err != nil {
		conn.Close()
		return deny("internal-error", "joule cannot read this "+host+" hook payload: "+err.Error())
	}
	cwd, _ := os.Getwd()
	userHome, _ := os.UserHomeDir()
	q := &resident.Request{Op: resident.OpHook, Host: host, Contain: mode, Cwd: cwd, Home: sys.Home, UserHome: userHome,
		Joule: filepath.Join(sys.Bin, "joule"), ExecEnv: resident.ExecEnvOf(os.Getenv), Payload: payload}
	for attempt := 0; ; attempt++ {
		resp, err := resident.Exchange(conn, q, by)
		conn.Close()
		switch {
		case err != nil:
			return deny(resident.CodeNoSystemGate, "the system gate on "+sys.Socket()+" gave no answer: "+err.Error())
		case resp.Kind == resident.Answer:
			stdout.Write(resp.Stdout)
			stderr.Write(resp.Stderr)
			return resp.Exit
		case resp.Kind == resident.Mismatch:
			return deny("internal-error", "the system gate does not serve this hook's environment: unset "+envNames()+" (they change what a contained command gets, and the system gate decides with its own)")
		}
		// Stale: the gate is restarting with a new binary; ask the new one once.
		if attempt > 0 {
			return deny(resident.CodeNoSystemGate, "the system gate on "+sys.Socket()+" kept restarting")
		}
		if conn, err = resident.DialSystem(sys, by, systemWait); err != nil {
			if errors.Is(err, resident.ErrImpostor) {
				return deny(resident.CodeGateUntrusted, "refusing the gate on "+sys.Socket()+": "+err.Error()+"; nothing was sent to it")
			}
			return deny(resident.CodeNoSystemGate, "the system gate on "+sys.Socket()+" did not come back after a restart ("+err.Error()+")")
		}
	}
}

func envNames() string {
	s := ""
	for i, k := range resident.ExecEnv {
		if i > 0 {
			s += " and "
		}
		s += k
	}
	return s
}

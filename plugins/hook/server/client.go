package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/joulehook/joule/plugins/hook/resident"
)

// Ask sends op (resident.OpStatus, resident.OpStop) to the gate of
// cfg.Home as a client would whose environment selects cfg's home, store
// and $HOME and this binary; sock is the socket it asked on.
func Ask(cfg Config, op string) (resp *resident.Response, sock string, err error) {
	dir := resident.Dir(cfg.Home)
	self, _ := executable()
	q := &resident.Request{Op: op, Home: cfg.Home, UserHome: cfg.UserHome, Store: cfg.Store, StoreSet: cfg.StoreSet, Joule: self}
	resp, err = resident.Ask(dir, q, time.Now().Add(5*time.Second))
	return resp, filepath.Join(dir, resident.SocketName), err
}

// Describe says whether a gate serves cfg's home and is usable from cfg's
// environment (ok), and text describes it (pid, version, binary, socket,
// home, uptime) or says why none is.
func Describe(cfg Config) (ok bool, text string) {
	resp, sock, err := Ask(cfg, resident.OpStatus)
	switch {
	case errors.Is(err, resident.ErrUnsafe):
		return false, err.Error()
	case err != nil:
		return false, "no resident gate runs (" + sock + "); joule-hook starts one on the first hook call"
	case resp.Kind == resident.Mismatch:
		return false, "the resident gate on " + sock + " serves another binary, store or configuration; hooks from here decide in-process"
	case resp.Kind == resident.Stale:
		return false, "the resident gate on " + sock + " was stale and is exiting; the next hook call starts a new one"
	}
	return true, strings.TrimSpace(string(resp.Stdout))
}

// stopWait bounds how long Stop waits for a gate to start, finish its
// requests and exit.
var stopWait = 15 * time.Second

// Stop stops the gate of cfg's home after the requests in flight, and one
// still starting, and returns once no gate process is left; said is what
// happened, for the user.
func Stop(cfg Config) (said string, err error) {
	lock := filepath.Join(resident.Dir(cfg.Home), resident.LockName)
	// A gate holds its lock from before it opens the store until it
	// exits: one starting does not answer yet, and one told to stop still
	// finishes its requests. Asking until the lock is free is what makes
	// "stopped" mean no gate process is left to touch the home.
	deadline := time.Now().Add(stopWait)
	var answered []byte
	for {
		resp, sock, err := Ask(cfg, resident.OpStop)
		switch {
		case errors.Is(err, resident.ErrUnsafe):
			return "", err
		case err == nil && resp.Kind == resident.Answer:
			answered = resp.Stdout
		case err == nil && answered == nil:
			return fmt.Sprintf("the gate on %s is not this home's or is already exiting\n", sock), nil
		}
		if !lockHeld(lock) {
			if answered == nil {
				return fmt.Sprintf("no resident gate runs (%s)\n", sock), nil
			}
			return string(answered), nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("a joule gate still holds %s after %v: it neither answers nor exits (see %s)", lock, stopWait, filepath.Join(cfg.Home, resident.LogName))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lockHeld reports whether a process holds the gate lock at path.
func lockHeld(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB) != nil {
		return true
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

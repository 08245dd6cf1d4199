//go:build unix

package resident_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/joulehook/joule/plugins/hook/resident"
)

// gateDir is a 0700 directory with a listening gate socket whose
// connections serve runs on.
func gateDir(t *testing.T, serve func(c net.Conn)) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "gate")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, resident.SocketName))
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(dir, resident.SocketName), 0o600)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return dir
}

// TestConnExchange: a request and its answer over the client's own
// socket; a gate that never answers is a timeout at the deadline, and
// one that hangs up is an error, never an answer.
func TestConnExchange(t *testing.T) {
	q := &resident.Request{Op: resident.OpHook, Host: "claude-code", Payload: []byte(`{"x":1}`)}
	t.Run("answered", func(t *testing.T) {
		dir := gateDir(t, func(c net.Conn) {
			defer c.Close()
			got, err := resident.ReadRequest(c)
			if err != nil {
				return
			}
			resident.WriteResponse(c, &resident.Response{Kind: resident.Answer, Exit: 2, Stdout: got.Payload, Stderr: []byte("why")})
		})
		resp, err := resident.Ask(dir, q, time.Now().Add(5*time.Second))
		if err != nil || resp.Exit != 2 || string(resp.Stdout) != `{"x":1}` || string(resp.Stderr) != "why" {
			t.Fatalf("%+v %v", resp, err)
		}
	})
	t.Run("no answer", func(t *testing.T) {
		hold := make(chan struct{})
		defer close(hold)
		dir := gateDir(t, func(c net.Conn) { <-hold; c.Close() })
		start := time.Now()
		resp, err := resident.Ask(dir, q, time.Now().Add(300*time.Millisecond))
		if !errors.Is(err, resident.ErrTimeout) || resp != nil {
			t.Fatalf("want ErrTimeout, got %+v %v", resp, err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("the deadline was not kept: %v", took)
		}
	})
	t.Run("hung up", func(t *testing.T) {
		dir := gateDir(t, func(c net.Conn) { resident.ReadRequest(c); c.Close() })
		if resp, err := resident.Ask(dir, q, time.Now().Add(5*time.Second)); err == nil {
			t.Fatalf("an answer from a gate that hung up: %+v", resp)
		}
	})
	t.Run("no gate", func(t *testing.T) {
		dir := gateDir(t, func(c net.Conn) { c.Close() })
		os.Remove(filepath.Join(dir, resident.SocketName))
		if _, err := resident.Dial(dir, time.Now().Add(time.Second)); err == nil {
			t.Fatal("dialled a socket that is gone")
		}
	})
}

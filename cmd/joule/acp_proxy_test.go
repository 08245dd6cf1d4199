package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/joulehook/joule/energy/proxy"
)

// TestDiscoverProxy: the remote agent is pointed at the proxy announced in
// $JOULE_HOME while its process lives, and at nothing otherwise.
func TestDiscoverProxy(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	home := t.TempDir()
	find := discoverProxy(home, log)
	if u := find(); u != "" {
		t.Fatalf("no announcement: %q", u)
	}
	remove, err := proxy.Announce(home, proxy.Announcement{Addr: "127.0.0.1:7411", PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	if u := find(); u != "http://127.0.0.1:7411" {
		t.Fatalf("a live proxy: %q", u)
	}
	remove()
	// A stale announcement (its process is gone) and a corrupt one: no proxy.
	os.WriteFile(filepath.Join(home, proxy.AddrFile), []byte(`{"addr":"127.0.0.1:1","pid":1073741824}`), 0o600)
	if u := find(); u != "" {
		t.Fatalf("a dead proxy: %q", u)
	}
	os.WriteFile(filepath.Join(home, proxy.AddrFile), []byte(`{`), 0o600)
	if u := find(); u != "" {
		t.Fatalf("a corrupt announcement: %q", u)
	}
}

package proxy

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAnnounceDiscover(t *testing.T) {
	home := t.TempDir()
	if a, err := Discover(home); a != nil || err != nil {
		t.Fatalf("empty home: %v, %v", a, err)
	}
	remove, err := Announce(home, Announcement{Addr: "127.0.0.1:7411", PID: os.Getpid(), Upstreams: map[string]string{"ollama": "http://127.0.0.1:11434"}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := Discover(home)
	if err != nil || a == nil || a.Addr != "127.0.0.1:7411" || a.Upstreams["ollama"] != "http://127.0.0.1:11434" {
		t.Fatalf("Discover = %+v, %v", a, err)
	}
	remove()
	if _, err := os.Stat(filepath.Join(home, AddrFile)); !os.IsNotExist(err) {
		t.Fatalf("the file outlived remove: %v", err)
	}
}

func TestDiscoverStaleAndBad(t *testing.T) {
	home := t.TempDir()
	// A pid far above any pid_max: no such process.
	if _, err := Announce(home, Announcement{Addr: "127.0.0.1:1", PID: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	if a, err := Discover(home); a != nil || err != nil {
		t.Fatalf("stale announcement: %+v, %v", a, err)
	}
	os.WriteFile(filepath.Join(home, AddrFile), []byte("{"), 0o600)
	if _, err := Discover(home); err == nil {
		t.Fatal("a corrupt file was accepted")
	}
}

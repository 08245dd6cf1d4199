//go:build unix

package home

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testSystem() *System {
	return &System{User: "joule", UID: 998, GID: 998, AdminGroup: "joule-admin", AdminGID: 997,
		Home: "/var/lib/joule", Run: "/run/joule", Bin: "/usr/local/libexec/joule", Proxy: "127.0.0.1:7411"}
}

// rootDir is a directory below the temporary one that TrustedPath accepts:
// root's (the test runs as root), 0755, below /tmp's sticky bit.
func rootDir(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the system configuration must be root's: run as root")
	}
	d, err := os.MkdirTemp("", "joule-system-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	os.Chmod(d, 0o755)
	if err := TrustedPath(d, 0); err != nil {
		t.Skipf("the temporary directory is not a trusted path here: %v", err)
	}
	return d
}

func TestSystemRoundTrip(t *testing.T) {
	d := rootDir(t)
	want := testSystem()
	p := filepath.Join(d, "system.conf")
	os.WriteFile(p, want.Format(), 0o644)
	got, err := LoadSystem(p)
	if err != nil {
		t.Fatal(err)
	}
	got.Path = ""
	if *got != *want {
		t.Fatalf("round trip: %+v, want %+v", got, want)
	}
	noProxy := testSystem()
	noProxy.Proxy = ""
	if strings.Contains(string(noProxy.Format()), "proxy") {
		t.Error("an empty proxy is written")
	}
}

// TestSystemRefused: every file a person could have written or changed,
// and every file that names no usable system, is refused.
func TestSystemRefused(t *testing.T) {
	d := rootDir(t)
	good := testSystem().Format()
	for _, c := range []struct {
		name    string
		setup   func(p string) string // returns the path to load
		untrust bool
	}{
		{"missing", func(p string) string { return p + ".none" }, false},
		{"group-writable file", func(p string) string { os.WriteFile(p, good, 0o664); os.Chmod(p, 0o664); return p }, true},
		{"another user's file", func(p string) string { os.WriteFile(p, good, 0o644); os.Chown(p, 4242, 4242); return p }, true},
		{"a symbolic link to it", func(p string) string {
			os.WriteFile(p, good, 0o644)
			os.Symlink(p, p+".link")
			return p + ".link"
		}, true},
		{"in a directory others may write", func(p string) string {
			sub := filepath.Join(filepath.Dir(p), "open")
			os.Mkdir(sub, 0o777)
			os.Chmod(sub, 0o777)
			os.WriteFile(filepath.Join(sub, "s.conf"), good, 0o644)
			return filepath.Join(sub, "s.conf")
		}, true},
		{"in another user's directory", func(p string) string {
			sub := filepath.Join(filepath.Dir(p), "theirs")
			os.Mkdir(sub, 0o755)
			os.Chown(sub, 4242, 4242)
			os.WriteFile(filepath.Join(sub, "s.conf"), good, 0o644)
			return filepath.Join(sub, "s.conf")
		}, true},
		{"below a symbolic link", func(p string) string {
			sub := filepath.Join(filepath.Dir(p), "real")
			os.Mkdir(sub, 0o755)
			os.WriteFile(filepath.Join(sub, "s.conf"), good, 0o644)
			os.Symlink(sub, filepath.Join(filepath.Dir(p), "via"))
			return filepath.Join(filepath.Dir(p), "via", "s.conf")
		}, true},
		{"root as the system user", func(p string) string {
			os.WriteFile(p, []byte(strings.Replace(string(good), "uid 998", "uid 0", 1)), 0o644)
			return p
		}, false},
		{"an unknown key", func(p string) string { os.WriteFile(p, append(good, "shell /bin/sh\n"...), 0o644); return p }, false},
		{"a key twice", func(p string) string { os.WriteFile(p, append(good, "home /tmp\n"...), 0o644); return p }, false},
		{"a relative home", func(p string) string {
			os.WriteFile(p, []byte(strings.Replace(string(good), "home /var/lib/joule", "home var/lib/joule", 1)), 0o644)
			return p
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			sub := filepath.Join(d, strings.ReplaceAll(c.name, " ", "-"))
			os.Mkdir(sub, 0o755)
			p := c.setup(filepath.Join(sub, "system.conf"))
			s, err := LoadSystem(p)
			if err == nil {
				t.Fatalf("loaded %+v", s)
			}
			if c.untrust && !errors.Is(err, ErrUntrusted) {
				t.Fatalf("want ErrUntrusted, got %v", err)
			}
		})
	}
}

func TestTrustedPath(t *testing.T) {
	d := rootDir(t)
	run := filepath.Join(d, "run")
	os.Mkdir(run, 0o755)
	os.Chown(run, 998, 998)
	if err := TrustedPath(run, 998); err != nil {
		t.Fatalf("the system user's own 0755 directory: %v", err)
	}
	if err := TrustedPath(run, 4242); !errors.Is(err, ErrUntrusted) {
		t.Fatalf("owned by someone else than the owner named: %v", err)
	}
	os.Chmod(run, 0o775)
	if err := TrustedPath(run, 998); !errors.Is(err, ErrUntrusted) {
		t.Fatalf("group-writable: %v", err)
	}
	sticky := filepath.Join(d, "sticky")
	os.Mkdir(sticky, 0o755)
	os.Chmod(sticky, os.ModeSticky|0o777)
	if err := TrustedPath(sticky, 0); !errors.Is(err, ErrUntrusted) {
		t.Fatalf("a world-writable sticky directory itself: %v", err)
	}
	below := filepath.Join(sticky, "below")
	os.Mkdir(below, 0o755)
	if err := TrustedPath(below, 0); err != nil {
		t.Fatalf("root's directory below a sticky one: %v", err)
	}
}

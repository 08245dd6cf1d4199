package home

import (
	"path/filepath"
	"testing"
)

func TestDir(t *testing.T) {
	for _, c := range []struct{ joule, xdg, home, want string }{
		{"/j", "/x", "/h", "/j"},
		{"", "/x", "/h", "/x/joule"},
		{"", "", "/h", "/h/.local/share/joule"},
	} {
		t.Setenv("JOULE_HOME", c.joule)
		t.Setenv("XDG_DATA_HOME", c.xdg)
		t.Setenv("HOME", c.home)
		got, err := Dir()
		if err != nil || got != filepath.FromSlash(c.want) {
			t.Errorf("JOULE_HOME=%q XDG_DATA_HOME=%q HOME=%q: %q, %v; want %q", c.joule, c.xdg, c.home, got, err, c.want)
		}
	}
	t.Setenv("JOULE_HOME", "")
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "")
	if _, err := Dir(); err == nil {
		t.Error("no home at all: want an error that says to set JOULE_HOME")
	}
}

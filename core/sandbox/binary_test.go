package sandbox

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestBuiltBinary(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	elf, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(write("ws", elf), link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		path string
		want bool
	}{
		{"a Go program", filepath.Join(dir, "ws"), true},
		{"Mach-O 64-bit", write("macho", []byte{0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1}), true},
		{"a shell script", write("run", []byte("#!/bin/sh\ntouch x\n")), false},
		{"ELF magic cut short", write("short", []byte{0x7f, 'E', 'L'}), false},
		{"empty", write("empty", nil), false},
		{"a link to a program (not followed)", link, false},
		{"a FIFO (no wait for a writer)", fifo, false},
		{"a directory", dir, false},
		{"absent", filepath.Join(dir, "absent"), false},
	} {
		if got := builtBinary(c.path); got != c.want {
			t.Errorf("%s: builtBinary = %v, want %v", c.name, got, c.want)
		}
	}
}

package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
)

func TestOffset(t *testing.T) {
	src := []byte("ab\n😀x\r\nπy\nlast")
	cases := []struct {
		line, char int
		want       int // -1: an error
	}{
		{0, 0, 0}, {0, 2, 2}, {0, 9, 2}, // past the end of a line is its end
		{1, 2, 7}, {1, 3, 8}, {1, 1, -1}, // 😀 is two UTF-16 units; half of it is an error
		{1, 5, 8},              // \r\n ends the line
		{2, 1, 12}, {2, 2, 13}, // π is one unit, two bytes
		{3, 4, 18}, {4, 0, -1}, {-1, 0, -1},
	}
	for _, c := range cases {
		got, err := offset(src, Position{c.line, c.char})
		if c.want < 0 {
			if err == nil {
				t.Errorf("%d:%d: want an error, got %d", c.line, c.char, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%d:%d: got %d, %v; want %d", c.line, c.char, got, err, c.want)
		}
	}
}

func TestPosition(t *testing.T) {
	src := []byte("x\n😀 = π + y\n")
	cases := []struct {
		line, col int
		want      Position
		err       bool
	}{
		{1, 1, Position{0, 0}, false},
		{2, 5, Position{1, 2}, false},  // after 😀: 4 bytes, 2 units
		{2, 12, Position{1, 8}, false}, // y: after π (2 bytes, 1 unit)
		{2, 2, Position{}, true},       // inside 😀
		{3, 1, Position{2, 0}, false},
		{4, 1, Position{}, true},
		{1, 3, Position{}, true},
	}
	for _, c := range cases {
		got, err := position(src, c.line, c.col)
		if (err != nil) != c.err || (!c.err && got != c.want) {
			t.Errorf("%d:%d: got %v, %v", c.line, c.col, got, err)
		}
	}
}

func TestApply(t *testing.T) {
	root := t.TempDir()
	uri := func(rel string) string { return fileURI(filepath.Join(root, rel)) }
	files := core.Files{"a.ts": []byte("let a = 1;\nlet b = a + a;\n"), "b.ts": []byte("x")}
	edit := func(l0, c0, l1, c1 int, text string) TextEdit {
		return TextEdit{Range{Position{l0, c0}, Position{l1, c1}}, text}
	}
	cases := []struct {
		name string
		we   WorkspaceEdit
		want string // a.ts after, or the error's text
		err  bool
	}{
		{"changes", WorkspaceEdit{Changes: map[string][]TextEdit{uri("a.ts"): {
			edit(1, 12, 1, 13, "z"), edit(0, 4, 0, 5, "z"), edit(1, 8, 1, 9, "z")}}},
			"let z = 1;\nlet b = z + z;\n", false},
		{"documentChanges", WorkspaceEdit{DocumentChanges: []json.RawMessage{json.RawMessage(
			`{"textDocument":{"uri":"` + uri("a.ts") + `","version":1},"edits":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":3}},"newText":"const"}]}`)}},
			"const a = 1;\nlet b = a + a;\n", false},
		{"overlap", WorkspaceEdit{Changes: map[string][]TextEdit{uri("a.ts"): {edit(0, 0, 0, 5, "x"), edit(0, 3, 0, 6, "y")}}}, "overlap", true},
		{"outside", WorkspaceEdit{Changes: map[string][]TextEdit{fileURI(filepath.Join(filepath.Dir(root), "etc.ts")): {edit(0, 0, 0, 0, "x")}}}, "outside the workspace", true},
		{"not in snapshot", WorkspaceEdit{Changes: map[string][]TextEdit{uri("c.ts"): {edit(0, 0, 0, 0, "x")}}}, "not in the workspace snapshot", true},
		{"file creation", WorkspaceEdit{DocumentChanges: []json.RawMessage{json.RawMessage(`{"kind":"create","uri":"` + uri("d.ts") + `"}`)}}, "create a file", true},
		{"not a file", WorkspaceEdit{Changes: map[string][]TextEdit{"untitled:1": {edit(0, 0, 0, 0, "x")}}}, "not a file", true},
		{"backwards", WorkspaceEdit{Changes: map[string][]TextEdit{uri("a.ts"): {edit(0, 5, 0, 2, "x")}}}, "ends before", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			next, _, err := Apply(root, files, &c.we)
			if c.err {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("want an error with %q, got %v", c.want, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(next["a.ts"]) != c.want || string(next["b.ts"]) != "x" {
				t.Errorf("got %q", next["a.ts"])
			}
			if string(files["a.ts"]) != "let a = 1;\nlet b = a + a;\n" {
				t.Error("Apply changed its input")
			}
		})
	}
}

// FuzzOffset: any position in any text converts without panicking, to an
// offset within the text.
func FuzzOffset(f *testing.F) {
	f.Add("ab\n😀x\r\nπy", 1, 2)
	f.Add("", 0, 0)
	f.Fuzz(func(t *testing.T, src string, line, char int) {
		off, err := offset([]byte(src), Position{line, char})
		if err == nil && (off < 0 || off > len(src)) {
			t.Fatalf("offset %d outside %d bytes", off, len(src))
		}
	})
}

// FuzzRead: whatever a server writes, the reader ends with an error or
// messages, never a panic.
func FuzzRead(f *testing.F) {
	f.Add("Content-Length: 2\r\n\r\n{}")
	f.Add("Content-Length: 40\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}")
	f.Add("Content-Length: -1\r\n\r\n")
	f.Add("\r\n\r\n")
	f.Fuzz(func(t *testing.T, in string) {
		c := &conn{msgs: make(chan *message), done: make(chan struct{})}
		go c.read(bufio.NewReader(strings.NewReader(in)))
		for range c.msgs {
		}
		if c.readErr == nil {
			t.Fatal("the reader ended without an error")
		}
	})
}

// TestHungServer: a server that never answers makes the request fail
// within Timeout (the server and its child are killed as one process
// group by close).
func TestHungServer(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\nsleep 600 &\nexec sleep 600\n"
	if err := os.WriteFile(filepath.Join(dir, "hang-server"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv(PathEnv, dir)
	saved, savedTimeout := Servers, Timeout
	Servers = []Server{{Name: "hang-server", Language: "Hang", Exts: []string{".hang"}, Checker: "true"}}
	Timeout = 2 * time.Second
	defer func() { Servers, Timeout = saved, savedTimeout }()
	root := t.TempDir()
	files := core.Files{"a.hang": []byte("x")}
	start := time.Now()
	_, err := Rename(context.Background(), root, files, "a.hang", 1, 1, "y")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the deadline, got %v", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("took %v", d)
	}
}

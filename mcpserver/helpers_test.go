package mcpserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWorkspaceResolve(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	root := filepath.Join(dir, "ws")
	os.MkdirAll(filepath.Join(root, "a", "b"), 0o755)
	os.MkdirAll(filepath.Join(dir, "out"), 0o755)
	os.Symlink(filepath.Join(root, "a"), filepath.Join(root, "in-link"))
	os.Symlink(filepath.Join(dir, "out"), filepath.Join(root, "out-link"))
	os.Symlink("../../out", filepath.Join(root, "a", "rel-out"))
	w, err := newWorkspace(root)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, want, err string
	}{
		{"a/b", filepath.Join(root, "a", "b"), ""},
		{"", root, ""},
		{".", root, ""},
		{"a/new/file.txt", filepath.Join(root, "a", "new", "file.txt"), ""},
		{"in-link/b", filepath.Join(root, "a", "b"), ""},
		{filepath.Join(root, "a"), filepath.Join(root, "a"), ""},
		{"../out", "", "outside the workspace"},
		{"a/../../out", "", "outside the workspace"},
		{"/etc/passwd", "", "outside the workspace"},
		{"out-link/x", "", "symbolic link"},
		{"out-link", "", "symbolic link"},
		{"a/rel-out/new.txt", "", "symbolic link"},
	}
	for _, tt := range tests {
		got, err := w.resolve(tt.path)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("resolve(%q) = %q, %v; want error %q", tt.path, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("resolve(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
		}
	}
	if _, err := newWorkspace(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing workspace accepted")
	}
}

func TestBinary(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"plain text\n", false},
		{"héllo wörld ✓", false},
		{"", false},
		{"a\x00b", true},
		{"caf\xe9 au lait", true},
		{"cut rune at end \xe2\x9c", false}, // the sniff window may cut a rune
		{"\xff\xfe\xfd\xfc\xfb", true},
	}
	for _, tt := range tests {
		if got := binary([]byte(tt.in)); got != tt.want {
			t.Errorf("binary(%q) = %v", tt.in, got)
		}
	}
}

func TestReadTextRanges(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f.txt")
	os.WriteFile(p, []byte("one\ntwo\nthree\nfour"), 0o644)
	long := filepath.Join(t.TempDir(), "long.txt")
	os.WriteFile(long, []byte(strings.Repeat("y", 200<<10)+"\nsecond\n"), 0o644)
	tests := []struct {
		path          string
		offset, limit int
		max           int64
		want          string
		truncated     bool
	}{
		{p, 0, 0, 100, "one\ntwo\nthree\nfour", false},
		{p, 2, 2, 100, "two\nthree\n", false},
		{p, 4, 10, 100, "four", false},
		{p, 9, 1, 100, "", false},
		{p, 0, 1, 100, "one\n", false},
		{p, 1, 0, 5, "one\nt", true},
		{long, 2, 1, 1 << 20, "second\n", false}, // a line longer than the read buffer counts once
	}
	for _, tt := range tests {
		got, tr, err := readText(tt.path, tt.offset, tt.limit, tt.max)
		if err != nil || got != tt.want || tr != tt.truncated {
			t.Errorf("readText(%d,%d,%d) = %q,%v,%v; want %q,%v", tt.offset, tt.limit, tt.max, got, tr, err, tt.want, tt.truncated)
		}
	}
	if _, _, err := readText(p, 0, 0, 5); err == nil || !strings.Contains(err.Error(), "read it in parts") {
		t.Errorf("over the limit: %v", err)
	}
}

func TestTarget(t *testing.T) {
	tests := map[string]string{
		"joule://sessions":                         "*",
		"joule://sessions?cursor=100":              "*",
		"joule://sessions/s1":                      "s1",
		"joule://sessions/s1/receipts":             "s1",
		"joule://sessions/s1/receipts/4":           "",
		"joule://sessions/s1/receipts?after=3":     "s1",
		"joule://sessions/s1/other":                "",
		"joule://sessions/a%20b%2Fc%3Ad":           "a b/c:d",
		"joule://checkpoint":                       "*",
		"joule://grants":                           "*",
		"joule://steward":                          "",
		"http://sessions/s1":                       "",
		"joule://sessions/%zz":                     "",
		sessionURI("weird id/\x00✓") + "/receipts": "weird id/\x00✓",
	}
	for uri, want := range tests {
		if got := target(uri); got != want {
			t.Errorf("target(%q) = %q, want %q", uri, got, want)
		}
	}
}

func TestHookPayloadEvent(t *testing.T) {
	tests := []struct {
		name, in, tool, input, err string
	}{
		{"claude code", `{"session_id":"s","tool_name":"Bash","tool_input":{"command":"ls"},"cwd":"/w","hook_event_name":"PreToolUse"}`, "Bash", `{"command":"ls"}`, ""},
		{"action event", `{"session_id":"s","tool":"Read","input":{"file_path":"a"},"cwd":"/w"}`, "Read", `{"file_path":"a"}`, ""},
		{"input as text", `{"session_id":"s","tool_name":"mcp__x__y","tool_input":"{\"a\":1}","cwd":"/w"}`, "mcp__x__y", `{"a":1}`, ""},
		{"input text not json", `{"session_id":"s","tool_name":"X","tool_input":"not json","cwd":"/w"}`, "", "", "not JSON"},
		{"nested payload", `{"payload":{"session_id":"s","tool_name":"Bash","tool_input":{},"cwd":"/w"}}`, "Bash", `{}`, ""},
		{"payload text", `{"payload":"{\"session_id\":\"s\",\"tool\":\"Read\",\"input\":{},\"cwd\":\"/w\"}"}`, "Read", `{}`, ""},
		{"double nesting", `{"payload":{"payload":{}}}`, "", "", "must not nest"},
		{"payload array", `{"payload":[1]}`, "", "", "not a hook payload"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p hookPayload
			if err := json.Unmarshal([]byte(tt.in), &p); err != nil {
				t.Fatal(err)
			}
			b, _, err := p.event()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ev struct {
				Tool  string          `json:"tool"`
				Input json.RawMessage `json:"input"`
			}
			json.Unmarshal(b, &ev)
			if ev.Tool != tt.tool || string(ev.Input) != tt.input {
				t.Errorf("event %s", b)
			}
		})
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{"s1": "s1", "a b": "a%20b", "a/b:c": "a%2Fb%3Ac", "é": "%C3%A9", "A-z_0.9~": "A-z_0.9~"} {
		if got := escape(in); got != want {
			t.Errorf("escape(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzHookPayload(f *testing.F) {
	f.Add([]byte(`{"session_id":"s","tool_name":"Bash","tool_input":{"command":"ls"},"cwd":"/w"}`))
	f.Add([]byte(`{"payload":"{\"payload\":\"x\"}"}`))
	f.Add([]byte(`{"tool_input":"\"\\\"\""}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p hookPayload
		if json.Unmarshal(b, &p) != nil {
			return
		}
		ev, _, err := p.event()
		if err == nil && !json.Valid(ev) {
			t.Fatalf("invalid event JSON %q", ev)
		}
	})
}

func FuzzTarget(f *testing.F) {
	for _, s := range []string{"joule://sessions/s1", "joule://sessions", "joule://sessions/%2F/receipts", "joule://x", "::"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		target(id)
		if id != "" && strings.ToValidUTF8(id, "") == id {
			if got := target(sessionURI(id)); got != id {
				t.Fatalf("target(sessionURI(%q)) = %q", id, got)
			}
		}
	})
}

func FuzzReadText(f *testing.F) {
	f.Add([]byte("a\nb\n"), 0, 0)
	f.Add([]byte("\x00"), 1, 1)
	f.Fuzz(func(t *testing.T, content []byte, offset, limit int) {
		p := filepath.Join(t.TempDir(), "f")
		os.WriteFile(p, content, 0o644)
		s, _, err := readText(p, offset%100, limit%100, 64)
		if err == nil && len(s) > 64*3 {
			t.Fatalf("output %d bytes over the cap", len(s))
		}
	})
}

package acpagent

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers/l0"
)

// bufferEditor is an editor holding unsaved buffers: fs/read_text_file
// answers a buffer if one is open, else the disk; fs/write_text_file
// changes the buffer only (the user saves later), unless readOnly.
type bufferEditor struct {
	*client
	readOnly bool

	mu       sync.Mutex
	buffers  map[string]string // absolute path → unsaved content
	writes   map[string]string
	volatile map[string]int // absolute path → reads so far: the user keeps typing
}

func newBufferEditor(readOnly bool) *bufferEditor {
	return &bufferEditor{client: &client{text: map[acp.SessionId]*strings.Builder{}}, readOnly: readOnly,
		buffers: map[string]string{}, writes: map[string]string{}, volatile: map[string]int{}}
}

func (e *bufferEditor) caps() acp.ClientCapabilities {
	return acp.ClientCapabilities{Fs: acp.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: !e.readOnly}}
}

func (e *bufferEditor) ReadTextFile(_ context.Context, p acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	e.mu.Lock()
	b, ok := e.buffers[p.Path]
	if n, v := e.volatile[p.Path]; v {
		e.volatile[p.Path] = n + 1
		b, ok = fmt.Sprintf("old typing %d\n", n), true
	}
	e.mu.Unlock()
	if ok {
		return acp.ReadTextFileResponse{Content: b}, nil
	}
	disk, err := os.ReadFile(p.Path)
	if err != nil {
		return acp.ReadTextFileResponse{}, acp.NewInvalidParams(map[string]any{"path": "no such file: " + p.Path})
	}
	return acp.ReadTextFileResponse{Content: string(disk)}, nil
}

func (e *bufferEditor) WriteTextFile(_ context.Context, p acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	if e.readOnly {
		return acp.WriteTextFileResponse{}, acp.NewMethodNotFound("fs/write_text_file")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.buffers[p.Path] = p.Content
	e.writes[p.Path] = p.Content
	return acp.WriteTextFileResponse{}, nil
}

func (e *bufferEditor) written(abs string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.writes[abs]
	return s, ok
}

func writeWS(t *testing.T, ws string, files map[string]string) {
	t.Helper()
	for p, s := range files {
		full := filepath.Join(ws, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fixture) prompt(t *testing.T, sid acp.SessionId, text string) {
	t.Helper()
	pr, err := f.conn.Prompt(context.Background(), acp.PromptRequest{SessionId: sid, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
	if err != nil || pr.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("%q: %v %v", text, pr.StopReason, err)
	}
}

func (f *fixture) session(t *testing.T) acp.SessionId {
	t.Helper()
	ns, err := f.conn.NewSession(context.Background(), acp.NewSessionRequest{Cwd: f.ws, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	return ns.SessionId
}

// TestUnsavedBuffers: an op is computed on the editor's unsaved buffer,
// not the disk; its prior tree is the buffer's content, and it is written
// back through the editor.
func TestUnsavedBuffers(t *testing.T) {
	ed := newBufferEditor(false)
	f := newFixtureWith(t, liveGrant([]string{"l0", "l1"}), ed, ed.client, ed.caps(), nil)
	writeWS(t, f.ws, map[string]string{"a.txt": "old disk\n", "b.txt": "old b\n"})
	a := filepath.Join(f.ws, "a.txt")
	ed.buffers[a] = "old buffer old\n"
	sid := f.session(t)
	f.prompt(t, sid, `/replace "old" "new"`)
	if got, _ := ed.written(a); got != "new buffer new\n" {
		t.Fatalf("a.txt written as %q\n%s", got, f.cl.said(sid))
	}
	if got, _ := ed.written(filepath.Join(f.ws, "b.txt")); got != "new b\n" {
		t.Fatalf("b.txt written as %q", got)
	}
	if disk, _ := os.ReadFile(a); string(disk) != "old disk\n" {
		t.Fatalf("the disk was written: %q", disk)
	}
	if !strings.Contains(f.cl.said(sid), "replaced 3 occurrence(s)") {
		t.Fatalf("said:\n%s", f.cl.said(sid))
	}
	// The op's prior is the tree with the buffer: the L0 entry is keyed on it.
	prior := core.Files{"a.txt": []byte("old buffer old\n"), "b.txt": []byte("old b\n")}
	tree, _ := prior.Tree()
	cache, err := l0.Open(filepath.Join(filepath.Dir(f.ops), l0.Dir))
	if err != nil {
		t.Fatal(err)
	}
	pub := f.id.Public()
	op, err := cache.Get(`/replace "old" "new"`, tree.ID(), ed25519.PublicKey(pub[:]))
	if err != nil || op == nil || op.Op.Prior != tree.ID() {
		t.Fatalf("no op on the buffer's tree in L0: %v %v", op, err)
	}
}

// TestUnsavedBufferRename: the rename's type-check sees the buffer, so a
// reference that exists only in it is renamed too.
func TestUnsavedBufferRename(t *testing.T) {
	ed := newBufferEditor(false)
	f := newFixtureWith(t, liveGrant([]string{"l0", "l1"}), ed, ed.client, ed.caps(), nil)
	writeWS(t, f.ws, map[string]string{
		"go.mod":     "module example.com/m\n\ngo 1.22\n",
		"lib/lib.go": "package lib\n\n// Counter counts.\ntype Counter struct{ n int }\n\nfunc New() *Counter { return &Counter{} }\n",
		"main.go":    "package main\n\nimport \"example.com/m/lib\"\n\nfunc main() { _ = lib.New() }\n",
	})
	main := filepath.Join(f.ws, "main.go")
	ed.buffers[main] = "package main\n\nimport \"example.com/m/lib\"\n\nfunc main() {\n\tvar c *lib.Counter = lib.New()\n\t_ = c\n}\n"
	sid := f.session(t)
	f.prompt(t, sid, "rename Counter to Tally")
	got, ok := ed.written(main)
	if !ok || !strings.Contains(got, "var c *lib.Tally = lib.New()") {
		t.Fatalf("main.go written as %q (%v)\n%s", got, ok, f.cl.said(sid))
	}
	if got, _ := ed.written(filepath.Join(f.ws, "lib/lib.go")); !strings.Contains(got, "type Tally struct") {
		t.Fatalf("lib.go written as %q", got)
	}
}

// TestUnsavedBufferReadOnlyEditor: an editor that offers reads but not
// writes cannot take a change computed on its unsaved buffer: refused,
// nothing written.
func TestUnsavedBufferReadOnlyEditor(t *testing.T) {
	ed := newBufferEditor(true)
	f := newFixtureWith(t, liveGrant([]string{"l0", "l1"}), ed, ed.client, ed.caps(), nil)
	writeWS(t, f.ws, map[string]string{"a.txt": "old disk\n", "b.txt": "old b\n"})
	a := filepath.Join(f.ws, "a.txt")
	ed.buffers[a] = "old buffer\n"
	sid := f.session(t)
	f.prompt(t, sid, `/replace "old" "new"`)
	if !strings.Contains(f.cl.said(sid), "a.txt has unsaved changes in the editor, which does not offer fs/write_text_file") {
		t.Fatalf("said:\n%s", f.cl.said(sid))
	}
	for p, want := range map[string]string{"a.txt": "old disk\n", "b.txt": "old b\n"} {
		if disk, _ := os.ReadFile(filepath.Join(f.ws, p)); string(disk) != want {
			t.Errorf("%s = %q: half-applied", p, disk)
		}
	}
}

// TestUnsavedBufferKeepsChanging: a buffer that differs on every read (the
// user keeps typing) is given up on after a few recomputations, nothing
// written.
func TestUnsavedBufferKeepsChanging(t *testing.T) {
	ed := newBufferEditor(false)
	f := newFixtureWith(t, liveGrant([]string{"l0", "l1"}), ed, ed.client, ed.caps(), nil)
	writeWS(t, f.ws, map[string]string{"a.txt": "old disk\n"})
	ed.volatile[filepath.Join(f.ws, "a.txt")] = 0
	sid := f.session(t)
	f.prompt(t, sid, `/replace "old" "new"`)
	if said := f.cl.said(sid); !strings.Contains(said, "kept changing") {
		t.Fatalf("said:\n%s", said)
	}
	if len(ed.writes) != 0 {
		t.Fatalf("written: %v", ed.writes)
	}
}

// TestUnsavedBufferRemote: a remote agent (L4) reads a workspace file
// through the editor's buffer, and its write builds on that buffer.
func TestUnsavedBufferRemote(t *testing.T) {
	ed := newBufferEditor(false)
	f := newFixtureWith(t, remoteGrant(nil, nil, nil), ed, ed.client, ed.caps(), withRemote(t, 0))
	writeWS(t, f.ws, map[string]string{"a.txt": "disk\n"})
	a := filepath.Join(f.ws, "a.txt")
	ed.buffers[a] = "buffer\n"
	sid := f.session(t)
	f.prompt(t, sid, "write a.txt from remote")
	if got, _ := ed.written(a); got != "buffer\nfrom remote\n" {
		t.Fatalf("a.txt written as %q\n%s", got, f.cl.said(sid))
	}
	if disk, _ := os.ReadFile(a); string(disk) != "disk\n" {
		t.Fatalf("the disk was written: %q", disk)
	}
}

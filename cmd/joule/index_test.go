package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestIndexCommand runs the real binary: build, update, status, search,
// and the errors a user can make.
func TestIndexCommand(t *testing.T) {
	home := t.TempDir()
	ws := t.TempDir()
	env := []string{"JOULE_HOME=" + home}
	write := func(rel, data string) {
		t.Helper()
		p := filepath.Join(ws, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/w\n")
	write("pay/pay.go", "package pay\n\n// Refund returns money to a customer.\nfunc Refund(cents int) error { return nil }\n")
	write(".gitignore", "secret/\n")
	write("secret/key.go", "package secret\n\nfunc Key() string { return \"x\" }\n")

	r := joule(t, nil, env, "index", "--root", ws)
	if r.code != 0 || !strings.Contains(r.stdout, "3 files (3 added") || !strings.Contains(r.stdout, "lexical only: no embedding model configured") {
		t.Fatalf("first index: %+v", r)
	}
	if !strings.Contains(r.stderr, "scanning") || !strings.Contains(r.stderr, "indexing: ") {
		t.Errorf("no progress on stderr: %q", r.stderr)
	}
	r = joule(t, nil, env, "index", "--root", ws)
	if r.code != 0 || !strings.Contains(r.stdout, "0 added, 0 changed, 0 renamed, 0 removed, 3 unchanged") {
		t.Fatalf("second index: %+v", r)
	}
	r = joule(t, nil, env, "index", "--root", ws, "--status")
	if r.code != 0 || !strings.Contains(r.stdout, "files    3") || !strings.Contains(r.stdout, filepath.Join(home, "index")) {
		t.Fatalf("status: %+v", r)
	}
	r = joule(t, nil, env, "index", "--root", ws, "--search", "refund money")
	if r.code != 0 || !strings.Contains(r.stdout, "pay/pay.go:3-4 Refund") || strings.Contains(r.stdout, "secret/") {
		t.Fatalf("search: %+v", r)
	}

	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"index", "--root", filepath.Join(ws, "missing")}, 1, "joule: l2: root"},
		{[]string{"index", "extra"}, 2, "joule:"},
		{[]string{"index", "--embed-ollama", "http://x", "--embed-openai", "http://y"}, 2, "exclusive"},
		{[]string{"index", "--bogus"}, 2, "flag provided but not defined"},
	} {
		r := joule(t, nil, env, tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("joule %v: code %d, stderr %q; want %d and %q", tt.args, r.code, r.stderr, tt.code, tt.want)
		}
	}
}

// TestIndexCommandEmbeds indexes through a fake Ollama on 127.0.0.1, then
// sees the model fail and retrieval fall back with the notice.
func TestIndexCommandEmbeds(t *testing.T) {
	var fail atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/show" && !fail.Load() {
			w.Write([]byte(`{"capabilities":["embedding"]}`))
			return
		}
		if r.URL.Path != "/api/embed" || fail.Load() {
			http.Error(w, `{"error":"unavailable"}`, http.StatusServiceUnavailable)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		vs := make([][]float32, len(req.Input))
		for i, s := range req.Input {
			vs[i] = []float32{float32(len(s)%7) + 1, float32(strings.Count(s, "e")) + 1, 1}
		}
		json.NewEncoder(w).Encode(map[string]any{"model": req.Model, "embeddings": vs})
	}))
	defer srv.Close()
	home, ws := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.py"), []byte("def refund():\n    pass\n"), 0o644)
	env := []string{"JOULE_HOME=" + home}
	r := joule(t, nil, env, "index", "--root", ws, "--embed-ollama", srv.URL, "--search", "refund")
	if r.code != 0 || !strings.Contains(r.stdout, "1 embedded") || !strings.Contains(r.stdout, "bm25+symbol+vector") || strings.Contains(r.stdout, "lexical only") {
		t.Fatalf("embedded index: %+v", r)
	}
	fail.Store(true)
	r = joule(t, nil, env, "index", "--root", ws, "--embed-ollama", srv.URL, "--search", "refund")
	if r.code != 0 || !strings.Contains(r.stdout, "lexical only: embedding failed") {
		t.Fatalf("fallback: %+v", r)
	}
}

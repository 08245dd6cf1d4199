package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/joulehook/joule/energy/proxy"
)

// scriptedOllama answers /api/chat with its replies in order, streamed as
// Ollama does (NDJSON, usage in the final object), and records the session
// each call named.
type scriptedOllama struct {
	mu       sync.Mutex
	replies  []string
	sessions []string
}

func (s *scriptedOllama) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct{ Model string }
	if r.URL.Path != "/api/chat" || json.NewDecoder(r.Body).Decode(&req) != nil {
		w.WriteHeader(404)
		w.Write([]byte(`{"error":"not found"}`))
		return
	}
	s.mu.Lock()
	s.sessions = append(s.sessions, r.Header.Get("X-Joule-Session"))
	reply := "NO_EDIT"
	if len(s.replies) > 0 {
		reply, s.replies = s.replies[0], s.replies[1:]
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	for _, l := range strings.SplitAfter(reply, "\n") {
		enc.Encode(map[string]any{"model": req.Model, "created_at": "2026-11-30T09:00:00Z", "message": map[string]string{"role": "assistant", "content": l}, "done": false})
	}
	enc.Encode(map[string]any{"model": req.Model, "created_at": "2026-11-30T09:00:01Z", "message": map[string]string{"role": "assistant", "content": ""},
		"done": true, "done_reason": "stop", "prompt_eval_count": 700, "eval_count": 30})
}

// TestACPLocalTiers runs the real binary as an editor would, configured by
// config.json's tiers section: a lookup closes at L2; an edit goes to L3,
// whose model calls are routed through the running joule proxy (found by
// its announcement in $JOULE_HOME) and metered there.
func TestACPLocalTiers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go toolchain")
	}
	ol := &scriptedOllama{replies: []string{"calc/calc.go\n<<<<<<< SEARCH\n\treturn 0\n=======\n\treturn a + b\n>>>>>>> REPLACE\n"}}
	srv := httptest.NewServer(ol)
	defer srv.Close()
	env, ws := initHome(t, "--budget", "10kJ")
	home := strings.TrimPrefix(env[0], "JOULE_HOME=")
	writeTree(t, ws, map[string]string{
		"go.mod":        "module example.com/ws\n\ngo 1.21\n",
		"calc/calc.go":  "package calc\n\n// Add returns the sum of a and b.\nfunc Add(a, b int) int {\n\treturn 0\n}\n",
		"calc/greet.go": "package calc\n\n// Greeting says hello.\nfunc Greeting(name string) string {\n\treturn \"hello \" + name\n}\n",
	})
	cfg := `{"tiers": {"on": ["l0", "l2", "l3"], "l3": {"provider": "ollama", "base_url": "` + srv.URL + `", "model": "qwen2.5-coder:7b", "timeout": "60s"}}}`
	if err := os.WriteFile(filepath.Join(home, ConfigFile), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stopProxy := startDaemon(t, env, "proxy", "--listen", "127.0.0.1:0", "--ollama", srv.URL, "--quiet")
	if a, err := proxy.Discover(home); err != nil || a == nil || a.Upstreams["ollama"] != srv.URL {
		t.Fatalf("the running proxy is not announced: %+v, %v", a, err)
	}
	r := startEditor(t, env, ws)
	r.newSession(ws)
	_, out := r.prompt("where is Greeting defined")
	if !strings.Contains(out, "calc/greet.go") || !strings.Contains(out, "L2 · ") {
		t.Fatalf("the lookup did not close at L2:\n%s\n%s", out, r.err.String())
	}
	_, out = r.prompt("make Add return the sum of a and b")
	if !strings.Contains(out, "L3 · ") {
		t.Fatalf("the edit did not close at L3:\n%s\n%s", out, r.err.String())
	}
	if b := readFile(t, filepath.Join(ws, "calc", "calc.go")); !strings.Contains(b, "return a + b") {
		t.Fatalf("calc.go:\n%s", b)
	}
	if len(ol.sessions) != 1 || ol.sessions[0] != string(r.sid) {
		t.Fatalf("the model call named sessions %q, want [%s]", ol.sessions, r.sid)
	}
	// The call went through the proxy: its receipt is the proxy's
	// (coverage enforced), and L3 sealed none of its own.
	x := joule(t, nil, env, "receipts", "export", string(r.sid), "--format", "jsonl")
	if x.code != 0 {
		t.Fatalf("export: %s", x.stderr)
	}
	var enforced, local int
	for _, line := range strings.Split(strings.TrimSpace(x.stdout), "\n") {
		var rec struct{ Envelope string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		// CBOR keeps text strings as they are: the payload's unit and
		// coverage values are visible in the envelope's bytes.
		env, err := base64.RawURLEncoding.DecodeString(rec.Envelope)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(env, []byte("model-call")) {
			switch {
			case bytes.Contains(env, []byte("henforced")):
				enforced++
			case bytes.Contains(env, []byte("elocal")):
				local++
			}
		}
	}
	if enforced != 1 || local != 0 {
		t.Fatalf("model-call receipts: %d enforced, %d local; want 1, 0\n%s", enforced, local, x.stdout)
	}
	stopProxy()
	if a, _ := proxy.Discover(home); a != nil {
		t.Fatalf("the stopped proxy is still announced: %+v", a)
	}
}

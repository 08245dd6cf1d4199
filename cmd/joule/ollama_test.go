package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/joulehook/joule/energy/proxy"
	"github.com/joulehook/joule/tiers/ollamatest"
)

// The tests of this file run joule, the binary, against a real Ollama
// server (tiers/ollamatest: built from source by make deps, serving tiny
// models the tests write): joule proxy metering every API joule meters for
// Ollama, joule acp's L2 and L3, and joule doctor.

const (
	tinyChat    = "tinyllama-joule"
	tinyEndless = "tinyllama-joule-endless"
	tinyBadEdit = "tinyllama-joule-bad"
	tinyEmbed   = "tiny-embed"
)

// tinyOllama starts a real Ollama with the test models and a tap in front
// of it that records what the server sent.
func tinyOllama(t *testing.T) (*ollamatest.Server, *ollamatest.Tap) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a real Ollama server")
	}
	s := ollamatest.Start(t, ollamatest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for name, spec := range map[string]ollamatest.Spec{
		tinyChat:    {Seed: 1, Words: 40},
		tinyEndless: {Seed: 2, Words: 50, Endless: true},
		tinyBadEdit: {Seed: 3, Reply: []string{"calc/calc.go\n", "<<<<<<< SEARCH\n", "\treturn 0\n", "=======\n", "\treturn a + c\n", ">>>>>>> REPLACE\n"}},
		tinyEmbed:   {Seed: 6, Embedding: true},
	} {
		if err := s.Create(ctx, name, spec); err != nil {
			t.Fatal(err)
		}
	}
	return s, ollamatest.NewTap(t, s.URL)
}

// modelCalls are the model-call receipts of session, one per call (a
// receipt that covers several is split into its calls).
func modelCalls(t *testing.T, env []string, session string) []map[string]any {
	t.Helper()
	x := joule(t, nil, env, "receipts", "export", session, "--format", "jsonl")
	if x.code != 0 {
		t.Fatalf("receipts export: %s", x.stderr)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(x.stdout), "\n") {
		if line == "" {
			continue
		}
		var rec struct{ Envelope, Verdict string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Verdict != "ok" {
			t.Errorf("a receipt does not verify: %s", line)
		}
		env, err := base64.RawURLEncoding.DecodeString(rec.Envelope)
		if err != nil {
			t.Fatal(err)
		}
		var sign1 struct {
			_           struct{} `cbor:",toarray"`
			Protected   []byte
			Unprotected map[any]any
			Payload     []byte
			Signature   []byte
		}
		if err := cbor.Unmarshal(env, &sign1); err != nil {
			t.Fatal(err)
		}
		var r map[string]any
		if err := cbor.Unmarshal(sign1.Payload, &r); err != nil {
			t.Fatal(err)
		}
		if r["jc_receipt"] != "efficiency/1" || r["unit"] != "model-call" {
			continue
		}
		calls, _ := r["calls"].([]any)
		if len(calls) == 0 {
			out = append(out, r)
			continue
		}
		for _, c := range calls {
			m := c.(map[any]any)
			call := map[string]any{"energy_provenance": r["energy_provenance"], "coverage": r["coverage"]}
			for k, v := range m {
				call[k.(string)] = v
			}
			out = append(out, call)
		}
	}
	return out
}

// waitCalls waits for n model-call receipts in session: the proxy seals
// them just after it answers.
func waitCalls(t *testing.T, env []string, session string, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		rs := modelCalls(t, env, session)
		if len(rs) >= n || time.Now().After(deadline) {
			return rs
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func u64(v any) uint64 {
	switch n := v.(type) {
	case uint64:
		return n
	case int64:
		return uint64(n)
	case float64:
		return uint64(n)
	}
	return 0
}

// TestRealOllamaThroughProxy sends every Ollama API joule proxy meters,
// streamed and not, and the OpenAI-compatible chat and embeddings (the
// vLLM path), through joule proxy to the real server; each call's receipt
// carries the tokens the server reported, priced by the class the model's
// name gives.
func TestRealOllamaThroughProxy(t *testing.T) {
	_, tap := tinyOllama(t)
	env, _ := initHome(t, "--budget", "100kJ")
	base, _ := startDaemon(t, env, "proxy", "--listen", "127.0.0.1:0", "--ollama", tap.URL, "--openai", tap.URL+"/v1", "--quiet")
	msgs := `[{"role": "user", "content": "make Add return the sum of a and b"}]`
	for i, tc := range []struct {
		name, path, body string
		tapPath          string // what reached the server
		stream           bool
	}{
		{"chat streamed", "/api/chat", `{"model": "` + tinyChat + `", "messages": ` + msgs + `}`, "/api/chat", true},
		{"chat not streamed", "/api/chat", `{"model": "` + tinyChat + `", "messages": ` + msgs + `, "stream": false}`, "/api/chat", false},
		{"generate streamed", "/api/generate", `{"model": "` + tinyChat + `", "prompt": "hello", "options": {"num_predict": 9}}`, "/api/generate", true},
		{"generate not streamed", "/api/generate", `{"model": "` + tinyChat + `", "prompt": "hello", "stream": false}`, "/api/generate", false},
		{"openai chat streamed with usage", "/v1/chat/completions", `{"model": "` + tinyChat + `", "messages": ` + msgs + `, "stream": true, "stream_options": {"include_usage": true}, "max_tokens": 11}`, "/v1/chat/completions", true},
		{"openai chat streamed, usage asked by the proxy", "/v1/chat/completions", `{"model": "` + tinyChat + `", "messages": ` + msgs + `, "stream": true}`, "/v1/chat/completions", true},
		{"openai chat not streamed", "/v1/chat/completions", `{"model": "` + tinyChat + `", "messages": ` + msgs + `}`, "/v1/chat/completions", false},
		{"embed", "/api/embed", `{"model": "` + tinyEmbed + `", "input": ["func Add(a, b int) int", "the quick brown fox"]}`, "/api/embed", false},
		{"openai embeddings", "/v1/embeddings", `{"model": "` + tinyEmbed + `", "input": ["func Add(a, b int) int"]}`, "/v1/embeddings", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			session := fmt.Sprintf("ollama-proxy-%d", i)
			before := len(tap.Calls(tc.tapPath))
			req, _ := http.NewRequest("POST", base+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Joule-Session", session)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("HTTP %d: %s", resp.StatusCode, body)
			}
			calls := tap.Calls(tc.tapPath)
			if len(calls) != before+1 {
				t.Fatalf("%d calls reached the server", len(calls)-before)
			}
			server := calls[len(calls)-1].Usage()
			client := ollamatest.ParseUsage(body)
			if !server.OK || !server.Done || server.Input == 0 {
				t.Fatalf("the server reported no usage: %+v\n%s", server, calls[len(calls)-1].Body)
			}
			if tc.name == "openai chat streamed, usage asked by the proxy" {
				// The proxy asked for the usage chunk and keeps it from a
				// client that did not.
				if client.OK {
					t.Errorf("the client got a usage chunk it did not ask for:\n%s", body)
				}
			} else if client != server {
				t.Errorf("the client got %+v, the server sent %+v", client, server)
			}
			rs := waitCalls(t, env, session, 1)
			if len(rs) != 1 {
				t.Fatalf("%d model-call receipts in %s, want 1", len(rs), session)
			}
			r := rs[0]
			t.Logf("server: %d in, %d out; receipt: %v in, %v out, %v µJ, %s: %s", server.Input, server.Output, r["input_tokens"], r["output_tokens"], r["estimated_uj"], r["energy_provenance"], r["note"])
			if u64(r["input_tokens"]) != server.Input || u64(r["output_tokens"]) != server.Output || u64(r["cached_input_tokens"]) != 0 {
				t.Errorf("the receipt carries %v in, %v out; the server reported %d in, %d out", r["input_tokens"], r["output_tokens"], server.Input, server.Output)
			}
			if r["status"] != "complete" || r["coverage"] != "enforced" {
				t.Errorf("receipt status %v, coverage %v", r["status"], r["coverage"])
			}
			// tinyllama* is a small local model, tiny-embed an embedding
			// encoder (energy.DefaultClassRules), both Estimator.
			in, out := uint64(80_000), uint64(500_000)
			class := "class small"
			if strings.Contains(tc.path, "embed") {
				in, out, class = 80_000, 0, "class embedding"
			}
			if want := server.Input*in + server.Output*out; u64(r["estimated_uj"]) != want || r["energy_provenance"] != "Estimator" {
				t.Errorf("energy %v µJ (%v), want %d µJ Estimator", r["estimated_uj"], r["energy_provenance"], want)
			}
			if note, _ := r["note"].(string); !strings.Contains(note, class) {
				t.Errorf("the note does not name the %s: %s", class, note)
			}
		})
	}
}

// TestRealOllamaProxyFits: a grant that cannot pay for a call's whole
// output cap gets the call fitted, its num_predict (or max_tokens) lowered
// to what the budget pays; the real server stops there, and the receipt
// says so.
func TestRealOllamaProxyFits(t *testing.T) {
	_, tap := tinyOllama(t)
	for i, tc := range []struct {
		name, path, body, field string
	}{
		{"chat without a cap", "/api/chat", `{"model": "` + tinyEndless + `", "messages": [{"role": "user", "content": "go on"}], "stream": false}`, "options.num_predict"},
		{"generate over the budget", "/api/generate", `{"model": "` + tinyEndless + `", "prompt": "go on", "options": {"num_predict": 100000}}`, "options.num_predict"},
		{"openai chat over the budget", "/v1/chat/completions", `{"model": "` + tinyEndless + `", "messages": [{"role": "user", "content": "go on"}], "max_tokens": 100000}`, "max_tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// 1.5 kJ: the small class's default cap (4096 tokens at 0.5 J)
			// is not affordable; a fitted call takes at most half of what
			// is left, about 1,500 tokens. Each case has a grant of its own.
			env, _ := initHome(t, "--budget", "1500J")
			base, _ := startDaemon(t, env, "proxy", "--listen", "127.0.0.1:0", "--ollama", tap.URL, "--openai", tap.URL+"/v1", "--quiet")
			session := fmt.Sprintf("ollama-fit-%d", i)
			req, _ := http.NewRequest("POST", base+tc.path, strings.NewReader(tc.body))
			req.Header.Set("X-Joule-Session", session)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			hdr := resp.Header.Get(proxy.FittedHeader)
			if resp.StatusCode != 200 || !strings.HasPrefix(hdr, tc.field+" ") {
				t.Fatalf("HTTP %d, %s %q: %s", resp.StatusCode, proxy.FittedHeader, hdr, body)
			}
			var asked, fitted uint64
			if _, err := fmt.Sscanf(hdr[len(tc.field)+1:], "%d -> %d", &asked, &fitted); err != nil {
				t.Fatalf("%s %q: %v", proxy.FittedHeader, hdr, err)
			}
			calls := tap.Calls(tc.path)
			server := calls[len(calls)-1].Usage()
			t.Logf("%s; the server produced %d tokens", hdr, server.Output)
			if fitted == 0 || fitted >= asked || server.Output != fitted {
				t.Errorf("fitted %d -> %d; the server produced %d tokens, want exactly the fitted cap", asked, fitted, server.Output)
			}
			rs := waitCalls(t, env, session, 1)
			if len(rs) != 1 || u64(rs[0]["max_output_fitted"]) != fitted || u64(rs[0]["max_output_requested"]) != asked || u64(rs[0]["output_tokens"]) != fitted {
				t.Errorf("receipts %v: want one fitted %d -> %d with %d output tokens", rs, asked, fitted, fitted)
			}
		})
	}
}

// TestRealOllamaACP runs joule acp with L2's embedder and L3's model on the
// real server, its calls metered by the running joule proxy: the index is
// built with real vectors, and the model's edit, which does not build, is
// refused twice with no false close; its two calls' receipts carry the
// tokens the server reported.
func TestRealOllamaACP(t *testing.T) {
	_, tap := tinyOllama(t)
	env, ws := initHome(t, "--budget", "100kJ")
	home := strings.TrimPrefix(env[0], "JOULE_HOME=")
	calc := "package calc\n\n// Add returns the sum of a and b.\nfunc Add(a, b int) int {\n\treturn 0\n}\n"
	writeTree(t, ws, map[string]string{"go.mod": "module example.com/ws\n\ngo 1.21\n", "calc/calc.go": calc})
	cfg := fmt.Sprintf(`{"tiers": {"on": ["l0", "l2", "l3"], "l2": {"embedder": {"provider": "ollama", "base_url": %q, "model": %q, "timeout": "30s"}},
		"l3": {"provider": "ollama", "base_url": %q, "model": %q, "timeout": "2m", "max_output": 64}}}`, tap.URL, tinyEmbed, tap.URL, tinyBadEdit)
	if err := os.WriteFile(filepath.Join(home, ConfigFile), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	startDaemon(t, env, "proxy", "--listen", "127.0.0.1:0", "--ollama", tap.URL, "--quiet")
	doc := joule(t, nil, env, "doctor", "--root", ws, "--timeout", "20s")
	t.Logf("doctor:\n%s", doc.stdout)
	for _, want := range []string{tinyEmbed + " at http://127.0.0.1:", "embeds (64 dimensions), through joule proxy", tinyBadEdit + " present at"} {
		if !strings.Contains(doc.stdout, want) {
			t.Errorf("doctor does not say %q", want)
		}
	}
	r := startEditor(t, env, ws)
	r.newSession(ws)
	_, out := r.prompt("make Add in calc/calc.go return the sum of a and b")
	t.Logf("agent:\n%s", out)
	if strings.Contains(out, "L3 · ") {
		t.Fatalf("L3 closed an edit that does not build:\n%s", out)
	}
	if b := readFile(t, filepath.Join(ws, "calc", "calc.go")); b != calc {
		t.Fatalf("calc.go changed:\n%s", b)
	}
	chats := tap.Calls("/api/chat")
	if len(chats) != 2 {
		t.Fatalf("%d chat calls reached the server, want the edit and its repair", len(chats))
	}
	if len(tap.Calls("/api/embed")) == 0 {
		t.Error("L2 embedded nothing")
	}
	rs := waitCalls(t, env, string(r.sid), 2)
	var chatReceipts []map[string]any
	for _, rec := range rs {
		if m, _ := rec["model"].(string); strings.HasPrefix(m, tinyBadEdit) {
			chatReceipts = append(chatReceipts, rec)
		}
	}
	if len(chatReceipts) != 2 {
		t.Fatalf("%d receipts of the L3 model's calls in the session, want 2: %v", len(chatReceipts), rs)
	}
	for i, rec := range chatReceipts {
		server := chats[i].Usage()
		if u64(rec["input_tokens"]) != server.Input || u64(rec["output_tokens"]) != server.Output || rec["coverage"] != "enforced" {
			t.Errorf("call %d: receipt %v in, %v out (%v); the server reported %d in, %d out", i, rec["input_tokens"], rec["output_tokens"], rec["coverage"], server.Input, server.Output)
		}
	}
}

// TestRealOllamaDoctor: joule doctor finds the server, the models and the
// embedding dimension, and says what is wrong when they are not there.
func TestRealOllamaDoctor(t *testing.T) {
	s, _ := tinyOllama(t)
	down := ollamatest.Down(t)
	silent := ollamatest.Silent(t)
	for _, tc := range []struct {
		name, base, l3, embed string
		code                  int
		want                  map[string]string
		says                  []string
	}{
		{name: "all there", l3: tinyChat, embed: tinyEmbed, code: 0,
			want: map[string]string{"l3 model": "ok", "embedder": "ok"}, says: []string{tinyChat + " present at", tinyEmbed + " at " + s.URL + " embeds (64 dimensions)"}},
		{name: "models missing", l3: "qwen2.5-coder:7b", embed: "nomic-embed-text", code: 1,
			want: map[string]string{"l3 model": "fail", "embedder": "fail"}, says: []string{"does not have qwen2.5-coder:7b", "ollama pull nomic-embed-text"}},
		{name: "models swapped", l3: tinyEmbed, embed: tinyChat, code: 1,
			want: map[string]string{"l3 model": "fail", "embedder": "fail"}, says: []string{tinyEmbed + " at " + s.URL + " is not a chat model (its capabilities: embedding)", tinyChat + " at " + s.URL + " is not an embedding model"}},
		{name: "server down", base: down, l3: tinyChat, embed: tinyEmbed, code: 1,
			want: map[string]string{"l3 model": "fail", "embedder": "fail"}, says: []string{"is not reachable", "connection refused"}},
		{name: "server never answers", base: silent, l3: tinyChat, embed: tinyEmbed, code: 1,
			want: map[string]string{"l3 model": "fail", "embedder": "fail"}, says: []string{"accepts connections but did not answer within 3s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, ws := initHome(t)
			home := strings.TrimPrefix(env[0], "JOULE_HOME=")
			base := tc.base
			if base == "" {
				base = s.URL
			}
			cfg := fmt.Sprintf(`{"tiers": {"l2": {"embedder": {"provider": "ollama", "base_url": %q, "model": %q}}, "l3": {"provider": "ollama", "base_url": %q, "model": %q}}}`, base, tc.embed, base, tc.l3)
			if err := os.WriteFile(filepath.Join(home, ConfigFile), []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			r := joule(t, nil, env, "doctor", "--root", ws, "--timeout", "3s")
			t.Logf("doctor in %s:\n%s", time.Since(start).Round(time.Millisecond), r.stdout)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d\n%s", r.code, tc.code, r.stderr)
			}
			var fs []finding
			j := joule(t, nil, env, "doctor", "--json", "--root", ws, "--timeout", "3s")
			if err := json.Unmarshal([]byte(j.stdout), &fs); err != nil {
				t.Fatal(err)
			}
			for _, f := range fs {
				if want, ok := tc.want[f.Check]; ok && f.Status != want {
					t.Errorf("%s: %s (%s), want %s", f.Check, f.Status, f.Detail, want)
				}
			}
			for _, s := range tc.says {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("the report does not say %q", s)
				}
			}
			if elapsed := time.Since(start); elapsed > 60*time.Second {
				t.Errorf("doctor took %s", elapsed)
			}
		})
	}
}

// TestRealOllamaProxyKilledMidStream: the server dies while a metered
// stream is flowing through joule proxy; the client's stream ends without
// its final object, and the call's receipt is sealed incomplete, its output
// estimated from the text that did stream, never as a finished call.
func TestRealOllamaProxyKilledMidStream(t *testing.T) {
	s, tap := tinyOllama(t)
	env, _ := initHome(t, "--budget", "100kJ")
	base, _ := startDaemon(t, env, "proxy", "--listen", "127.0.0.1:0", "--ollama", tap.URL, "--quiet")
	const session = "ollama-killed"
	req, _ := http.NewRequest("POST", base+"/api/chat", strings.NewReader(`{"model": "`+tinyEndless+`", "messages": [{"role": "user", "content": "go on"}], "options": {"num_predict": 1000000}}`))
	req.Header.Set("X-Joule-Session", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, 1024)
	n, err := io.ReadAtLeast(resp.Body, first, 256)
	if err != nil {
		t.Fatalf("the stream did not start: %v", err)
	}
	s.Kill()
	rest, _ := io.ReadAll(resp.Body)
	got := ollamatest.ParseUsage(append(first[:n], rest...))
	if got.Done || got.Text == "" {
		t.Fatalf("the client's stream: %+v", got)
	}
	rs := waitCalls(t, env, session, 1)
	if len(rs) != 1 {
		t.Fatalf("%d receipts", len(rs))
	}
	r := rs[0]
	t.Logf("receipt: %v, %v in, %v out, %v: %s", r["status"], r["input_tokens"], r["output_tokens"], r["energy_provenance"], r["note"])
	note, _ := r["note"].(string)
	if r["status"] == "complete" || u64(r["output_tokens"]) == 0 || r["energy_provenance"] != "Estimator" || !strings.Contains(note, "estimated") {
		t.Errorf("the cut call's receipt: %v", r)
	}
}

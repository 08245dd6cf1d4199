package l3

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/energy"
	"github.com/joulehook/joule/tiers"
	"github.com/joulehook/joule/tiers/ollamatest"
)

// The end-to-end tests of this file run the tier against a real Ollama
// server (tiers/ollamatest), built from source by make deps, serving tiny
// models whose replies are fixed chains of tokens.

// Replies of the scripted models: an edit that does not build (the tier's
// build check must refuse it, twice), and one that does.
var (
	badPieces  = []string{"calc/calc.go\n", "<<<<<<< SEARCH\n", "\treturn 0\n", "=======\n", "\treturn a + c\n", ">>>>>>> REPLACE\n"}
	goodPieces = []string{"calc/calc.go\n", "<<<<<<< SEARCH\n", "\treturn 0\n", "=======\n", "\treturn a + b\n", ">>>>>>> REPLACE\n"}
)

// Model names: tinyllama* is a small local model by the default class
// rules, so an uncalibrated call is priced at the small-local rates.
const (
	noiseModel   = "tinyllama-joule"
	endlessModel = "tinyllama-joule-endless"
	badModel     = "tinyllama-joule-bad"
	goodModel    = "tinyllama-joule-good"
	tinyCtxModel = "tinyllama-joule-ctx256"
	embedModel   = "tiny-embed"
)

// realOllama starts a server with the test models, and a tap in front of
// it that records what the server sent.
func realOllama(t *testing.T) (*ollamatest.Server, *ollamatest.Tap) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a real Ollama server and the go toolchain")
	}
	s := ollamatest.Start(t, ollamatest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, m := range []struct {
		name   string
		spec   ollamatest.Spec
		params []string
	}{
		{noiseModel, ollamatest.Spec{Seed: 1, Words: 40}, nil},
		{endlessModel, ollamatest.Spec{Seed: 2, Words: 50, Endless: true}, nil},
		{badModel, ollamatest.Spec{Seed: 3, Reply: badPieces}, nil},
		{goodModel, ollamatest.Spec{Seed: 4, Reply: goodPieces}, nil},
		{tinyCtxModel, ollamatest.Spec{Seed: 5, Reply: badPieces}, []string{"num_ctx 256"}},
		{embedModel, ollamatest.Spec{Seed: 6, Embedding: true}, nil},
	} {
		if err := s.Create(ctx, m.name, m.spec, m.params...); err != nil {
			t.Fatal(err)
		}
	}
	return s, ollamatest.NewTap(t, s.URL)
}

func newKey(t *testing.T) ed25519.PrivateKey { return newKeyTB(t) }

func newKeyTB(t testing.TB) ed25519.PrivateKey {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func editRequest(root string) *tiers.Request {
	return &tiers.Request{Session: "s1", Prompt: "make Add in calc/calc.go return the sum", Root: root,
		Context: []tiers.Snippet{{Path: "calc/calc.go", StartLine: 3, EndLine: 6, Symbol: "Add", Text: calcGo, Why: "bm25"}}}
}

// model is the test's client of the tier's provider for name, through the
// tap.
func model(t *testing.T, tap *ollamatest.Tap, provider, name string, maxOut int) Model {
	t.Helper()
	switch provider {
	case "ollama":
		o, err := NewOllama(tap.URL, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		o.MaxOutput = maxOut
		return o
	default:
		o, err := NewOpenAI(tap.URL+"/v1", "", name, nil)
		if err != nil {
			t.Fatal(err)
		}
		o.MaxOutput = maxOut
		return o
	}
}

// TestRealOllamaChat: both of the tier's clients (Ollama's /api/chat, and
// the OpenAI-compatible /v1/chat/completions, as vLLM serves it) read the
// real server's reply and its token counts as the server sent them, and
// the output cap reaches it as num_predict or max_tokens.
func TestRealOllamaChat(t *testing.T) {
	_, tap := realOllama(t)
	want, _ := ollamatest.ReplyText(ollamatest.Spec{Seed: 1, Words: 40})
	for _, tc := range []struct {
		provider, path string
		maxOut         int
		wantOut        uint64
	}{
		// The chain's 40 words, and its end, which Ollama counts; or the cap.
		{"ollama", "/api/chat", 0, 41},
		{"ollama", "/api/chat", 7, 7},
		{"openai", "/v1/chat/completions", 0, 41},
		{"openai", "/v1/chat/completions", 7, 7},
	} {
		m := model(t, tap, tc.provider, noiseModel, tc.maxOut)
		before := len(tap.Calls(tc.path))
		reply, err := m.Chat(context.Background(), []Message{{Role: "system", Content: systemPrompt}, {Role: "user", Content: "make Add return the sum"}})
		if err != nil {
			t.Fatalf("%s: %v", tc.provider, err)
		}
		calls := tap.Calls(tc.path)
		if len(calls) != before+1 {
			t.Fatalf("%s: %d calls reached %s", tc.provider, len(calls)-before, tc.path)
		}
		got := calls[len(calls)-1].Usage()
		t.Logf("%s max %d: %q; the server reported %d in, %d out; the client read %+v", tc.provider, tc.maxOut, reply.Text, got.Input, got.Output, reply.Usage)
		if !got.OK || !reply.Reported || reply.Usage.Input != got.Input || reply.Usage.Output != got.Output || reply.Usage.CachedInput != 0 {
			t.Errorf("%s: the client read %+v (reported %v); the server sent %d in, %d out", tc.provider, reply.Usage, reply.Reported, got.Input, got.Output)
		}
		if got.Output != tc.wantOut {
			t.Errorf("%s with cap %d: %d output tokens, want %d", tc.provider, tc.maxOut, got.Output, tc.wantOut)
		}
		if reply.Text != got.Text || !strings.HasPrefix(strings.TrimSpace(want), strings.TrimSpace(reply.Text)) || reply.Text == "" {
			t.Errorf("%s: the reply %q, the server's text %q, the model's chain %q", tc.provider, reply.Text, got.Text, want)
		}
		if !strings.HasPrefix(reply.Model, noiseModel) {
			t.Errorf("%s: the reply names model %q", tc.provider, reply.Model)
		}
	}
}

// TestRealOllamaStage runs the tier as joule runs it without a proxy: the
// model's edit is applied to a copy of the tree and built; each call's
// receipt carries the tokens the server reported and the energy the table
// gives for them, with the provenance the table has for the model.
func TestRealOllamaStage(t *testing.T) {
	_, tap := realOllama(t)
	key := newKey(t)
	for _, tc := range []struct {
		name, provider, model string
		calib                 bool
		close                 bool
	}{
		// The edit does not build: refused, repaired once, refused again.
		{"ollama edit that does not build", "ollama", badModel, false, false},
		{"openai edit that does not build", "openai", badModel, false, false},
		// The same path closes when the edit builds: the refusals above are
		// the check's, not the plumbing's.
		{"ollama edit that builds", "ollama", goodModel, false, true},
		{"openai edit that builds, calibrated", "openai", goodModel, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := workspace(t)
			path := "/api/chat"
			if tc.provider == "openai" {
				path = "/v1/chat/completions"
			}
			before := len(tap.Calls(path))
			tbl := &energy.Table{}
			if tc.calib {
				tbl.Calibrations = []energy.Calibration{{Model: tc.model + ":latest", ID: "test-fit", Rates: energy.Rates{InputUJ: 10, OutputUJ: 100}},
					{Model: tc.model, ID: "test-fit", Rates: energy.Rates{InputUJ: 10, OutputUJ: 100}}}
			}
			led := &ledger{}
			st := &Stage{Model: model(t, tap, tc.provider, tc.model, 64), Key: key, Timeout: 2 * time.Minute, Energy: tbl, Ledger: led, MaxOutput: 64}
			res, err := st.TryResolve(context.Background(), editRequest(root))
			calls := tap.Calls(path)[before:]
			if tc.close {
				if err != nil || res == nil || res.Op == nil {
					t.Fatalf("want a close: %+v, %v", res, err)
				}
				if _, err := res.Op.Verify(); err != nil || res.Op.Op.Tier != core.L3 {
					t.Fatalf("op: %v, tier %s", err, res.Op.Op.Tier)
				}
				t.Logf("answer: %s", res.Answer)
			} else {
				var miss *Miss
				if res != nil || !errors.As(err, &miss) || miss.Calls != 2 || !strings.Contains(err.Error(), "go build failed") {
					t.Fatalf("want a miss after two calls whose edits do not build: %+v, %v", res, err)
				}
				t.Logf("miss: %v", err)
				if b, _ := os.ReadFile(filepath.Join(root, "calc", "calc.go")); string(b) != calcGo {
					t.Fatalf("the workspace changed:\n%s", b)
				}
			}
			if len(calls) != len(led.recs) || len(calls) != map[bool]int{true: 1, false: 2}[tc.close] {
				t.Fatalf("%d calls reached the server, %d receipts", len(calls), len(led.recs))
			}
			var in, out uint64
			for i, r := range led.recs {
				got := calls[i].Usage()
				if !got.OK || !r.Complete || r.Usage.Input != got.Input || r.Usage.Output != got.Output || r.Usage.CachedInput != 0 {
					t.Errorf("receipt %d carries %+v (complete %v); the server reported %d in, %d out", i, r.Usage, r.Complete, got.Input, got.Output)
				}
				in, out = in+got.Input, out+got.Output
				if e := tbl.Energy(r.Model, r.Usage); r.Estimate != e || r.Estimate.UJ == 0 {
					t.Errorf("receipt %d: energy %+v, want the table's %+v for %s", i, r.Estimate, e, r.Model)
				}
				wantProv, wantBasis := core.Estimator, "class small"
				if tc.calib {
					wantProv, wantBasis = core.ModelBased, "calibration test-fit"
				}
				if r.Estimate.Provenance != wantProv || r.Estimate.Basis != wantBasis {
					t.Errorf("receipt %d: %s by %q, want %s by %q", i, r.Estimate.Provenance, r.Estimate.Basis, wantProv, wantBasis)
				}
				if !strings.Contains(r.Note, "tokens as the model server reported them") {
					t.Errorf("receipt %d note: %s", i, r.Note)
				}
			}
			if tc.close && !strings.Contains(res.Answer, "Model calls: 1, ") {
				t.Errorf("the answer does not account for the calls: %s", res.Answer)
			}
			t.Logf("%d calls, %d in, %d out", len(calls), in, out)
		})
	}
}

// TestRealOllamaBudget: a direct call reserves its largest cost (the
// prompt and the output cap) before it is made, the cap reaches the
// server as num_predict, and the server stops there, so the reservation
// holds; the receipt settles it to what the server reported.
func TestRealOllamaBudget(t *testing.T) {
	_, tap := realOllama(t)
	const maxOut = 24
	b := &budget{limitUJ: 1 << 62, reserved: map[int64]uint64{}}
	led := &ledger{}
	tbl := &energy.Table{}
	st := &Stage{Model: model(t, tap, "ollama", endlessModel, maxOut), Key: newKey(t), Energy: tbl, Ledger: led, Budget: b, MaxOutput: maxOut,
		Grants: func(context.Context, string) []string { return []string{"g"} }}
	_, err := st.TryResolve(context.Background(), editRequest(workspace(t)))
	var miss *Miss
	if !errors.As(err, &miss) {
		t.Fatalf("want a miss (the endless model writes no edit): %v", err)
	}
	calls := tap.Calls("/api/chat")
	if len(led.recs) != 2 || len(calls) < 2 {
		t.Fatalf("%d receipts, %d calls", len(led.recs), len(calls))
	}
	for i, r := range led.recs {
		got := calls[len(calls)-2+i].Usage()
		if got.Output != maxOut || r.Usage.Output != maxOut {
			t.Errorf("call %d: the server produced %d tokens (receipt %d), want the cap %d", i, got.Output, r.Usage.Output, maxOut)
		}
		if r.Reservation == nil || r.SettleUJ != r.Estimate.UJ || r.SettleUJ > b.reserved[*r.Reservation] {
			t.Errorf("call %d settles %d against the reservation %v", i, r.SettleUJ, b.reserved)
		}
	}
}

// TestRealOllamaFailures: each way the server can fail the tier ends in a
// clear miss or error within the configured timeout, and nothing closes.
func TestRealOllamaFailures(t *testing.T) {
	s, tap := realOllama(t)
	silent := ollamatest.Silent(t)
	down := ollamatest.Down(t)
	const timeout = 5 * time.Second
	for _, tc := range []struct {
		name     string
		base     string // default: the tap
		provider string
		model    string
		maxOut   int
		kill     bool   // kill the server once the reply is streaming
		want     string // in the error
		miss     bool   // a *Miss, not another error
	}{
		{name: "server down", base: down, provider: "ollama", model: badModel, want: "connection refused"},
		{name: "openai server down", base: down, provider: "openai", model: badModel, want: "connection refused"},
		{name: "model missing", provider: "ollama", model: "no-such-model", want: "not found"},
		{name: "openai model missing", provider: "openai", model: "no-such-model", want: "not found"},
		{name: "context overflow", provider: "ollama", model: tinyCtxModel, want: "the prompt does not fit the model's context"},
		{name: "chat to an embedding model", provider: "ollama", model: embedModel, want: "does not support"},
		{name: "accepts and never answers", base: silent, provider: "ollama", model: badModel, want: "did not finish within 5s", miss: true},
		{name: "openai accepts and never answers", base: silent, provider: "openai", model: badModel, want: "did not finish within 5s", miss: true},
		// Last: it kills the server.
		{name: "killed mid-stream", provider: "ollama", model: endlessModel, maxOut: 1 << 20, kill: true, want: "l3: Ollama at"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.base
			if base == "" {
				base = tap.URL
			}
			var m Model
			var err error
			if tc.provider == "ollama" {
				var o *Ollama
				o, err = NewOllama(base, tc.model, nil)
				if o != nil {
					o.MaxOutput = tc.maxOut
				}
				m = o
			} else {
				m, err = NewOpenAI(base+"/v1", "", tc.model, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.kill {
				before := len(tap.Calls("/api/chat"))
				go func() {
					for {
						if cs := tap.Calls("/api/chat"); len(cs) > before && len(cs[len(cs)-1].Usage().Text) > 0 {
							s.Kill()
							return
						}
						time.Sleep(5 * time.Millisecond)
					}
				}()
			}
			led := &ledger{}
			root := workspace(t)
			st := &Stage{Model: m, Key: newKey(t), Timeout: timeout, Energy: &energy.Table{}, Ledger: led}
			start := time.Now()
			res, err := st.TryResolve(context.Background(), editRequest(root))
			took := time.Since(start)
			t.Logf("%v after %s", err, took.Round(time.Millisecond))
			if res != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error containing %q, got %+v, %v", tc.want, res, err)
			}
			var miss *Miss
			if tc.miss != errors.As(err, &miss) {
				t.Errorf("a miss: %v, want %v (%T)", !tc.miss, tc.miss, err)
			}
			if took > timeout+3*time.Second {
				t.Errorf("it took %s, past the %s timeout", took, timeout)
			}
			if b, _ := os.ReadFile(filepath.Join(root, "calc", "calc.go")); string(b) != calcGo {
				t.Fatalf("the workspace changed:\n%s", b)
			}
			for _, r := range led.recs {
				if r.Complete {
					t.Errorf("a failed call sealed as complete: %+v", r)
				}
				if r.Estimate.Provenance != core.Estimator {
					t.Errorf("a failed call's receipt is %s", r.Estimate.Provenance)
				}
			}
			if len(led.recs) == 0 {
				t.Error("no receipt for the failed call")
			}
		})
	}
}

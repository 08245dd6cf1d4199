package acpagent

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/energy"
	"github.com/joulehook/joule/tiers/l3"
)

// fakeOllama answers /api/chat as Ollama streams it (NDJSON, usage in the
// final object) with the scripted replies in order.
type fakeOllama struct {
	mu      sync.Mutex
	replies []string
	prompts []string // the user message of each call
}

func (f *fakeOllama) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string
		Messages []struct{ Role, Content string }
	}
	if r.URL.Path != "/api/chat" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, `{"error":"not found"}`, 404)
		return
	}
	f.mu.Lock()
	f.prompts = append(f.prompts, req.Messages[len(req.Messages)-1].Content)
	reply := "NO_EDIT"
	if len(f.replies) > 0 {
		reply, f.replies = f.replies[0], f.replies[1:]
	}
	f.mu.Unlock()
	enc := json.NewEncoder(w)
	for _, line := range strings.SplitAfter(reply, "\n") {
		enc.Encode(map[string]any{"model": req.Model, "message": map[string]string{"role": "assistant", "content": line}, "done": false})
	}
	enc.Encode(map[string]any{"model": req.Model, "message": map[string]string{"role": "assistant", "content": ""}, "done": true,
		"done_reason": "stop", "prompt_eval_count": 900, "eval_count": 40})
}

// planClient also keeps every plan entry the agent sent.
type planClient struct {
	*client
	pmu   sync.Mutex
	plans []string
}

func (c *planClient) SessionUpdate(ctx context.Context, n acp.SessionNotification) error {
	if p := n.Update.Plan; p != nil {
		c.pmu.Lock()
		for _, e := range p.Entries {
			c.plans = append(c.plans, string(e.Status)+": "+e.Content)
		}
		c.pmu.Unlock()
	}
	return c.client.SessionUpdate(ctx, n)
}

// tierFixture is an agent with L2 (lexical) and L3 (the fake Ollama); L1
// is off, or its look-ups would close the lookups L2 is tested with.
func tierFixture(t *testing.T, ol *fakeOllama) (*fixture, *planClient, string) {
	t.Helper()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	ws, home := filepath.Join(dir, "ws"), filepath.Join(dir, "home")
	os.MkdirAll(filepath.Join(ws, "calc"), 0o755)
	os.WriteFile(filepath.Join(ws, "go.mod"), []byte("module example.com/ws\n\ngo 1.21\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "calc", "calc.go"), []byte("package calc\n\n// Add returns the sum of a and b.\nfunc Add(a, b int) int {\n\treturn 0\n}\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "calc", "greet.go"), []byte("package calc\n\n// Greeting says hello.\nfunc Greeting(name string) string {\n\treturn \"hello \" + name\n}\n"), 0o644)
	id, err := identity.Create(home, "acp.test", false)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(home, "joule.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	is, _ := grant.NewIssuer(id.Steward, id.Key)
	g := liveGrant([]string{"l1", "l2", "l3"})
	g.Roots = []string{ws}
	s, err := is.Sign(g)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sealer, _ := id.Sealer()
	gt := &gate.Gate{Store: st, Sealer: sealer, Trust: grant.Trust{id.Steward: id.Public()}, JouleHome: home, Costs: gate.DefaultCosts}
	if err := gt.Adopt(ctx, s, "test grant", true); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ol)
	t.Cleanup(srv.Close)
	model, err := l3.NewOllama(srv.URL, "qwen2.5-coder:7b", nil)
	if err != nil {
		t.Fatal(err)
	}
	x := &Indexes{Home: home}
	t.Cleanup(func() { x.Close() })
	a := New(Options{Gate: gt, Key: id.Key, NoL1: true, Index: x, OpsDir: filepath.Join(home, "ops"), Version: "test",
		Local: &l3.Stage{Model: model, Key: id.Key, Energy: &energy.Table{OutputCaps: map[energy.Class]uint64{energy.Small: 256}}, MaxOutput: 256,
			Ledger: &energy.Recorder{Store: st, Sealer: sealer}, Budget: st,
			Grants: func(context.Context, string) []string { return []string{s.ID.String()} }}})
	cr, aw := io.Pipe()
	ar, cw := io.Pipe()
	sctx, cancel := context.WithCancel(context.Background())
	go a.Serve(sctx, ar, aw)
	cl := &client{text: map[acp.SessionId]*strings.Builder{}}
	pc := &planClient{client: cl}
	conn := acp.NewClientSideConnection(pc, cw, cr)
	t.Cleanup(func() { cancel(); cw.Close(); aw.Close() })
	if _, err := conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	return &fixture{conn: conn, cl: cl, ws: ws, g: gt, id: id, ops: filepath.Join(home, "ops")}, pc, ws
}

// TestL2AndL3 puts a lookup that L2 closes and an edit that L2 hands on to
// L3, which closes it with the fake model's validated edit.
func TestL2AndL3(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go toolchain")
	}
	ol := &fakeOllama{replies: []string{"calc/calc.go\n<<<<<<< SEARCH\n\treturn 0\n=======\n\treturn a + b\n>>>>>>> REPLACE\n"}}
	f, pc, ws := tierFixture(t, ol)
	ctx := context.Background()
	ns, err := f.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: ws, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	sid := ns.SessionId
	prompt := func(text string) string {
		before := len(f.cl.said(sid))
		pr, err := f.conn.Prompt(ctx, acp.PromptRequest{SessionId: sid, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
		if err != nil || pr.StopReason != acp.StopReasonEndTurn {
			t.Fatalf("%q: %v %v", text, pr.StopReason, err)
		}
		return f.cl.said(sid)[before:]
	}
	out := prompt("where is Greeting defined")
	if !strings.Contains(out, "calc/greet.go") || !strings.Contains(out, "L2 · ") {
		t.Fatalf("the lookup did not close at L2:\n%s", out)
	}
	if len(ol.prompts) != 0 {
		t.Fatal("L3 was consulted for a lookup L2 closed")
	}
	// The first prompt built the index, and the plan showed it.
	pc.pmu.Lock()
	plans := strings.Join(pc.plans, "\n")
	pc.pmu.Unlock()
	if !strings.Contains(plans, "in_progress: L2: retrieval (indexing: index") {
		t.Errorf("no indexing progress in the plan:\n%s", plans)
	}
	out = prompt("make Add in calc return the sum of its arguments")
	if !strings.Contains(out, "L3 · ") || !strings.Contains(out, "go build") {
		t.Fatalf("the edit did not close at L3:\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "calc", "calc.go")); !strings.Contains(string(b), "return a + b") {
		t.Fatalf("calc.go after L3:\n%s", b)
	}
	if len(ol.prompts) != 1 || !strings.Contains(ol.prompts[0], "func Add(a, b int) int") {
		t.Fatalf("L3's prompt lacks L2's context: %q", ol.prompts)
	}
	// The session chain verifies and holds the L3 model call's receipt with
	// the tokens the server reported, beside the op's.
	entries, err := f.g.Store.Session(ctx, string(sid))
	if err != nil {
		t.Fatal(err)
	}
	var envs [][]byte
	for _, e := range entries {
		envs = append(envs, e.Envelope)
	}
	pub := f.id.Public()
	v, _ := core.NewVerifier(f.id.Steward, pub[:])
	rs, err := receipts.VerifyChain(v, f.id.Steward, envs)
	if err != nil {
		t.Fatal(err)
	}
	var call, op bool
	for _, r := range rs {
		if e := r.Efficiency; e != nil {
			call = call || (e.Unit == "model-call" && e.Model == "qwen2.5-coder:7b" && e.InputTokens == 900 && e.OutputTokens == 40 && e.Provenance == core.Estimator)
			op = op || (e.Tier == core.L3 && e.OpID != "")
		}
	}
	if !call || !op {
		t.Fatalf("receipts: model call %v, L3 op %v", call, op)
	}
	// The call's reservation was settled to its estimate (900 input and 40
	// output tokens at the small class's 80 mJ and 500 mJ): nothing stays
	// reserved, and the grant paid at least that.
	var gid string
	for _, r := range rs {
		if r.Efficiency != nil && len(r.Efficiency.Grants) > 0 {
			gid = r.Efficiency.Grants[0]
		}
	}
	rec, err := f.g.Store.Grant(ctx, gid)
	if err != nil {
		t.Fatal(err)
	}
	if rec.ReservedUJ != 0 || rec.SpentUJ < 900*80_000+40*500_000 {
		t.Fatalf("grant after the call: spent %d, reserved %d", rec.SpentUJ, rec.ReservedUJ)
	}
}

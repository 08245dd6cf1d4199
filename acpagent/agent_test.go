package acpagent

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/tiers/l0"
)

// client is an editor without fs capabilities: joule writes to disk.
type client struct {
	mu   sync.Mutex
	text map[acp.SessionId]*strings.Builder
}

func (c *client) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound("fs/read_text_file")
}
func (c *client) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound("fs/write_text_file")
}
func (c *client) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}, nil
}
func (c *client) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.text[n.SessionId] == nil {
		c.text[n.SessionId] = &strings.Builder{}
	}
	if m := n.Update.AgentMessageChunk; m != nil && m.Content.Text != nil {
		c.text[n.SessionId].WriteString(m.Content.Text.Text + "\n")
	}
	return nil
}
func (c *client) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound("terminal/create")
}
func (c *client) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, nil
}
func (c *client) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, nil
}
func (c *client) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, nil
}
func (c *client) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, nil
}

func (c *client) said(sid acp.SessionId) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.text[sid] == nil {
		return ""
	}
	return c.text[sid].String()
}

type fixture struct {
	conn *acp.ClientSideConnection
	cl   *client
	ws   string
	g    *gate.Gate
	id   *identity.Identity
	ops  string
	opt  Options
}

func newFixture(t *testing.T, g *grant.Grant) *fixture {
	t.Helper()
	cl := &client{text: map[acp.SessionId]*strings.Builder{}}
	return newFixtureWith(t, g, cl, cl, acp.ClientCapabilities{}, nil)
}

// newFixtureWith connects an agent to editor ed (said reads its messages),
// which announces caps; remote, if set, is the agent's L4.
func newFixtureWith(t *testing.T, g *grant.Grant, ed acp.Client, cl *client, caps acp.ClientCapabilities, remote func(*gate.Gate, *identity.Identity, string) RemoteStage) *fixture {
	t.Helper()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	ws := filepath.Join(dir, "ws")
	home := filepath.Join(dir, "home")
	os.MkdirAll(ws, 0o755)
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
	cache, err := l0.Open(filepath.Join(home, l0.Dir))
	if err != nil {
		t.Fatal(err)
	}
	ops := filepath.Join(home, "ops")
	opt := Options{Gate: gt, Key: id.Key, Cache: cache, OpsDir: ops, SessionsDir: filepath.Join(home, "acp-sessions"), Version: "test"}
	if remote != nil {
		opt.Remote = remote(gt, id, ws)
	}
	a := New(opt)
	cr, aw := io.Pipe()
	ar, cw := io.Pipe()
	sctx, cancel := context.WithCancel(context.Background())
	go a.Serve(sctx, ar, aw)
	conn := acp.NewClientSideConnection(ed, cw, cr)
	t.Cleanup(func() { cancel(); cw.Close(); aw.Close() })
	if _, err := conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber, ClientCapabilities: caps}); err != nil {
		t.Fatal(err)
	}
	return &fixture{conn: conn, cl: cl, ws: ws, g: gt, id: id, ops: ops, opt: opt}
}

// restart connects editor ed to a new agent with the fixture's options, as
// an editor that starts the agent anew does.
func (f *fixture) restart(t *testing.T, ed acp.Client) *acp.ClientSideConnection {
	t.Helper()
	a := New(f.opt)
	cr, aw := io.Pipe()
	ar, cw := io.Pipe()
	sctx, cancel := context.WithCancel(context.Background())
	go a.Serve(sctx, ar, aw)
	conn := acp.NewClientSideConnection(ed, cw, cr)
	t.Cleanup(func() { cancel(); cw.Close(); aw.Close() })
	if _, err := conn.Initialize(context.Background(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	return conn
}

func liveGrant(tiers []string, deny ...string) *grant.Grant {
	now := time.Now()
	return &grant.Grant{Subject: grant.AnySubject, Allow: []string{"Read", "Write"}, Deny: deny, Tiers: tiers, BudgetUJ: 1_000_000_000,
		NotBefore: now.Add(-time.Minute).Unix(), NotAfter: now.Add(time.Hour).Unix()}
}

// TestConcurrentSessions runs prompts in several sessions at once (under
// -race), then verifies every session chain and every JCR-1 receipt.
func TestConcurrentSessions(t *testing.T) {
	f := newFixture(t, liveGrant([]string{"l0", "l1"}, "Write(secret/**)"))
	ctx := context.Background()
	const n = 4
	for i := 0; i < n; i++ {
		os.MkdirAll(filepath.Join(f.ws, "d"+string(rune('a'+i))), 0o755)
		os.WriteFile(filepath.Join(f.ws, "d"+string(rune('a'+i)), "f.txt"), []byte("old text\n"), 0o644)
	}
	os.MkdirAll(filepath.Join(f.ws, "secret"), 0o755)
	os.WriteFile(filepath.Join(f.ws, "secret", "k.txt"), []byte("old\n"), 0o644)
	var wg sync.WaitGroup
	sids := make([]acp.SessionId, n)
	for i := 0; i < n; i++ {
		ns, err := f.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: f.ws, McpServers: []acp.McpServer{}})
		if err != nil {
			t.Fatal(err)
		}
		sids[i] = ns.SessionId
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			glob := "d" + string(rune('a'+i)) + "/**"
			pr, err := f.conn.Prompt(ctx, acp.PromptRequest{SessionId: sids[i], Prompt: []acp.ContentBlock{acp.TextBlock(`/replace "old" "new" ` + glob)}})
			if err != nil || pr.StopReason != acp.StopReasonEndTurn {
				t.Errorf("session %d: %v %v", i, pr.StopReason, err)
			}
		}(i)
	}
	wg.Wait()
	// Concurrent ops each computed on its own snapshot: some may have found
	// the tree changed under them; none may be half-applied or lost silently.
	for i := 0; i < n; i++ {
		b, _ := os.ReadFile(filepath.Join(f.ws, "d"+string(rune('a'+i)), "f.txt"))
		if string(b) != "new text\n" {
			t.Errorf("d%c/f.txt = %q\n%s", 'a'+i, b, f.cl.said(sids[i]))
		}
	}
	pr, err := f.conn.Prompt(ctx, acp.PromptRequest{SessionId: sids[0], Prompt: []acp.ContentBlock{acp.TextBlock(`/replace "old" "new" secret/**`)}})
	if err != nil || pr.StopReason != acp.StopReasonEndTurn {
		t.Fatal(pr, err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "secret", "k.txt")); string(b) != "old\n" || !strings.Contains(f.cl.said(sids[0]), "deny-rule") {
		t.Fatalf("denied write: %q\n%s", b, f.cl.said(sids[0]))
	}
	// An L4 request with no L4 tier falls through, with a receipt of the consultations.
	if _, err := f.conn.Prompt(ctx, acp.PromptRequest{SessionId: sids[1], Prompt: []acp.ContentBlock{acp.TextBlock("write me a parser")}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.cl.said(sids[1]), "No tier closed") {
		t.Fatalf("fall-through: %s", f.cl.said(sids[1]))
	}
	pub := f.id.Public()
	v, _ := core.NewVerifier(f.id.Steward, pub[:])
	for _, sid := range sids {
		entries, err := f.g.Store.Session(ctx, string(sid))
		if err != nil {
			t.Fatal(err)
		}
		var envs [][]byte
		for _, e := range entries {
			envs = append(envs, e.Envelope)
		}
		rs, err := receipts.VerifyChain(v, f.id.Steward, envs)
		if err != nil {
			t.Fatalf("session %s: %v", sid, err)
		}
		var work int
		for _, r := range rs {
			if r.Efficiency != nil {
				work++
				if r.Efficiency.Tier != core.L1 || r.Efficiency.Coverage != receipts.CoverageLocal {
					t.Errorf("efficiency receipt %+v", r.Efficiency)
				}
			}
		}
		if work != 1 {
			t.Errorf("session %s: %d efficiency receipts, want 1", sid, work)
		}
	}
	ents, _ := os.ReadDir(f.ops)
	if len(ents) != n {
		t.Fatalf("%d JCR-1 receipts, want %d", len(ents), n)
	}
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(f.ops, e.Name()))
		r, err := v.Verify(b)
		if err != nil || r.Tier != core.L1 {
			t.Errorf("%s: %v %+v", e.Name(), err, r)
		}
	}
}

// TestTierDenied: a grant without l1 makes L1 a sealed fall-through.
func TestTierDenied(t *testing.T) {
	f := newFixture(t, liveGrant([]string{"l0"}))
	ctx := context.Background()
	os.WriteFile(filepath.Join(f.ws, "a.txt"), []byte("x\n"), 0o644)
	ns, _ := f.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: f.ws, McpServers: []acp.McpServer{}})
	if _, err := f.conn.Prompt(ctx, acp.PromptRequest{SessionId: ns.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock(`/replace "x" "y"`)}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "a.txt")); string(b) != "x\n" || !strings.Contains(f.cl.said(ns.SessionId), "L1: denied by the grant") {
		t.Fatalf("%q\n%s", b, f.cl.said(ns.SessionId))
	}
	_, err := f.conn.Prompt(ctx, acp.PromptRequest{SessionId: ns.SessionId, Prompt: []acp.ContentBlock{acp.ImageBlock("aGk=", "image/png")}})
	if err == nil {
		t.Fatal("an image prompt was accepted")
	}
}

package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/store"
)

// fixture is a joule home with one active grant over a workspace, a server
// on it, and an mcp-go client speaking the editors' protocol version.
type fixture struct {
	dir, ws, home string
	id            *identity.Identity
	gate          *gate.Gate
	srv           *Server
	c             *client.Client
	notes         chan mcp.JSONRPCNotification
}

var testAllow = []string{"Read", "Write", "Edit", "Glob", "Grep", "Bash(echo:*)", "Bash(sleep:*)", "Bash(yes:*)", "Bash(cat:*)", "Bash(seq:*)"}

func openGate(t testing.TB, home string, id *identity.Identity) *gate.Gate {
	t.Helper()
	st, err := store.Open(filepath.Join(home, "joule.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sealer, err := id.Sealer()
	if err != nil {
		t.Fatal(err)
	}
	return &gate.Gate{Store: st, Sealer: sealer, Trust: grant.Trust{id.Steward: id.Public()}, JouleHome: home, Home: filepath.Join(filepath.Dir(home), "userhome"), Costs: gate.DefaultCosts}
}

func newFixture(t testing.TB, limits Limits) *fixture {
	t.Helper()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	f := &fixture{dir: dir, ws: filepath.Join(dir, "ws"), home: filepath.Join(dir, "home")}
	os.MkdirAll(filepath.Join(f.ws, "src"), 0o755)
	os.MkdirAll(filepath.Join(dir, "userhome"), 0o755)
	id, err := identity.Create(f.home, "test.example", false)
	if err != nil {
		t.Fatal(err)
	}
	f.id = id
	f.gate = openGate(t, f.home, id)
	is, _ := grant.NewIssuer(id.Steward, id.Key)
	sg, err := is.Sign(&grant.Grant{Subject: grant.AnySubject, Roots: []string{f.ws}, Allow: testAllow, Ask: []string{"Bash(git push:*)"}, Deny: []string{"Bash(rm:*)"},
		Tiers: []string{}, BudgetUJ: 1 << 40, NotBefore: time.Now().Add(-time.Hour).Unix(), NotAfter: time.Now().Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := f.gate.Adopt(ctx, sg, "test grant", true); err != nil {
		t.Fatal(err)
	}
	f.srv = f.newServer(t, f.gate, "s1", limits)
	f.c, f.notes = f.connect(t, f.srv)
	return f
}

func (f *fixture) newServer(t testing.TB, g *gate.Gate, session string, limits Limits) *Server {
	t.Helper()
	pub := f.id.Public()
	v, err := core.NewVerifier(f.id.Steward, pub[:])
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Gate: g, Verifier: v, Steward: f.id.Steward, VerifierKey: f.id.VerifierKey, PublicKey: pub[:],
		LogOrigin: "joule receipts log " + f.id.Steward, NoteSigner: f.id.NoteSigner,
		Workspace: f.ws, Session: session, Version: "test", Limits: limits, Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// connect starts an in-process client pinned to protocol 2025-11-25.
func (f *fixture) connect(t testing.TB, srv *Server) (*client.Client, chan mcp.JSONRPCNotification) {
	t.Helper()
	c, err := client.NewInProcessClientWithOptions(srv.MCP(), client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	if err != nil {
		t.Fatal(err)
	}
	return c, start(t, c)
}

func start(t testing.TB, c *client.Client) chan mcp.JSONRPCNotification {
	t.Helper()
	ctx := context.Background()
	notes := make(chan mcp.JSONRPCNotification, 100)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		select {
		case notes <- n:
		default:
		}
	})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	init.Params.ClientInfo = mcp.Implementation{Name: "joule-test", Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatal(err)
	}
	if res.ProtocolVersion != mcp.ProtocolVersion20251125 {
		t.Fatalf("negotiated %s, want %s", res.ProtocolVersion, mcp.ProtocolVersion20251125)
	}
	return notes
}

func (f *fixture) call(t testing.TB, name string, args any) *mcp.CallToolResult {
	t.Helper()
	return callTool(t, f.c, name, args)
}

func callTool(t testing.TB, c *client.Client, name string, args any) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	return res
}

func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
			b.WriteString("\n")
		}
	}
	return b.String()
}

func (f *fixture) read(t testing.TB, uri string) (map[string]any, error) {
	t.Helper()
	req := mcp.ReadResourceRequest{}
	req.Params.URI = uri
	res, err := f.c.ReadResource(context.Background(), req)
	if err != nil {
		return nil, err
	}
	tc, ok := res.Contents[0].(mcp.TextResourceContents)
	if !ok {
		t.Fatalf("%s: first content is %T", uri, res.Contents[0])
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(tc.Text), &m); err != nil {
		t.Fatalf("%s: %v", uri, err)
	}
	return m, nil
}

func TestToolsAllowedAndDenied(t *testing.T) {
	f := newFixture(t, Limits{})
	os.WriteFile(filepath.Join(f.ws, "src", "a.go"), []byte("package a\n\nfunc A() int { return 1 }\n"), 0o644)
	outside := filepath.Join(f.dir, "outside")
	os.MkdirAll(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret\n"), 0o644)
	os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(f.ws, "link.txt"))
	os.Symlink(outside, filepath.Join(f.ws, "linkdir"))
	tests := []struct {
		name    string
		tool    string
		args    map[string]any
		isError bool
		want    string // in the text
		sealed  bool   // a decision receipt is named
	}{
		{"read", ToolRead, map[string]any{"path": "src/a.go"}, false, "func A()", true},
		{"read range", ToolRead, map[string]any{"path": "src/a.go", "offset": 3, "limit": 1}, false, "func A()", true},
		{"write", ToolWrite, map[string]any{"path": "src/new/b.txt", "content": "one two two\n"}, false, "wrote 12 bytes", true},
		{"edit", ToolEdit, map[string]any{"path": "src/new/b.txt", "old_string": "one", "new_string": "three"}, false, "replaced 1", true},
		{"edit ambiguous", ToolEdit, map[string]any{"path": "src/new/b.txt", "old_string": "two", "new_string": "2"}, true, "occurs 2 times", true},
		{"edit absent", ToolEdit, map[string]any{"path": "src/new/b.txt", "old_string": "zzz", "new_string": "2"}, true, "was not found", true},
		{"edit all", ToolEdit, map[string]any{"path": "src/new/b.txt", "old_string": "two", "new_string": "2", "replace_all": true}, false, "replaced 2", true},
		{"list", ToolList, map[string]any{"path": "src"}, false, "a.go", true},
		{"list root", ToolList, map[string]any{}, false, "src/", true},
		{"search", ToolSearch, map[string]any{"pattern": `func \w+\(`}, false, "src/a.go:3:", true},
		{"search literal", ToolSearch, map[string]any{"pattern": "three 2 2", "literal": true}, false, "src/new/b.txt:1:", true},
		{"run", ToolCommand, map[string]any{"command": "echo hi there"}, false, "hi there", true},
		{"run exit", ToolCommand, map[string]any{"command": "cat nonexistent"}, true, "exit status 1", true},
		{"status", ToolStatus, map[string]any{}, false, "session s1", false},

		{"read outside", ToolRead, map[string]any{"path": filepath.Join(outside, "secret.txt")}, true, "outside-workspace", true},
		{"read dotdot", ToolRead, map[string]any{"path": "../outside/secret.txt"}, true, "outside-workspace", true},
		{"read symlink out", ToolRead, map[string]any{"path": "link.txt"}, true, "outside-workspace", true},
		{"write through dir link", ToolWrite, map[string]any{"path": "linkdir/x.txt", "content": "x"}, true, "outside-workspace", true},
		{"list outside", ToolList, map[string]any{"path": "/"}, true, "denied by the joule gate", true},
		{"search outside", ToolSearch, map[string]any{"pattern": "x", "path": outside}, true, "denied by the joule gate", true},
		{"run denied", ToolCommand, map[string]any{"command": "rm -rf src"}, true, "deny-rule", true},
		{"run not granted", ToolCommand, map[string]any{"command": "curl http://example.com"}, true, "action-not-granted", true},
		{"run unanalyzable", ToolCommand, map[string]any{"command": "eval $X"}, true, "unanalyzable-command", true},

		{"wrong type", ToolRead, map[string]any{"path": 42}, true, `"path" must be a string`, false},
		{"wrong type bool", ToolEdit, map[string]any{"path": "a", "old_string": "a", "new_string": "b", "replace_all": "yes"}, true, `"replace_all" must be a boolean`, false},
		{"missing", ToolWrite, map[string]any{"path": "a"}, true, "are required", false},
		{"unknown arg", ToolRead, map[string]any{"path": "a", "bogus": 1}, true, "unknown field", false},
		{"bad regexp", ToolSearch, map[string]any{"pattern": "("}, true, "not a valid regular expression", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.call(t, tt.tool, tt.args)
			got := text(r)
			if r.IsError != tt.isError {
				t.Errorf("isError = %v, want %v: %s", r.IsError, tt.isError, got)
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("result lacks %q:\n%s", tt.want, got)
			}
			sealed := strings.Contains(got, "receipt ") && strings.Contains(got, "joule://sessions/s1/receipts/")
			if sealed != tt.sealed {
				t.Errorf("names a receipt = %v, want %v:\n%s", sealed, tt.sealed, got)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "src", "new", "b.txt")); string(b) != "three 2 2\n" {
		t.Errorf("b.txt = %q", b)
	}
	if _, err := os.Stat(filepath.Join(outside, "x.txt")); err == nil {
		t.Error("a write escaped through a symlinked directory")
	}
}

func TestAnnotations(t *testing.T) {
	f := newFixture(t, Limits{})
	res, err := f.c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][3]bool{ // read-only, destructive, idempotent
		ToolRead: {true, false, true}, ToolList: {true, false, true}, ToolSearch: {true, false, true}, ToolStatus: {true, false, true},
		ToolWrite: {false, true, true}, ToolEdit: {false, true, false}, ToolCommand: {false, true, false}, ToolGate: {false, false, false},
	}
	if len(res.Tools) != len(want) {
		t.Errorf("%d tools, want %d", len(res.Tools), len(want))
	}
	for _, tool := range res.Tools {
		a := tool.Annotations
		w, ok := want[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %s", tool.Name)
			continue
		}
		got := [3]bool{*a.ReadOnlyHint, *a.DestructiveHint, *a.IdempotentHint}
		if got != w || *a.OpenWorldHint {
			t.Errorf("%s annotations = %v open=%v, want %v", tool.Name, got, *a.OpenWorldHint, w)
		}
	}
}

func TestBadInputNeverKillsOrBlocks(t *testing.T) {
	f := newFixture(t, Limits{CommandOutput: 4096, CommandTimeout: 5 * time.Second, EditBytes: 1 << 20})
	big := filepath.Join(f.ws, "big.txt")
	fh, _ := os.Create(big)
	line := strings.Repeat("x", 99) + "\n"
	chunk := strings.Repeat(line, 10000) // 1 MB
	for i := 0; i < 100; i++ {
		fh.WriteString(chunk)
	}
	fh.Close()
	os.WriteFile(filepath.Join(f.ws, "bin.dat"), []byte("\x7fELF\x00\x01\x02binary"), 0o644)
	os.WriteFile(filepath.Join(f.ws, "latin1.txt"), []byte("caf\xe9 au lait, "+strings.Repeat("x", 20)), 0o644)

	// A command that never ends, running while the other calls are answered.
	slowCtx, cancelSlow := context.WithCancel(context.Background())
	defer cancelSlow()
	slowDone := make(chan struct{})
	go func() {
		defer close(slowDone)
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = ToolCommand, map[string]any{"command": "sleep 600", "timeout_seconds": 300}
		f.c.CallTool(slowCtx, req)
	}()
	time.Sleep(100 * time.Millisecond)
	tests := []struct {
		name, tool string
		args       map[string]any
		isError    bool
		want       string
	}{
		{"100 MB whole", ToolRead, map[string]any{"path": "big.txt"}, true, "over the 1048576-byte read limit"},
		{"100 MB range", ToolRead, map[string]any{"path": "big.txt", "offset": 500000, "limit": 2}, false, strings.Repeat("x", 99)},
		{"binary", ToolRead, map[string]any{"path": "bin.dat"}, true, "binary file"},
		{"not utf-8", ToolRead, map[string]any{"path": "latin1.txt"}, true, "binary file"},
		{"directory", ToolRead, map[string]any{"path": "src"}, true, "is a directory"},
		{"missing", ToolRead, map[string]any{"path": "nope.txt"}, true, "no such file"},
		{"edit binary", ToolEdit, map[string]any{"path": "bin.dat", "old_string": "ELF", "new_string": "FLE"}, true, "binary file"},
		{"flood", ToolCommand, map[string]any{"command": "yes flood", "timeout_seconds": 1}, true, "output truncated: 4096 of"},
		{"negative offset", ToolRead, map[string]any{"path": "big.txt", "offset": -1}, true, "must not be negative"},
		{"oversized write", ToolWrite, map[string]any{"path": "huge.txt", "content": strings.Repeat(chunk, 2)}, true, "over the 1048576-byte write limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.call(t, tt.tool, tt.args)
			if r.IsError != tt.isError || !strings.Contains(text(r), tt.want) {
				t.Errorf("isError=%v, want %v, text lacks %q:\n%.500s", r.IsError, tt.isError, tt.want, text(r))
			}
		})
	}
	select {
	case <-slowDone:
		t.Error("the endless command ended before the other calls were answered")
	default:
	}
	cancelSlow() // the client gives up: the command is killed
	select {
	case <-slowDone:
	case <-time.After(10 * time.Second):
		t.Error("a cancelled command was not killed")
	}
	slow := f.call(t, ToolCommand, map[string]any{"command": "sleep 600", "timeout_seconds": 1})
	if !slow.IsError || !strings.Contains(text(slow), "killed at the 1s time limit") {
		t.Errorf("endless command: %s", text(slow))
	}
	// The server still answers.
	if r := f.call(t, ToolCommand, map[string]any{"command": "echo alive"}); r.IsError || !strings.Contains(text(r), "alive") {
		t.Errorf("after bad input: %s", text(r))
	}
}

func TestSearchRespectsGitignore(t *testing.T) {
	f := newFixture(t, Limits{})
	files := map[string]string{
		".gitignore":           "build/\n*.log\n/rootonly.txt\ndocs/*.md\n",
		"docs/a.md":            "needle in docs\n",
		"docs/x/b.md":          "needle below docs\n",
		"main.go":              "needle in main\n",
		"build/out.go":         "needle in build\n",
		"debug.log":            "needle in log\n",
		"rootonly.txt":         "needle at root\n",
		"sub/rootonly.txt":     "needle in sub rootonly\n",
		"sub/.gitignore":       "local.txt\n!keep.log\n",
		"sub/local.txt":        "needle local\n",
		"sub/keep.log":         "needle keep\n",
		"sub/deeper/local.txt": "needle deeper local\n",
		".git/config":          "needle in git\n",
		"img.bin":              "needle\x00binary\n",
	}
	for p, c := range files {
		full := filepath.Join(f.ws, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, []byte(c), 0o644)
	}
	r := f.call(t, ToolSearch, map[string]any{"pattern": "needle"})
	got := text(r)
	// What git keeps: a deeper file's negation re-includes, and a pattern
	// with a middle slash is anchored to its file's directory.
	for _, want := range []string{"main.go:1:", "sub/rootonly.txt:1:", "sub/keep.log:1:", "docs/x/b.md:1:"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %s:\n%s", want, got)
		}
	}
	for _, bad := range []string{"build/out.go", "debug.log", "docs/a.md", "\nrootonly.txt", "sub/local.txt", "sub/deeper/local.txt", ".git/config", "img.bin"} {
		if strings.Contains("\n"+got, bad+":") {
			t.Errorf("ignored file %s matched:\n%s", bad, got)
		}
	}
	r = f.call(t, ToolSearch, map[string]any{"pattern": "NEEDLE", "ignore_case": true, "glob": "*.go", "max_results": 1})
	if got := text(r); !strings.Contains(got, "main.go:1:") || strings.Count(got, "needle") != 1 {
		t.Errorf("glob/max: %s", got)
	}
}

func TestResources(t *testing.T) {
	f := newFixture(t, Limits{})
	f.call(t, ToolList, map[string]any{})
	f.call(t, ToolCommand, map[string]any{"command": "rm -rf /"})
	ctx := context.Background()

	list, err := f.c.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range list.Resources {
		uris = append(uris, r.URI)
	}
	if strings.Join(uris, " ") != "joule://checkpoint joule://grants joule://sessions joule://steward" {
		t.Errorf("resources: %v", uris)
	}
	tl, err := f.c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	if err != nil || len(tl.ResourceTemplates) != 6 {
		t.Fatalf("templates: %v %v", tl, err)
	}

	st, _ := f.read(t, URISteward)
	if st["steward"] != "test.example" || st["verifier_key"] != f.id.VerifierKey {
		t.Errorf("steward: %v", st)
	}
	// The session, and the trust chain that issued and activated the
	// fixture's grant (session joule-grants, two receipts).
	sess, _ := f.read(t, URISessions)
	if sess["total"].(float64) != 2 {
		t.Errorf("sessions: %v", sess)
	}
	sum, _ := f.read(t, "joule://sessions/s1")
	dec := sum["decisions"].(map[string]any)
	if sum["receipts"].(float64) != 2 || dec["allowed"].(float64) != 1 || dec["denied"].(float64) != 1 {
		t.Errorf("summary: %v", sum)
	}
	if !strings.HasPrefix(sum["chain"].(string), "intact") || !strings.Contains(sum["coverage"].(string), "not a whole-session energy figure") {
		t.Errorf("summary chain/coverage: %v / %v", sum["chain"], sum["coverage"])
	}
	if sum["energy_uj"].(float64) != float64(gate.DefaultCosts.Of("Glob")) {
		t.Errorf("energy: %v", sum["energy_uj"])
	}
	if b := sum["budget"].(map[string]any); b["left_uj"].(float64) != float64(1<<40-gate.DefaultCosts.Of("Glob")) {
		t.Errorf("budget: %v", b)
	}
	rc, _ := f.read(t, "joule://sessions/s1/receipts/2")
	if rc["verified"] != true || rc["receipt"].(map[string]any)["decision"] != "deny" {
		t.Errorf("receipt: %v", rc)
	}
	le, _ := f.read(t, "joule://log/0")
	if le["sequence"].(float64) != 1 || le["verified"] != true {
		t.Errorf("log entry: %v", le)
	}
	rl, _ := f.read(t, "joule://sessions/s1/receipts")
	if items := rl["receipts"].([]any); len(items) != 2 || items[1].(map[string]any)["code"] != "deny-rule" {
		t.Errorf("receipt list: %v", rl)
	}
	cp, _ := f.read(t, URICheckpoint)
	if cp["size"].(float64) != 4 || !strings.Contains(cp["note"].(string), "— test.example ") {
		t.Errorf("checkpoint: %v", cp)
	}
	gr, _ := f.read(t, URIGrants)
	g0 := gr["grants"].([]any)[0].(map[string]any)
	if g0["active"] != true || g0["spent_uj"].(float64) != float64(gate.DefaultCosts.Of("Glob")) {
		t.Errorf("grants: %v", gr)
	}
	if one, err := f.read(t, g0["uri"].(string)); err != nil || one["id"] != g0["id"] {
		t.Errorf("grant: %v %v", one, err)
	}

	for _, bad := range []string{"joule://nope", "joule://sessions/s1/receipts/0", "joule://sessions/s1/receipts/x", "joule://sessions/s1/receipts/99",
		"joule://sessions/none", "joule://sessions?cursor=-1", "joule://sessions/s1/receipts?after=x", "joule://log/-1", "joule://grants/nope", "http://x"} {
		if _, err := f.read(t, bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestPagination(t *testing.T) {
	f := newFixture(t, Limits{})
	for i := 0; i < PageSize+5; i++ {
		f.gate.DecideJSON(context.Background(), []byte(fmt.Sprintf(`{"session_id":"p%03d","tool":"Read","input":{"file_path":"a"},"cwd":%q}`, i, f.ws)))
	}
	for i := 0; i < PageSize+3; i++ {
		f.call(t, ToolRead, map[string]any{"path": "nope"})
	}
	p1, _ := f.read(t, URISessions)
	if len(p1["sessions"].([]any)) != PageSize || p1["next_uri"] != "joule://sessions?cursor=100" {
		t.Fatalf("page 1: %d next %v", len(p1["sessions"].([]any)), p1["next_uri"])
	}
	p2, _ := f.read(t, p1["next_uri"].(string))
	if len(p2["sessions"].([]any)) != 7 || p2["next_uri"] != nil { // joule-grants too
		t.Errorf("page 2: %v", p2)
	}
	r1, _ := f.read(t, "joule://sessions/s1/receipts")
	r2, _ := f.read(t, r1["next_uri"].(string))
	if len(r1["receipts"].([]any)) != PageSize || len(r2["receipts"].([]any)) != 3 || r2["receipts"].([]any)[0].(map[string]any)["sequence"].(float64) != PageSize+1 {
		t.Errorf("receipt pages: %v", r2)
	}
	// A session id that needs escaping round-trips through its URI.
	f.gate.DecideJSON(context.Background(), []byte(fmt.Sprintf(`{"session_id":"a b/c:d","tool":"Read","input":{"file_path":"a"},"cwd":%q}`, f.ws)))
	if s, err := f.read(t, sessionURI("a b/c:d")); err != nil || s["session"] != "a b/c:d" {
		t.Errorf("escaped session: %v %v", s, err)
	}
}

// TestSubscribeSeesOtherWriters: a receipt sealed through a separate store
// handle (as another process would) reaches the subscriber within a second.
func TestSubscribeSeesOtherWriters(t *testing.T) {
	f := newFixture(t, Limits{})
	other := openGate(t, f.home, f.id)
	ctx := context.Background()
	seal := func(session string) {
		r := other.DecideJSON(ctx, []byte(fmt.Sprintf(`{"session_id":%q,"tool":"Read","input":{"file_path":"x"},"cwd":%q}`, session, f.ws)))
		if r.Receipt == "" {
			t.Fatalf("not sealed: %+v", r)
		}
	}
	seal("hook-1")
	sub := mcp.SubscribeRequest{}
	sub.Params.URI = "joule://sessions/hook-1"
	if err := f.c.Subscribe(ctx, sub); err != nil {
		t.Fatal(err)
	}
	seal("unrelated")
	seal("hook-1")
	t0 := time.Now()
	select {
	case n := <-f.notes:
		if n.Method != mcp.MethodNotificationResourceUpdated || n.Params.AdditionalFields["uri"] != "joule://sessions/hook-1" {
			t.Errorf("notification %+v", n)
		}
	case <-time.After(time.Second):
		t.Fatal("no notifications/resources/updated within 1 s")
	}
	t.Logf("notified after %s", time.Since(t0))
	select {
	case n := <-f.notes:
		t.Errorf("unexpected second notification %+v", n)
	case <-time.After(300 * time.Millisecond):
	}
	unsub := mcp.UnsubscribeRequest{}
	unsub.Params.URI = sub.Params.URI
	if err := f.c.Unsubscribe(ctx, unsub); err != nil {
		t.Fatal(err)
	}
	seal("hook-1")
	select {
	case n := <-f.notes:
		t.Errorf("notified after unsubscribe: %+v", n)
	case <-time.After(300 * time.Millisecond):
	}
}

func TestGateTool(t *testing.T) {
	f := newFixture(t, Limits{})
	tests := []struct {
		name     string
		args     map[string]any
		decision string
		code     string
	}{
		{"claude code allow", map[string]any{"session_id": "cc1", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": map[string]any{"command": "echo hi"}, "cwd": f.ws, "transcript_path": "/x"}, "allow", "allowed"},
		{"claude code deny", map[string]any{"session_id": "cc1", "tool_name": "Bash", "tool_input": map[string]any{"command": "rm -rf /"}, "cwd": f.ws}, "deny", "deny-rule"},
		{"action event", map[string]any{"session_id": "cc1", "tool": "Read", "input": map[string]any{"file_path": "x"}, "cwd": f.ws}, "allow", "allowed"},
		{"payload object", map[string]any{"payload": map[string]any{"session_id": "cc1", "tool_name": "Write", "tool_input": map[string]any{"file_path": "/etc/x"}, "cwd": f.ws}}, "deny", "outside-workspace"},
		{"payload text", map[string]any{"payload": `{"session_id":"cc1","tool_name":"Read","tool_input":{"file_path":"y"},"cwd":"` + f.ws + `"}`}, "allow", "allowed"},
		{"input as text", map[string]any{"session_id": "cc1", "tool_name": "Bash", "tool_input": `{"command":"echo x"}`, "cwd": f.ws}, "allow", "allowed"},
		{"missing tool", map[string]any{"session_id": "cc1", "cwd": f.ws}, "deny", "malformed-event"},
		{"relative cwd", map[string]any{"session_id": "cc1", "tool_name": "Read", "tool_input": map[string]any{"file_path": "y"}, "cwd": "rel"}, "deny", "malformed-event"},
		{"wrong type", map[string]any{"session_id": 7}, "deny", "malformed-event"},
		{"bad payload", map[string]any{"payload": "not json"}, "deny", "malformed-event"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.call(t, ToolGate, tt.args)
			var out struct {
				Decision string         `json:"decision"`
				Code     string         `json:"code"`
				Receipt  string         `json:"receipt"`
				Hook     map[string]any `json:"hookSpecificOutput"`
			}
			if err := json.Unmarshal([]byte(strings.TrimSpace(text(r))), &out); err != nil {
				t.Fatalf("%v: %s", err, text(r))
			}
			if out.Decision != tt.decision || out.Code != tt.code || out.Hook["permissionDecision"] != tt.decision || out.Hook["hookEventName"] != "PreToolUse" {
				t.Errorf("got %+v", out)
			}
			if out.Receipt == "" {
				t.Errorf("no receipt: %s", text(r))
			}
		})
	}
}

// TestStdioTransport drives the server over real pipes with mcp-go's
// client, as a host that launches `joule mcp` does.
func TestStdioTransport(t *testing.T) {
	f := newFixture(t, Limits{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- f.srv.ServeStdio(ctx, inR, outW, io.Discard); outW.Close() }()
	c := client.NewClient(transport.NewIO(outR, inW, io.NopCloser(strings.NewReader(""))), client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	notes := start(t, c)
	os.WriteFile(filepath.Join(f.ws, "hello.txt"), []byte("hello\n"), 0o644)
	if r := callTool(t, c, ToolRead, map[string]any{"path": "hello.txt"}); r.IsError || !strings.HasPrefix(text(r), "hello\n") {
		t.Errorf("read: %s", text(r))
	}
	sub := mcp.SubscribeRequest{}
	sub.Params.URI = "joule://sessions/s1"
	if err := c.Subscribe(ctx, sub); err != nil {
		t.Fatal(err)
	}
	other := openGate(t, f.home, f.id)
	other.DecideJSON(ctx, []byte(fmt.Sprintf(`{"session_id":"s1","tool":"Read","input":{"file_path":"x"},"cwd":%q}`, f.ws)))
	select {
	case n := <-notes:
		if n.Params.AdditionalFields["uri"] != "joule://sessions/s1" {
			t.Errorf("notification %+v", n)
		}
	case <-time.After(time.Second):
		t.Fatal("no update over stdio within 1 s")
	}
	c.Close()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Error("ServeStdio did not return")
	}
}

func TestHTTPAuthAndOrigin(t *testing.T) {
	f := newFixture(t, Limits{})
	const token = "0123456789abcdef0123456789abcdef"
	h, err := f.srv.HTTPHandler(token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.srv.HTTPHandler("short"); err == nil {
		t.Error("short token accepted")
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	post := func(hdr map[string]string) int {
		req, _ := http.NewRequest("POST", ts.URL+HTTPPath, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	tests := []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"no token", nil, 401},
		{"wrong token", map[string]string{"Authorization": "Bearer " + strings.Repeat("x", 32)}, 401},
		{"basic", map[string]string{"Authorization": "Basic " + token}, 401},
		{"evil origin", map[string]string{"Authorization": "Bearer " + token, "Origin": "http://evil.example"}, 403},
		{"rebinding origin", map[string]string{"Authorization": "Bearer " + token, "Origin": "http://127.0.0.1.evil.example:8080"}, 403},
		{"ok", map[string]string{"Authorization": "Bearer " + token}, 200},
		{"ok localhost origin", map[string]string{"Authorization": "Bearer " + token, "Origin": "http://localhost:3000"}, 200},
	}
	for _, tt := range tests {
		if got := post(tt.hdr); got != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, got, tt.want)
		}
	}
	// A real client over streamable HTTP.
	c, err := client.NewStreamableHttpClient(ts.URL+HTTPPath, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	if r := callTool(t, c, ToolStatus, map[string]any{}); r.IsError || !strings.Contains(text(r), "session s1") {
		t.Errorf("status over HTTP: %s", text(r))
	}
}

func TestLoopbackAddr(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:8931": true, "[::1]:1": true, "localhost:80": true, "0.0.0.0:80": false, ":8080": false, "192.168.1.2:80": false, "bad": false} {
		if got := LoopbackAddr(addr); got != want {
			t.Errorf("LoopbackAddr(%q) = %v", addr, got)
		}
	}
}

// TestSubscribeModernProtocol: a client on protocol 2026-07-28 names the
// session in subscriptions/listen and gets the same update.
func TestSubscribeModernProtocol(t *testing.T) {
	f := newFixture(t, Limits{})
	c, err := client.NewInProcessClient(f.srv.MCP())
	if err != nil {
		t.Fatal(err)
	}
	notes := make(chan mcp.JSONRPCNotification, 10)
	c.OnNotification(func(n mcp.JSONRPCNotification) { notes <- n })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "modern", Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatal(err)
	}
	if !mcp.IsModernProtocol(res.ProtocolVersion) {
		t.Skipf("negotiated %s", res.ProtocolVersion)
	}
	go c.Listen(ctx, mcp.SubscriptionFilter{ResourceSubscriptions: []string{"joule://sessions/m1"}})
	other := openGate(t, f.home, f.id)
	deadline := time.After(2 * time.Second)
	for {
		other.DecideJSON(ctx, []byte(fmt.Sprintf(`{"session_id":"m1","tool":"Read","input":{"file_path":"x"},"cwd":%q}`, f.ws)))
		select {
		case n := <-notes:
			if n.Method == mcp.MethodNotificationResourceUpdated && n.Params.AdditionalFields["uri"] == "joule://sessions/m1" {
				return
			}
			t.Logf("other notification %+v", n)
		case <-time.After(300 * time.Millisecond):
			continue // the listen stream may not be open yet: seal again
		case <-deadline:
			t.Fatal("no update on the modern protocol")
		}
	}
}

// TestSubscribeOverHTTP: a streamable HTTP client subscribed to a session
// hears of receipts sealed by another writer.
func TestSubscribeOverHTTP(t *testing.T) {
	f := newFixture(t, Limits{})
	const token = "0123456789abcdef0123456789abcdef"
	h, err := f.srv.HTTPHandler(token)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	c, err := client.NewStreamableHttpClient(ts.URL+HTTPPath, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}), transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	notes := start(t, c)
	ctx := context.Background()
	sub := mcp.SubscribeRequest{}
	sub.Params.URI = "joule://sessions/h1"
	if err := c.Subscribe(ctx, sub); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the client's GET stream opens
	other := openGate(t, f.home, f.id)
	other.DecideJSON(ctx, []byte(fmt.Sprintf(`{"session_id":"h1","tool":"Read","input":{"file_path":"x"},"cwd":%q}`, f.ws)))
	select {
	case n := <-notes:
		if n.Params.AdditionalFields["uri"] != "joule://sessions/h1" {
			t.Errorf("notification %+v", n)
		}
	case <-time.After(time.Second):
		t.Fatal("no update over HTTP within 1 s")
	}
}

// TestForgedReceiptIsReported: a receipt in the store signed by another key
// reads as not verified, and its session's chain as broken.
func TestForgedReceiptIsReported(t *testing.T) {
	f := newFixture(t, Limits{})
	ctx := context.Background()
	f.gate.DecideJSON(ctx, []byte(fmt.Sprintf(`{"session_id":"forged","tool":"Read","input":{"file_path":"x"},"cwd":%q}`, f.ws)))
	mallory, err := identity.Create(filepath.Join(f.dir, "mallory"), "test.example", false)
	if err != nil {
		t.Fatal(err)
	}
	forger := &gate.Gate{Store: f.gate.Store, Trust: f.gate.Trust, JouleHome: f.gate.JouleHome, Home: f.gate.Home, Costs: f.gate.Costs, Now: f.gate.Now}
	forger.Sealer, _ = mallory.Sealer()
	forger.DecideJSON(ctx, []byte(fmt.Sprintf(`{"session_id":"forged","tool":"Read","input":{"file_path":"y"},"cwd":%q}`, f.ws)))
	good, _ := f.read(t, "joule://sessions/forged/receipts/1")
	bad, _ := f.read(t, "joule://sessions/forged/receipts/2")
	if good["verified"] != true || bad["verified"] != false || !strings.Contains(bad["verification"].(string), "does not verify") {
		t.Errorf("receipt 1: %v\nreceipt 2: %v %v", good["verified"], bad["verified"], bad["verification"])
	}
	sum, _ := f.read(t, "joule://sessions/forged")
	if !strings.HasPrefix(sum["chain"].(string), "BROKEN: receipt 2 does not verify") {
		t.Errorf("chain: %v", sum["chain"])
	}
	list, _ := f.read(t, "joule://sessions/forged/receipts")
	if items := list["receipts"].([]any); items[1].(map[string]any)["error"] == nil {
		t.Errorf("list does not flag the forged receipt: %v", items[1])
	}
}

// TestAskSealedAsDeny: the server cannot hold a call for a person, so a
// call the grant says to ask about is denied, and the receipt says deny.
func TestAskSealedAsDeny(t *testing.T) {
	f := newFixture(t, Limits{})
	res := f.call(t, ToolCommand, map[string]any{"command": "git push origin main"})
	if !res.IsError {
		t.Fatalf("git push ran: %+v", res)
	}
	rl, _ := f.read(t, "joule://sessions/s1/receipts")
	items := rl["receipts"].([]any)
	last := items[len(items)-1].(map[string]any)
	if last["decision"] != gate.Deny || last["code"] != gate.CodeAskRule || last["energy_uj"].(float64) != 0 {
		t.Fatalf("receipt: %v", last)
	}
	full, _ := f.read(t, last["uri"].(string))
	if r, _ := full["receipt"].(map[string]any); r == nil || !strings.Contains(fmt.Sprint(r["reason"]), "MCP server cannot ask") {
		t.Fatalf("receipt reason: %v", full)
	}
}

// TestGrantsResourcePerWorkspace: with a grant of its own for the
// server's workspace, the grants resource marks that grant active (it
// decides the server's tools), not the default, and says where each is
// active.
func TestGrantsResourcePerWorkspace(t *testing.T) {
	f := newFixture(t, Limits{})
	ctx := context.Background()
	is, _ := grant.NewIssuer(f.id.Steward, f.id.Key)
	sg, err := is.Sign(&grant.Grant{Subject: grant.AnySubject, Roots: []string{f.ws}, Allow: []string{"Read"}, Tiers: []string{},
		BudgetUJ: 1 << 30, NotBefore: time.Now().Add(-time.Hour).Unix(), NotAfter: time.Now().Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.gate.Adopt(ctx, sg, "workspace grant", false); err != nil {
		t.Fatal(err)
	}
	wsGrant := sg.ID.String()
	if err := f.gate.UseWorkspace(ctx, wsGrant, f.ws); err != nil {
		t.Fatal(err)
	}
	gr, err := f.read(t, URIGrants)
	if err != nil {
		t.Fatal(err)
	}
	if gr["active"] != wsGrant {
		t.Errorf("active %v, want the workspace's grant %s", gr["active"], wsGrant)
	}
	seen := 0
	for _, x := range gr["grants"].([]any) {
		g := x.(map[string]any)
		places := fmt.Sprint(g["active_for"])
		switch g["id"] {
		case wsGrant:
			seen++
			if g["active"] != true || places != "["+f.ws+"]" {
				t.Errorf("workspace grant: active %v for %s", g["active"], places)
			}
		default:
			seen++
			if g["active"] != false || places != "[default]" {
				t.Errorf("default grant: active %v for %s", g["active"], places)
			}
		}
	}
	if seen != 2 {
		t.Errorf("%d grants listed, want 2: %v", seen, gr)
	}
	if b := budgetOf(ctx, f.srv, "s1"); b.Grant != wsGrant {
		t.Errorf("the budget shown is grant %s's, want the workspace's %s", b.Grant, wsGrant)
	}
}

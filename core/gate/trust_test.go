package gate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/core/trust"
)

// trustGate is a gate over a fresh store with no grant, and an issuer it
// trusts.
func trustGate(t testing.TB) (*Gate, *grant.Issuer, string) {
	t.Helper()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	home := filepath.Join(dir, "home")
	id, err := identity.Create(home, "trust.test", false)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(home, "joule.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	is, err := grant.NewIssuer(id.Steward, id.Key)
	if err != nil {
		t.Fatal(err)
	}
	sealer, _ := id.Sealer()
	return &Gate{Store: st, Sealer: sealer, Trust: grant.Trust{id.Steward: id.Public()}, JouleHome: home}, is, ws
}

func newGrant(ws string, budget uint64, ttl time.Duration) *grant.Grant {
	now := time.Now()
	return &grant.Grant{Subject: grant.AnySubject, Roots: []string{ws}, Allow: []string{"Read", "Bash(go test:*)"}, Tiers: []string{"l0"},
		BudgetUJ: budget, NotBefore: now.Add(-time.Minute).Unix(), NotAfter: now.Add(ttl).Unix()}
}

func TestIssueUseResolve(t *testing.T) {
	ctx := context.Background()
	g, is, ws := trustGate(t)
	if _, err := g.ResolveGrant(ctx, ActiveGrant); !errors.Is(err, ErrNoActiveGrant) {
		t.Fatalf("empty store: %v", err)
	}
	s, err := g.Issue(ctx, is, newGrant(ws, 1000, time.Hour), "", false)
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID.String()
	if _, err := g.ResolveGrant(ctx, ActiveGrant); !errors.Is(err, ErrNoActiveGrant) {
		t.Fatalf("issued without use, yet active: %v", err)
	}
	if got, err := g.ResolveGrant(ctx, id[:8]); got != id || err != nil {
		t.Fatalf("prefix: %q, %v", got, err)
	}
	if _, err := g.ResolveGrant(ctx, "ffffffff"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown prefix: %v", err)
	}
	s2, err := g.Issue(ctx, is, newGrant(ws, 500, time.Hour), "", true)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := g.ResolveGrant(ctx, ActiveGrant); got != s2.ID.String() || err != nil {
		t.Fatalf("issued with use: active is %q, %v", got, err)
	}
	// Use, for every session and for one.
	if err := g.Use(ctx, id, ""); err != nil {
		t.Fatal(err)
	}
	if err := g.Use(ctx, s2.ID.String(), "s1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := g.ActiveID(ctx, "s2"); got != id {
		t.Fatalf("global active %q, want %q", got, id)
	}
	if got, _ := g.ActiveID(ctx, "s1"); got != s2.ID.String() {
		t.Fatalf("session active %q", got)
	}
	// A revoked grant, or one for another subject, cannot be made active.
	if err := g.Revoke(ctx, s2.ID.String()); err != nil {
		t.Fatal(err)
	}
	if err := g.Use(ctx, s2.ID.String(), ""); !errors.Is(err, store.ErrRevoked) {
		t.Fatalf("use revoked: %v", err)
	}
	only := newGrant(ws, 10, time.Hour)
	only.Subject = "s2"
	s3, err := g.Issue(ctx, is, only, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Use(ctx, s3.ID.String(), "s1"); !errors.Is(err, grant.ErrWrongUser) {
		t.Fatalf("use for another subject: %v", err)
	}
	if err := g.Use(ctx, s3.ID.String(), ""); err != nil {
		t.Fatalf("use as its own subject: %v", err)
	}
}

func TestIssueDelegated(t *testing.T) {
	ctx := context.Background()
	g, is, ws := trustGate(t)
	parent, err := g.Issue(ctx, is, newGrant(ws, 1000, time.Hour), "", true)
	if err != nil {
		t.Fatal(err)
	}
	pid := parent.ID.String()
	// No budget: the child takes what the parent has left; its window is
	// clipped to the parent's.
	child, err := g.Issue(ctx, is, newGrant(ws, 0, 5*time.Hour), pid, false)
	if err != nil {
		t.Fatal(err)
	}
	if c := child.Grant; c.Parent != pid || c.BudgetUJ != 1000 || c.NotAfter != parent.Grant.NotAfter {
		t.Fatalf("child: %+v", c)
	}
	for _, tc := range []struct {
		name string
		g    func() *grant.Grant
		want string
	}{
		{"a budget above the parent's", func() *grant.Grant { return newGrant(ws, 1001, time.Hour) }, "exceeds the parent's"},
		{"wider rules", func() *grant.Grant {
			c := newGrant(ws, 10, time.Hour)
			c.Allow = append(c.Allow, "Write")
			return c
		}, "does not attenuate"},
	} {
		if _, err := g.Issue(ctx, is, tc.g(), pid, false); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := g.Issue(ctx, is, newGrant(ws, 10, time.Hour), "ab", false); err == nil || !strings.HasPrefix(err.Error(), "parent ab: ") {
		t.Fatalf("unknown parent: %v", err)
	}
}

func TestRenew(t *testing.T) {
	ctx := context.Background()
	g, is, ws := trustGate(t)
	old, err := g.Issue(ctx, is, newGrant(ws, 1000, time.Hour), "", true)
	if err != nil {
		t.Fatal(err)
	}
	oldID := old.ID.String()
	if err := g.Use(ctx, oldID, "s1"); err != nil {
		t.Fatal(err)
	}
	r, err := g.Renew(ctx, is, oldID, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	newID := r.Grant.ID.String()
	if r.Moved != 2 || r.Grant.Grant.BudgetUJ != 1000 || r.Grant.Grant.NotAfter-r.Grant.Grant.NotBefore != 7200 {
		t.Fatalf("renewed: moved %d, %+v", r.Moved, r.Grant.Grant)
	}
	if r.Receipt.Session != GrantsSession {
		t.Fatalf("receipt in %q", r.Receipt.Session)
	}
	for _, session := range []string{"s2", "s1"} {
		if got, _ := g.ActiveID(ctx, session); got != newID {
			t.Fatalf("active for %s = %q, want the new grant", session, got)
		}
	}
	if rec, _ := g.Store.Grant(ctx, oldID); !rec.Revoked {
		t.Fatal("the old grant is not revoked")
	}
	if _, err := g.Renew(ctx, is, oldID, 0); err == nil || !strings.Contains(err.Error(), "is revoked") {
		t.Fatalf("renew a revoked grant: %v", err)
	}
}

// TestTrustStateFollowsTheChain: a resident gate derives the trust state
// once and follows every change another process seals (here a second gate
// on the same store, as 'joule grant revoke' is); a grant the chain makes
// active without an issue receipt is grant-unrecorded, with the command
// that records it, which then works; and a host cannot seal into the
// chain.
func TestTrustStateFollowsTheChain(t *testing.T) {
	ctx := context.Background()
	g, is, ws := trustGate(t)
	s, err := g.Issue(ctx, is, newGrant(ws, 1_000_000, time.Hour), "", true)
	if err != nil {
		t.Fatal(err)
	}
	event := func(session string) []byte {
		return []byte(fmt.Sprintf(`{"session_id":%q,"tool":"Bash","input":{"command":"go test ./..."},"cwd":%q}`, session, ws))
	}
	if r := g.DecideJSON(ctx, event("s1")); r.Decision != Allow {
		t.Fatalf("before: %+v", r)
	}
	other := &Gate{Store: g.Store, Sealer: g.Sealer, Trust: g.Trust, JouleHome: g.JouleHome}
	if err := other.Revoke(ctx, s.ID.String()); err != nil {
		t.Fatal(err)
	}
	if r := g.DecideJSON(ctx, event("s1")); r.Code != CodeGrantRevoked {
		t.Fatalf("a revocation sealed by another process: %+v", r)
	}

	// Made active by a receipt of the chain, never issued by one.
	s2, err := is.Sign(newGrant(ws, 1_000_000, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	id := s2.ID.String()
	if err := g.Store.PutGrant(ctx, store.GrantRecord{ID: id, Signed: s2.Envelope, BudgetUJ: s2.Grant.BudgetUJ}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.SealRecord(ctx, Record{Session: trust.GrantsSession, Tool: "joule grant use", Code: trust.CodeActivated,
		Summary: trust.ActivatedSummary(id, ""), Grants: []string{id}}); err != nil {
		t.Fatal(err)
	}
	r := g.DecideJSON(ctx, event("s1"))
	if r.Code != CodeGrantUnrecorded || !strings.Contains(r.Reason, "'joule grant adopt "+id+"'") || r.Receipt == "" {
		t.Fatalf("an unrecorded grant made active: %+v", r)
	}
	if err := g.Adopt(ctx, s2, "test", false); err != nil {
		t.Fatal(err)
	}
	if r := g.DecideJSON(ctx, event("s1")); r.Decision != Allow {
		t.Fatalf("after adopt: %+v", r)
	}

	// A host's event naming the chain is sealed elsewhere, refused.
	before, _ := g.TrustState(ctx)
	r = g.DecideJSON(ctx, event(trust.GrantsSession))
	if r.Code != CodeMalformed || r.Session != MalformedSession {
		t.Fatalf("an event of session %s: %+v", trust.GrantsSession, r)
	}
	if r := g.ConsultTier(ctx, trust.GrantsSession, ws, "L0"); r.Code != CodeMalformed {
		t.Fatalf("a tier consultation of session %s: %+v", trust.GrantsSession, r)
	}
	if after, _ := g.TrustState(ctx); after.Seq != before.Seq {
		t.Fatalf("the trust chain grew from %d to %d receipts", before.Seq, after.Seq)
	}
}

// TestContainmentFromAnotherConfig: a containment built from a
// config.json read apart from the one the gate checked (changed in
// between) rewrites nothing: the decision is config-unsigned.
func TestContainmentFromAnotherConfig(t *testing.T) {
	ctx := context.Background()
	g, is, ws := trustGate(t)
	if _, err := g.Issue(ctx, is, newGrant(ws, 1_000_000, time.Hour), "", true); err != nil {
		t.Fatal(err)
	}
	checked := core.Sum([]byte("the config the gate checked"))
	g.Files = &trust.Files{Home: "joule-home:trust.test+1", Steward: g.Sealer.Steward(), Key: g.Trust[g.Sealer.Steward()],
		Issuers: trust.NoIssuers, Config: checked, DefaultConfig: checked}
	ev := &Event{SessionID: "s1", Tool: "Bash", Input: []byte(`{"command":"go test ./..."}`), Cwd: ws}
	same := Contained{Gate: g, C: &Containment{Off: "test", Config: checked}}
	if r := same.Decide(ctx, ev); r.Decision != Allow {
		t.Fatalf("the same configuration: %+v", r)
	}
	other := Contained{Gate: g, C: &Containment{Off: "test", Config: core.Sum([]byte("edited since"))}}
	if r := other.Decide(ctx, ev); r.Code != CodeConfigUnsigned || r.Receipt == "" {
		t.Fatalf("a containment from another configuration: %+v", r)
	}
}

// TestWorkspaceChoosesTheGrant: with a grant active for each of two
// workspace roots and one for every session, an action is decided by the
// grant of the root holding its directory (a symbolic link to it
// included), one elsewhere by the default, a session's own grant wins over
// both, and without a default an action elsewhere is denied naming joule
// init; a later choice for every session replaces the workspaces'. Each
// choice is a receipt in the trust chain.
func TestWorkspaceChoosesTheGrant(t *testing.T) {
	ctx := context.Background()
	g, is, ws := trustGate(t)
	dir := filepath.Dir(ws)
	a, b, elsewhere := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "elsewhere")
	for _, d := range []string{a, b, elsewhere, filepath.Join(b, "pkg")} {
		os.MkdirAll(d, 0o755)
	}
	link := filepath.Join(dir, "link-to-b")
	if err := os.Symlink(b, link); err != nil {
		t.Fatal(err)
	}
	read := func(session, cwd string) Result {
		return g.Decide(ctx, &Event{SessionID: session, Tool: "Read", Cwd: cwd,
			Input: []byte(`{"file_path":"` + filepath.Join(cwd, "x.go") + `"}`)})
	}
	sa, err := g.Issue(ctx, is, newGrant(a, 1e9, time.Hour), "", false)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := g.Issue(ctx, is, newGrant(b, 1e9, time.Hour), "", false)
	if err != nil {
		t.Fatal(err)
	}
	idA, idB := sa.ID.String(), sb.ID.String()
	for root, id := range map[string]string{a: idA, b: idB} {
		if err := g.UseWorkspace(ctx, id, root); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.UseWorkspace(ctx, idA, "relative/dir"); err == nil {
		t.Fatal("a relative workspace was taken")
	}
	if r := read("s", elsewhere); r.Decision != Deny || r.Code != CodeNoActiveGrant || !strings.Contains(r.Reason, "joule init") || !strings.Contains(r.Reason, elsewhere) {
		t.Fatalf("elsewhere with no default: %+v", r)
	}
	// A choice for every session replaces the workspaces' own: b is
	// decided by A (its workspace is a: outside), until b's is chosen again.
	if err := g.Use(ctx, idA, ""); err != nil {
		t.Fatal(err)
	}
	if r := read("s", b); r.Decision != Deny || r.Grants[len(r.Grants)-1] != idA {
		t.Fatalf("after grant use for every session, b: %+v", r)
	}
	for root, id := range map[string]string{a: idA, b: idB} {
		if err := g.UseWorkspace(ctx, id, root); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		session, cwd, grant, decision string
	}{
		{"s", a, idA, Allow},
		{"s", b, idB, Allow},
		{"s", filepath.Join(b, "pkg"), idB, Allow},
		{"s", link, idB, Allow},
		{"s", elsewhere, idA, Deny}, // the default, whose workspace is a
	} {
		r := read(tt.session, tt.cwd)
		if r.Decision != tt.decision || len(r.Grants) == 0 || r.Grants[len(r.Grants)-1] != tt.grant {
			t.Errorf("%s in %s: %+v, want %s by %.8s", tt.session, tt.cwd, r, tt.decision, tt.grant)
		}
		if tt.decision == Deny && (r.Code != CodeOutside || !strings.Contains(r.Reason, "joule init")) {
			t.Errorf("%s: the deny does not name joule init: %+v", tt.cwd, r)
		}
	}
	if err := g.Use(ctx, idA, "pinned"); err != nil {
		t.Fatal(err)
	}
	if r := read("pinned", b); r.Decision != Deny || r.Grants[len(r.Grants)-1] != idA {
		t.Fatalf("a session's own grant does not win over the workspace's: %+v", r)
	}
	if got, err := g.ResolveGrantAt(ctx, ActiveGrant, filepath.Join(b, "pkg")); got != idB || err != nil {
		t.Fatalf("active in b: %q %v", got, err)
	}
	ts, err := g.TrustState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ws := ts.Workspaces(); len(ws) != 2 || ts.WorkspaceGrant(b) != idB {
		t.Fatalf("the chain's workspaces: %q", ws)
	}
}

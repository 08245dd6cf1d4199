package trust

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
)

const (
	idA = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	idB = "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"
)

func decision(code, summary string, grants ...string) *receipts.Decision {
	if grants == nil {
		grants = []string{}
	}
	return &receipts.Decision{Decision: receipts.Allow, Code: code, Summary: summary, Grants: grants}
}

// TestApply: each trust receipt in its exact form changes the state as
// documented, and anything else in the chain is refused.
func TestApply(t *testing.T) {
	g := NewGrants()
	steps := []*receipts.Decision{
		decision(CodeIssued, IssuedSummary(idA), idA),
		decision(CodeActivated, ActivatedSummary(idA, ""), idA),
		decision(CodeActivated, ActivatedSummary(idA, "s 1"), idA),
		decision(CodeRenewed, RenewedSummary(idA, idB), idA, idB),
	}
	for i, d := range steps {
		if err := g.Apply(uint64(i+1), d); err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
	}
	if !g.Issued(idA) || !g.Issued(idB) || !g.Revoked(idA) || g.Revoked(idB) || g.RevokedAt(idA) != 4 || g.IssuedAt(idB) != 4 {
		t.Fatalf("after renewal: %+v", g)
	}
	if g.Active("") != idB || g.Active("s 1") != idB || g.Active("other") != idB || len(g.Places(idB)) != 2 {
		t.Fatalf("the renewal did not move the active grant: %+v", g)
	}
	if err := g.Apply(5, decision(CodeRevoked, RevokedSummary(idB), idB)); err != nil || !g.Revoked(idB) {
		t.Fatalf("revoke: %v", err)
	}

	for _, tc := range []struct {
		name string
		d    *receipts.Decision
	}{
		{"a deny", &receipts.Decision{Decision: receipts.Deny, Code: CodeIssued, Summary: IssuedSummary(idA), Grants: []string{idA}}},
		{"a debit", &receipts.Decision{Decision: receipts.Allow, Code: CodeIssued, Summary: IssuedSummary(idA), Grants: []string{idA}, DebitUJ: 1}},
		{"a gate decision", decision("allowed", "Bash: go test", idA)},
		{"an unknown code", decision("grant-stolen", IssuedSummary(idA), idA)},
		{"issue of two", decision(CodeIssued, IssuedSummary(idA), idA, idB)},
		{"issue of another id than its summary's", decision(CodeIssued, IssuedSummary(idB), idA)},
		{"revoke of none", decision(CodeRevoked, RevokedSummary(idA))},
		{"activation without scope", decision(CodeActivated, "grant "+idA+" active", idA)},
		{"activation for an empty session", decision(CodeActivated, "grant "+idA+" active for session ", idA)},
		{"activation of another id", decision(CodeActivated, ActivatedSummary(idB, ""), idA)},
		{"activation for an empty workspace", decision(CodeActivated, WorkspaceSummary(idA, ""), idA)},
		{"activation for a relative workspace", decision(CodeActivated, WorkspaceSummary(idA, "src/a"), idA)},
		{"activation for an unclean workspace", decision(CodeActivated, WorkspaceSummary(idA, "/src/a/../b"), idA)},
		{"activation for a workspace with a trailing slash", decision(CodeActivated, WorkspaceSummary(idA, "/src/a/"), idA)},
		{"activation for a workspace of two lines", decision(CodeActivated, WorkspaceSummary(idA, "/src/a\n/src/b"), idA)},
		{"renewal of itself", decision(CodeRenewed, RenewedSummary(idA, idA), idA, idA)},
		{"renewal summary swapped", decision(CodeRenewed, RenewedSummary(idB, idA), idA, idB)},
		{"a home record in the grants chain", decision(CodeHome, HomeSummary(core.ID{}, core.ID{}))},
	} {
		err := NewGrants().Apply(7, tc.d)
		var te *Error
		if !errors.Is(err, ErrCorrupt) || !errors.As(err, &te) || te.Seq != 7 || te.Session != GrantsSession {
			t.Errorf("%s: %v, want a corrupt chain at seq 7", tc.name, err)
		}
	}
}

// TestActiveAt: the grant that decides an action is the session's own,
// else the one of the longest workspace root holding its directory (by
// whole components), else the default; a renewal moves every choice.
func TestActiveAt(t *testing.T) {
	const idC = "CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC"
	g := NewGrants()
	for i, d := range []*receipts.Decision{
		decision(CodeActivated, ActivatedSummary(idA, ""), idA),
		decision(CodeActivated, WorkspaceSummary(idB, "/src/b"), idB),
		decision(CodeActivated, WorkspaceSummary(idC, "/src/b/vendor/c"), idC),
		decision(CodeActivated, ActivatedSummary(idC, "pinned"), idC),
	} {
		if err := g.Apply(uint64(i+1), d); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct{ session, cwd, want, root string }{
		{"s", "/src/b", idB, "/src/b"},
		{"s", "/src/b/pkg/x", idB, "/src/b"},
		{"s", "/src/b/vendor/c", idC, "/src/b/vendor/c"},
		{"s", "/src/b/vendor/c/d", idC, "/src/b/vendor/c"},
		{"s", "/src/b/vendor/cc", idB, "/src/b"},
		{"s", "/src/bb", idA, ""},
		{"s", "/src", idA, ""},
		{"s", "/", idA, ""},
		{"s", "", idA, ""},
		{"pinned", "/src/b", idC, ""},
		{"", "/src/b", idB, "/src/b"},
	} {
		if id, root := g.ActiveAt(tt.session, tt.cwd); id != tt.want || root != tt.root {
			t.Errorf("ActiveAt(%q, %q) = %.1s… at %q, want %.1s… at %q", tt.session, tt.cwd, id, root, tt.want, tt.root)
		}
	}
	if got := g.ActiveRoots(idB); len(got) != 1 || got[0] != "/src/b" || len(g.Places(idC)) != 2 {
		t.Fatalf("roots of B %q, places of C %q", got, g.Places(idC))
	}
	const idD = "DDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD"
	if err := g.Apply(5, decision(CodeRenewed, RenewedSummary(idB, idD), idB, idD)); err != nil {
		t.Fatal(err)
	}
	if id, _ := g.ActiveAt("s", "/src/b/pkg"); id != idD || len(g.ActiveRoots(idB)) != 0 {
		t.Fatalf("the renewal did not move the workspace's grant: %q", id)
	}
	if err := g.Apply(6, decision(CodeActivated, ActivatedSummary(idB, ""), idB)); err != nil {
		t.Fatal(err)
	}
	if id, r := g.ActiveAt("s", "/src/b/vendor/c"); id != idB || r != "" || g.HasWorkspaces() || g.Active("pinned") != idC {
		t.Fatalf("a choice for every session did not replace the workspaces' (keeping the session's): %q %q", id, r)
	}
	root := NewGrants()
	root.Apply(1, decision(CodeActivated, WorkspaceSummary(idB, "/"), idB))
	if id, r := root.ActiveAt("s", "/etc"); id != idB || r != "/" {
		t.Fatalf("a grant for / does not hold /etc: %q %q", id, r)
	}
}

func TestHome(t *testing.T) {
	i, c, d := core.Sum([]byte("i")), core.Sum([]byte("c")), core.Sum([]byte("default"))
	h := &Home{Session: "joule-home:x+1"}
	files := Files{Issuers: NoIssuers, Config: d, DefaultConfig: d}
	if err := h.Check(files); err != nil {
		t.Fatalf("nothing recorded, default files: %v", err)
	}
	if err := h.Check(Files{Issuers: i, Config: d, DefaultConfig: d}); !errors.Is(err, ErrIssuersUnsigned) {
		t.Fatalf("issuers written without a record: %v", err)
	}
	if err := h.Check(Files{Issuers: NoIssuers, Config: c, DefaultConfig: d}); !errors.Is(err, ErrConfigUnsigned) {
		t.Fatalf("config written without a record: %v", err)
	}
	if err := h.Apply(1, decision(CodeHome, HomeSummary(i, c))); err != nil {
		t.Fatal(err)
	}
	h.Seq = 1
	if err := h.Check(Files{Issuers: i, Config: c, DefaultConfig: d}); err != nil {
		t.Fatalf("recorded: %v", err)
	}
	if err := h.Check(files); !errors.Is(err, ErrIssuersUnsigned) {
		t.Fatalf("the files set back to the defaults after a record: %v", err)
	}
	for _, bad := range []*receipts.Decision{
		decision(CodeHome, "issuers "+i.String()),
		decision(CodeHome, "issuers x config y"),
		decision(CodeHome, HomeSummary(i, c)+" "),
		decision(CodeHome, HomeSummary(i, c), idA),
		decision(CodeIssued, IssuedSummary(idA), idA),
	} {
		if err := h.Apply(2, bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%q: %v", bad.Summary, err)
		}
	}
	if IssuersDigest([]string{"b+1+x", "a+2+y", "a+2+y"}) != IssuersDigest([]string{"a+2+y", "b+1+x"}) {
		t.Error("the issuers digest depends on order or duplicates")
	}
	if HomeSession("alice@laptop+a72c438a+AU7C") != "joule-home:alice@laptop+a72c438a" || !Reserved(HomeSession("a+1+k")) || !Reserved(GrantsSession) || Reserved("joule:malformed") || Reserved("s1") {
		t.Error("session names")
	}
}

// chainStore is a store holding a GrantsSession chain of n issues sealed
// by steward, and a second connection to it.
type chainStore struct {
	st    *store.Store
	db    *sql.DB
	keys  receipts.Keys
	other *core.Sealer
	seal  func(code, summary string, grants ...string) store.Entry
}

func newChainStore(t *testing.T) *chainStore {
	t.Helper()
	path := filepath.Join(t.TempDir(), "joule.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	sealer, _ := core.NewSealer("trust.test", key)
	_, okey, _ := ed25519.GenerateKey(rand.Reader)
	other, _ := core.NewSealer("other.test", okey)
	var pub core.PublicKey
	copy(pub[:], key.Public().(ed25519.PublicKey))
	keys, _ := receipts.NewKeys(map[string]core.PublicKey{"trust.test": pub})
	c := &chainStore{st: st, db: db, keys: keys, other: other}
	c.seal = func(code, summary string, grants ...string) store.Entry {
		return c.sealWith(t, sealer, GrantsSession, code, summary, grants...)
	}
	return c
}

func (c *chainStore) sealWith(t *testing.T, s *core.Sealer, session, code, summary string, grants ...string) store.Entry {
	t.Helper()
	e, err := c.st.Seal(context.Background(), store.SealRequest{Session: session, System: true, Build: func(pos store.Position, _ error) ([]byte, bool, error) {
		env, err := receipts.SealDecision(s, receipts.Link{Session: pos.Session, Sequence: pos.Seq, Prev: pos.Prev},
			receipts.Act{Time: time.Now(), Tool: "test", Decision: receipts.Allow, Code: code, Summary: summary, Grants: grants})
		return env, false, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (c *chainStore) chain(t *testing.T, witnessed *store.ChainHead) Chain {
	t.Helper()
	heads, err := c.st.SessionHeads(context.Background(), GrantsSession)
	if err != nil {
		t.Fatal(err)
	}
	ch := Chain{Session: GrantsSession, Witnessed: witnessed}
	if h, ok := heads[GrantsSession]; ok {
		ch.Head = &h
	}
	return ch
}

func (c *chainStore) exec(t *testing.T, q string, args ...any) {
	t.Helper()
	if _, err := c.db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// TestLoadTampered: a chain read back from the store derives its state,
// and every edit of its rows made without the key is refused, naming the
// chain and the receipt.
func TestLoadTampered(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		edit func(t *testing.T, c *chainStore, revoke store.Entry) *store.ChainHead // returns the witnessed head
		want error
	}{
		{"untouched", func(t *testing.T, c *chainStore, r store.Entry) *store.ChainHead {
			return &store.ChainHead{Seq: r.Seq, Head: r.Hash}
		}, nil},
		{"witness behind the store", func(t *testing.T, c *chainStore, r store.Entry) *store.ChainHead {
			first, _ := c.st.Session(ctx, GrantsSession)
			return &store.ChainHead{Seq: 1, Head: first[0].Hash}
		}, nil},
		{"revocation deleted, head row set back", func(t *testing.T, c *chainStore, r store.Entry) *store.ChainHead {
			c.exec(t, `DELETE FROM entries WHERE session = ? AND seq = ?`, GrantsSession, r.Seq)
			c.exec(t, `UPDATE sessions SET last_seq = ?, head = ? WHERE id = ?`, r.Seq-1, r.Prev[:], GrantsSession)
			return &store.ChainHead{Seq: r.Seq, Head: r.Hash}
		}, ErrBehind},
		{"revocation deleted, head row left", func(t *testing.T, c *chainStore, r store.Entry) *store.ChainHead {
			c.exec(t, `DELETE FROM entries WHERE session = ? AND seq = ?`, GrantsSession, r.Seq)
			return nil
		}, ErrCorrupt},
		{"revocation deleted, no witness", func(t *testing.T, c *chainStore, r store.Entry) *store.ChainHead {
			c.exec(t, `DELETE FROM entries WHERE session = ? AND seq = ?`, GrantsSession, r.Seq)
			c.exec(t, `UPDATE sessions SET last_seq = ?, head = ? WHERE id = ?`, r.Seq-1, r.Prev[:], GrantsSession)
			return nil
		}, nil}, // only a witness knows: see "revocation deleted, head row set back"
		{"head row deleted", func(t *testing.T, c *chainStore, r store.Entry) *store.ChainHead {
			c.exec(t, `DELETE FROM sessions WHERE id = ?`, GrantsSession)
			return nil
		}, ErrCorrupt},
		{"receipts swapped", func(t *testing.T, c *chainStore, r store.Entry) *store.ChainHead {
			c.exec(t, `UPDATE entries SET seq = 100 + seq WHERE session = ? AND seq IN (1, 2)`, GrantsSession)
			c.exec(t, `UPDATE entries SET seq = 103 - seq WHERE session = ? AND seq IN (101, 102)`, GrantsSession)
			return nil
		}, ErrCorrupt},
		{"envelope byte flipped", func(t *testing.T, c *chainStore, r store.Entry) *store.ChainHead {
			env := append([]byte(nil), r.Envelope...)
			env[len(env)/2] ^= 1
			h := core.Sum(env)
			c.exec(t, `UPDATE entries SET envelope = ?, hash = ? WHERE session = ? AND seq = ?`, env, h[:], GrantsSession, r.Seq)
			c.exec(t, `UPDATE sessions SET head = ? WHERE id = ?`, h[:], GrantsSession)
			return nil
		}, ErrCorrupt},
		{"a receipt of another key appended", func(t *testing.T, c *chainStore, r store.Entry) *store.ChainHead {
			c.sealWith(t, c.other, GrantsSession, CodeActivated, ActivatedSummary(idB, ""), idB)
			return nil
		}, ErrCorrupt},
		{"a receipt moved in from another session", func(t *testing.T, c *chainStore, r store.Entry) *store.ChainHead {
			e := c.sealWith(t, c.other, "joule-elsewhere", CodeIssued, IssuedSummary(idB), idB)
			c.exec(t, `UPDATE entries SET session = ?, seq = ? WHERE idx = ?`, GrantsSession, r.Seq+1, e.Index)
			c.exec(t, `UPDATE sessions SET last_seq = ?, head = ? WHERE id = ?`, r.Seq+1, e.Hash[:], GrantsSession)
			return nil
		}, ErrCorrupt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newChainStore(t)
			c.seal(CodeIssued, IssuedSummary(idA), idA)
			c.seal(CodeActivated, ActivatedSummary(idA, ""), idA)
			r := c.seal(CodeRevoked, RevokedSummary(idA), idA)
			w := tc.edit(t, c, r)
			g, err := LoadGrants(ctx, c.st, c.keys, c.chain(t, w))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("%v", err)
				}
				if g.Active("") != idA {
					t.Fatalf("active %q", g.Active(""))
				}
				return
			}
			var te *Error
			if !errors.Is(err, tc.want) || !errors.As(err, &te) || te.Session != GrantsSession || !strings.Contains(err.Error(), "session "+GrantsSession) {
				t.Fatalf("%v, want %v naming the chain", err, tc.want)
			}
		})
	}
}

// FuzzApply: no receipt makes Apply panic, and an activation it accepts
// is exactly the one its summary states.
func FuzzApply(f *testing.F) {
	f.Add(CodeActivated, ActivatedSummary(idA, "s"), idA)
	f.Add(CodeActivated, ActivatedSummary(idA, ""), idA)
	f.Add(CodeIssued, IssuedSummary(idA), idA)
	f.Add(CodeActivated, WorkspaceSummary(idA, "/src/a"), idA)
	f.Add(CodeActivated, WorkspaceSummary(idA, "/src/a/../b"), idA)
	f.Add(CodeHome, "issuers a config b", "")
	f.Fuzz(func(t *testing.T, code, summary, id string) {
		g := NewGrants()
		if err := g.Apply(1, decision(code, summary, id)); err != nil || code != CodeActivated {
			return
		}
		if ws := g.Workspaces(); len(ws) > 0 {
			if len(ws) != 1 || len(g.Sessions()) != 0 || g.Default() != "" || g.WorkspaceGrant(ws[0]) != id || summary != WorkspaceSummary(id, ws[0]) || ValidRoot(ws[0]) != nil {
				t.Fatalf("%q made %q active for workspaces %q", summary, g.WorkspaceGrant(ws[0]), ws)
			}
			return
		}
		switch sessions := g.Sessions(); {
		case len(sessions) == 0:
			if g.Default() != id || summary != ActivatedSummary(id, "") {
				t.Fatalf("%q made %q active for every session, not %q", summary, g.Default(), id)
			}
		case len(sessions) == 1:
			if g.Default() != "" || g.Active(sessions[0]) != id || summary != ActivatedSummary(id, sessions[0]) {
				t.Fatalf("%q made %q active for session %q", summary, g.Active(sessions[0]), sessions[0])
			}
		default:
			t.Fatalf("%q activated %d sessions", summary, len(sessions))
		}
	})
}

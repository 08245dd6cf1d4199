package audit

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
)

// TestCheck seals real decisions through a gate, finds nothing in the
// untouched store, then finds each edit of a second connection, placed at
// the grant and the session and SEQ it concerns.
// sealedStore is a store in a fresh home with three allowed decisions
// sealed through a gate in session "s", the grant they debit, and the keys
// that verify them.
func sealedStore(t *testing.T) (st *store.Store, path, gid string, trust grant.Trust, keys receipts.Keys) {
	t.Helper()
	ctx := context.Background()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	id, err := identity.Create(filepath.Join(dir, "home"), "audit.test", false)
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "home", "joule.db")
	st, err = store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	is, _ := grant.NewIssuer(id.Steward, id.Key)
	now := time.Now()
	s, err := is.Sign(&grant.Grant{Subject: grant.AnySubject, Roots: []string{ws}, Allow: []string{"Bash(go test:*)"}, BudgetUJ: 1_000_000,
		NotBefore: now.Add(-time.Minute).Unix(), NotAfter: now.Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	gid = s.ID.String()
	sealer, _ := id.Sealer()
	trust = grant.Trust{id.Steward: id.Public()}
	g := &gate.Gate{Store: st, Sealer: sealer, Trust: trust, JouleHome: filepath.Join(dir, "home")}
	if err := g.Adopt(ctx, s, "test grant", true); err != nil {
		t.Fatal(err)
	}
	ev, _ := json.Marshal(map[string]any{"session_id": "s", "tool": "Bash", "cwd": ws, "input": map[string]any{"command": "go test ./..."}})
	for range 3 {
		if r := g.DecideJSON(ctx, ev); r.Decision != gate.Allow {
			t.Fatalf("%+v", r)
		}
	}
	keys, err = receipts.NewKeys(trust)
	if err != nil {
		t.Fatal(err)
	}
	return st, path, gid, trust, keys
}

func TestCheck(t *testing.T) {
	ctx := context.Background()
	st, path, gid, trust, keys := sealedStore(t)
	if f, err := Check(ctx, st, trust, keys); err != nil || len(f) != 0 {
		t.Fatalf("untouched store: %v %v", f, err)
	}
	if Err(nil) != nil {
		t.Error("Err of no findings is not nil")
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE ledger SET amount_uj = 1, total_uj = total_uj - 49999 WHERE entry = (SELECT idx FROM entries WHERE session = 's' AND seq = 2)`); err != nil {
		t.Fatal(err)
	}
	f, err := Check(ctx, st, trust, keys)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, x := range f {
		texts = append(texts, x.String())
	}
	all := strings.Join(texts, "\n")
	want := "grant " + gid + " session s seq 2: the ledger debits 1 µJ, the signed receipt 50000 µJ"
	if !strings.Contains(all, want) {
		t.Errorf("findings do not say %q:\n%s", want, all)
	}
	if err := Err(f); err == nil || !strings.Contains(err.Error(), "findings") {
		t.Errorf("Err: %v", err)
	}
}

// TestSessionVerdicts judges each stored receipt of a session on its own:
// one rewritten envelope marks that receipt and breaks the chain at the
// next, and leaves the one before it ok.
func TestSessionVerdicts(t *testing.T) {
	ctx := context.Background()
	st, path, _, _, keys := sealedStore(t)
	rows, verdicts, err := SessionVerdicts(ctx, st, keys, "s")
	if err != nil || len(rows) != 3 || len(verdicts) != 3 {
		t.Fatalf("%d rows, %d verdicts, %v; want 3 of each", len(rows), len(verdicts), err)
	}
	for i, v := range verdicts {
		if v.Verdict != receipts.VerdictOK || v.Receipt == nil || v.Receipt.Sequence != rows[i].Seq {
			t.Errorf("untouched receipt %d: %+v", i+1, v)
		}
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE entries SET envelope = X'00' WHERE session = 's' AND seq = 2`); err != nil {
		t.Fatal(err)
	}
	rows, verdicts, err = SessionVerdicts(ctx, st, keys, "s")
	if err != nil || len(rows) != 3 {
		t.Fatalf("%d rows, %v; want all 3, the damaged one included", len(rows), err)
	}
	if got := []string{verdicts[0].Verdict, verdicts[1].Verdict, verdicts[2].Verdict}; got[0] != receipts.VerdictOK || got[1] != receipts.VerdictUndecodable || got[2] != receipts.VerdictBrokenChain {
		t.Errorf("verdicts after seq 2 was rewritten: %v", got)
	}
	if !strings.Contains(verdicts[1].Reason, "; row: ") {
		t.Errorf("the damaged receipt's reason does not carry its row's fault: %q", verdicts[1].Reason)
	}
	if _, _, err := SessionVerdicts(ctx, st, keys, "none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an unknown session: %v, want ErrNotFound", err)
	}
}

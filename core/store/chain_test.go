package store

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// sealSystem seals one record into a session reserved to joule.
func sealSystem(t testing.TB, s *Store, session, tag string) Entry {
	t.Helper()
	e, err := s.Seal(context.Background(), SealRequest{Session: session, System: true, Build: allowBuild(tag)})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestSystemSessions: only a seal that says it is joule's own record
// enters a session whose id starts with joule-.
func TestSystemSessions(t *testing.T) { forBackends(t, testSystemSessions) }

func testSystemSessions(t *testing.T, b backend) {
	s := b.open(t)
	for _, id := range []string{"joule-grants", "joule-home:a+1", "joule-"} {
		if err := trySeal(s, id); err == nil || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("a host's seal into %q: %v", id, err)
		}
		sealSystem(t, s, id, "trust")
	}
	if err := trySeal(s, "joule:malformed"); err != nil {
		t.Errorf("joule:malformed is a host's session: %v", err)
	}
}

// TestWitnessChainsAndLocation: each checkpoint records the heads of the
// witness's chains and the store's location; the store refuses, with
// ErrStoreMoved, a witness bound elsewhere, and with ErrRolledBack a chain
// behind its recorded head or a log whose receipt rows were taken out.
func TestWitnessChainsAndLocation(t *testing.T) { forBackends(t, testWitnessChainsAndLocation) }

func testWitnessChainsAndLocation(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.fresh(t)
	s := b.openAt(t, loc)
	dir := t.TempDir()
	w := attachWitness(t, s, dir)
	w.Chains, w.Location = []string{"joule-grants", "joule-home:x+1"}, "here"
	sealSystem(t, s, "joule-grants", "a")
	last := sealSystem(t, s, "joule-grants", "b")
	seal(t, s, "s1", nil, 0, "c")
	cp := readWitness(t, w)
	if h, ok := cp.Chain("joule-grants"); !ok || h.Seq != 2 || h.Head != last.Hash {
		t.Fatalf("the checkpoint records %+v %v for joule-grants, want seq 2 head %x", h, ok, last.Hash)
	}
	if _, ok := cp.Chain("joule-home:x+1"); ok {
		t.Fatal("a chain with no receipt is recorded")
	}
	if l, ok := cp.Location(); !ok || l != "here" {
		t.Fatalf("location %q %v", l, ok)
	}
	if heads, wcp := s.WitnessedChains(); wcp == nil || heads["joule-grants"].Seq != 2 {
		t.Fatalf("witnessed chains %+v", heads)
	}
	got, err := s.SessionHeads(ctx, "joule-grants", "s1", "none")
	if err != nil || len(got) != 2 || got["joule-grants"].Head != last.Hash || got["s1"].Seq != 1 {
		t.Fatalf("session heads %+v %v", got, err)
	}
	if err := s.CheckChains(ctx, cp, w.Files[0]); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckEntries(ctx, 0); err != nil {
		t.Fatal(err)
	}

	// The same store opened as if it were somewhere else.
	other := b.openAt(t, loc)
	ow := *w
	ow.Location = "elsewhere"
	ow.OnError = nil
	if err := other.SetWitness(&ow); err != nil {
		t.Fatal(err)
	}
	if err := trySeal(other, "s1"); !errors.Is(err, ErrStoreMoved) || !strings.Contains(err.Error(), "bound to the store at here") {
		t.Fatalf("a seal bound elsewhere: %v", err)
	}
	if _, _, err := other.WitnessState(ctx); !errors.Is(err, ErrStoreMoved) {
		t.Fatalf("witness state bound elsewhere: %v", err)
	}

	// The chain's last receipt taken out, its head row set back.
	for _, q := range []struct {
		sql string
		arg []byte
	}{{`DELETE FROM entries WHERE hash = ?`, last.Hash[:]}, {`UPDATE sessions SET last_seq = 1, head = ? WHERE id = 'joule-grants'`, last.Prev[:]}} {
		if _, err := s.conn().ExecContext(ctx, q.sql, q.arg); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CheckChains(ctx, cp, w.Files[0]); !errors.Is(err, ErrRolledBack) || !strings.Contains(err.Error(), "session joule-grants") {
		t.Fatalf("a chain behind its witness: %v", err)
	}
	if _, _, err := s.WitnessState(ctx); !errors.Is(err, ErrRolledBack) {
		t.Fatalf("witness state of a chain behind its witness: %v", err)
	}
	if err := s.CheckEntries(ctx, 0); !errors.Is(err, ErrRolledBack) || !strings.Contains(err.Error(), "1 of the log's receipts") {
		t.Fatalf("a receipt row taken out: %v", err)
	}
	if err := s.CheckEntries(ctx, last.Index+1); err != nil {
		t.Fatalf("after the gap: %v", err)
	}
}

// TestCheckpointChainParse: a chain or location line that does not parse
// is no record of one.
func TestCheckpointChainParse(t *testing.T) {
	for _, line := range []string{"joule-chain s", "joule-chain s x AAAA", "joule-chain s 0 " + strings.Repeat("A", 43), "joule-chain s 1 short"} {
		cp := &Checkpoint{Extensions: []string{line}}
		if h, ok := cp.Chain("s"); ok {
			t.Errorf("%q parsed as %+v", line, h)
		}
	}
	cp := &Checkpoint{Extensions: []string{"joule-store !!"}}
	if l, ok := cp.Location(); !ok || l != "" {
		t.Errorf("an undecodable location: %q %v (want recorded, matching nothing)", l, ok)
	}
}

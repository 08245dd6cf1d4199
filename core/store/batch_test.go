package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestBatchMatchesSavepoints seals the same decisions four ways: one by one
// through the savepoint code (the reference), one by one alone in their
// transactions, as one group in savepoints, and as one group on SQLite's
// batch path; each way must give every decision the same outcome (entry
// or error) and leave every table row for row the same. The scenarios mix
// debits, lease draws, settles, failing and panicking Builds, denied
// debits and duplicate envelopes; the last ones make a decision fail after
// writing, which sends the batch back to savepoints.
func TestBatchMatchesSavepoints(t *testing.T) { forBackends(t, testBatchMatchesSavepoints) }

// batchOp is one decision of a scenario; resv indexes the reservations a
// scenario starts with.
type batchOp struct {
	session string
	debit   []string
	amount  uint64
	settle  int // 1-based reservation to settle; 0 for none
	settled uint64
	draw    int // 1-based reservation to draw from; 0 for none
	release uint64
	charge  uint64
	build   string // "", "fail", "panic", "dup" (the envelope sealed before the group)
}

func testBatchMatchesSavepoints(t *testing.T, be backend) {
	common := []batchOp{
		{session: "s1", debit: []string{"leaf", "root"}, amount: 10},
		{session: "s1", draw: 1, release: 20, charge: 15},
		{session: "s2", build: "fail", debit: []string{"leaf"}, amount: 5},
		{session: "old", build: "dup"},
		{session: "old", debit: []string{"root"}, amount: 5},
		{session: "s1", settle: 2, settled: 30},
		{session: "s4", debit: []string{"leaf", "revoked"}, amount: 1},
		{session: "s1", debit: []string{"leaf"}, amount: 1000},
		{session: "s2", build: "panic"},
		{session: "s2", draw: 1, release: 500, charge: 1},
		{session: "old", debit: []string{"leaf", "root"}, amount: 470},
		{session: "s4", draw: 1, release: 1, charge: 0},
		{session: "s5", debit: []string{"ghost"}, amount: 1},
		{session: "s4", debit: []string{"leaf"}, amount: 1},
	}
	var oneSession, many []batchOp
	for range 20 {
		oneSession = append(oneSession, batchOp{session: "old", debit: []string{"root"}, amount: 3})
	}
	// More ledger rows and tree hashes than one INSERT of each takes.
	for i := range 130 {
		many = append(many, batchOp{session: fmt.Sprintf("m%d", i%3), debit: []string{"root"}, amount: 1})
	}
	tests := []struct {
		name     string
		ops      []batchOp
		resealed bool // a decision fails after writing: the batch falls back
	}{
		{"batch", common, false},
		{"duplicate in a new session", append(append([]batchOp{}, common[:5]...), append([]batchOp{{session: "s9", build: "dup"}}, common[5:]...)...), true},
		{"reservation settled earlier in the group", append(append([]batchOp{}, common...), batchOp{session: "s1", draw: 2, release: 1, charge: 1}), true},
		{"reservation drawn then settled", []batchOp{
			{session: "a", draw: 1, release: 7, charge: 3},
			{session: "b", settle: 1, settled: 4},
			{session: "a", draw: 2, release: 60, charge: 9},
			{session: "b", settle: 2, settled: 0},
			{session: "c", debit: []string{"root"}, amount: 2},
		}, false},
		// One dirty session and grant (plain statements) and a tree of
		// more than one decision's hashes (VALUES lists), past leaf 15.
		{"one session, one grant", oneSession, false},
		{"more rows than an INSERT takes", many, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref, refDump := runBatchOps(t, be, tt.ops, "one by one in savepoints")
			for _, mode := range []string{"alone", "group in savepoints", "group"} {
				got, dump := runBatchOps(t, be, tt.ops, mode)
				for i := range ref {
					if got[i] != ref[i] {
						t.Errorf("%s: decision %d: %s\nreference: %s", mode, i, got[i], ref[i])
					}
				}
				if dump != refDump {
					t.Errorf("%s: the tables differ from the reference:\n%s\nreference:\n%s", mode, dump, refDump)
				}
			}
			if be.name == "sqlite" {
				s, _ := openBatchScenario(t, be)
				runGroupOf(t, s, tt.ops, nil)
				if got := s.group.resealed.Load() != 0; got != tt.resealed {
					t.Errorf("group sealed again in savepoints: %v, want %v", got, tt.resealed)
				}
			}
		})
	}
}

// openBatchScenario opens a store with grants, two reservations on them and
// one sealed decision, whose envelope the "dup" decisions seal again.
func openBatchScenario(t *testing.T, be backend) (*Store, []byte) {
	t.Helper()
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	s := be.open(t, WithClock(func() time.Time { return at }))
	ctx := context.Background()
	putGrant(t, s, "root", "", 1000)
	putGrant(t, s, oddLeaf, "root", 500)
	putGrant(t, s, "revoked", "", 100)
	if err := s.Revoke(ctx, "revoked"); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		grants []string
		amount uint64
	}{{[]string{oddLeaf, "root"}, 300}, {[]string{"root"}, 50}} {
		if _, err := s.Reserve(ctx, r.grants, r.amount); err != nil {
			t.Fatal(err)
		}
	}
	dup := seal(t, s, "old", nil, 0, "before")
	return s, dup.Envelope
}

// runBatchOps runs ops on a fresh scenario in one mode and returns each
// decision's outcome and a dump of the tables.
func runBatchOps(t *testing.T, be backend, ops []batchOp, mode string) ([]string, string) {
	t.Helper()
	s, dup := openBatchScenario(t, be)
	outcomes := make([]string, len(ops))
	switch mode {
	case "one by one in savepoints", "alone":
		s.group.savepoints = mode != "alone"
		for i, op := range ops {
			req := op.request(dup)
			var e Entry
			var err error
			if s.group.savepoints {
				c := &sealCall{ctx: context.Background(), req: req, done: make(chan struct{})}
				s.sealGroup([]*sealCall{c})
				e, err = c.e, c.err
			} else {
				e, err = s.sealOne(context.Background(), req)
			}
			outcomes[i] = outcome(e, err)
		}
	case "group in savepoints", "group":
		s.group.savepoints = mode != "group"
		runGroupOf(t, s, ops, outcomes)
	default:
		t.Fatalf("unknown mode %q", mode)
	}
	checkConsistent(t, s)
	return outcomes, dumpTables(t, s)
}

// runGroupOf seals ops as one group, recording outcomes when not nil.
func runGroupOf(t *testing.T, s *Store, ops []batchOp, outcomes []string) {
	t.Helper()
	// The scenario's one decision sealed before the group is at index 0.
	dup, err := s.EntryAt(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	calls := make([]*sealCall, len(ops))
	for i, op := range ops {
		calls[i] = &sealCall{ctx: context.Background(), req: op.request(dup.Envelope), done: make(chan struct{})}
	}
	s.sealGroup(calls)
	for i, c := range calls {
		if outcomes != nil {
			outcomes[i] = outcome(c.e, c.err)
		}
	}
}

func outcome(e Entry, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("%s #%d at %d, prev %x, hash %x", e.Session, e.Seq, e.Index, e.Prev[:4], e.Hash[:4])
}

// Ids that JSON must escape, for the batch's JSON arrays of rows.
const (
	oddLeaf    = "leaf \"ä\" \\ <&> \u2028"
	oddSession = "s1 'ü' \"\\\" </>"
)

func (op batchOp) request(dup []byte) SealRequest {
	session := op.session
	if session == "s1" {
		session = oddSession
	}
	var debit []string
	for _, id := range op.debit {
		if id == "leaf" {
			id = oddLeaf
		}
		debit = append(debit, id)
	}
	req := SealRequest{Session: session, Debit: debit, AmountUJ: op.amount}
	// The scenario's reservations are the store's first two.
	if op.settle > 0 {
		id := int64(op.settle)
		req.Settle, req.SettleUJ = &id, op.settled
	}
	if op.draw > 0 {
		req.Draw = &Draw{Reservation: int64(op.draw), ReleaseUJ: op.release, ChargeUJ: op.charge}
	}
	req.Build = func(pos Position, debitErr error) ([]byte, bool, error) {
		switch op.build {
		case "fail":
			return nil, false, errBuildRefused
		case "panic":
			panic("build panicked")
		case "dup":
			return dup, true, nil
		}
		if debitErr != nil {
			return envelopeFor(pos, "deny"), false, nil
		}
		return envelopeFor(pos, "allow"), true, nil
	}
	return req
}

// dumpTables prints every row the store keeps, in key order.
func dumpTables(t *testing.T, s *Store) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		`SELECT id, parent, budget_uj, spent_uj, reserved_uj, revoked, created_ns FROM grants ORDER BY id`,
		`SELECT id, last_seq, head, first_ns, last_ns FROM sessions ORDER BY id`,
		`SELECT idx, session, seq, prev, hash, envelope, created_ns FROM entries ORDER BY idx`,
		`SELECT id, hash FROM tlog_hashes ORDER BY id`,
		`SELECT id, amount_uj, created_ns FROM reservations ORDER BY id`,
		`SELECT reservation, grant_id FROM reservation_grants ORDER BY reservation, grant_id`,
		`SELECT id, grant_id, amount_uj, entry, reservation, created_ns FROM ledger ORDER BY id`,
	} {
		rows, err := s.db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		cols, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s\n", q)
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				if bs, ok := v.([]byte); ok {
					vals[i] = fmt.Sprintf("%x", bs)
				}
			}
			fmt.Fprintln(&b, vals...)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return b.String()
}

// TestBatchSeesItsOwnWrites: within one batch, draws on one lease and
// debits of one grant each see what the seals before them in the batch
// left, and a lease drawn past its hold gives what it had left.
func TestBatchSeesItsOwnWrites(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	putGrant(t, s, "root", "", 1000)
	putGrant(t, s, "leaf", "root", 100)
	lease, err := s.Reserve(ctx, []string{"leaf", "root"}, 50)
	if err != nil {
		t.Fatal(err)
	}
	var calls []*sealCall
	add := func(req SealRequest) {
		calls = append(calls, &sealCall{ctx: ctx, req: req, done: make(chan struct{})})
	}
	var sawBudget []error
	for i := range 6 {
		add(SealRequest{Session: fmt.Sprintf("d%d", i%2), Draw: &Draw{Reservation: lease, ReleaseUJ: 10, ChargeUJ: 7},
			Build: func(pos Position, _ error) ([]byte, bool, error) { return envelopeFor(pos, "draw"), false, nil }})
		add(SealRequest{Session: "debit", Debit: []string{"leaf"}, AmountUJ: 8,
			Build: func(pos Position, debitErr error) ([]byte, bool, error) {
				sawBudget = append(sawBudget, debitErr)
				return envelopeFor(pos, "debit"), debitErr == nil, nil
			}})
	}
	s.sealGroup(calls)
	for i, c := range calls {
		if c.err != nil {
			t.Fatalf("decision %d: %v", i, c.err)
		}
		if c.e.Index != int64(i) {
			t.Errorf("decision %d at log index %d", i, c.e.Index)
		}
	}
	if s.group.resealed.Load() != 0 {
		t.Error("the batch fell back to savepoints")
	}
	// leaf: budget 100, 50 reserved. Draws take 10 of the hold and charge
	// 7 each; debits of 8 need budget - spent - reserved ≥ 8.
	// After draw 1: spent 7, reserved 40, left 53; debit: spent 15, left 45.
	// draw 2: spent 22, reserved 30, left 48; debit: 30, left 40.
	// draw 3: 37, 20, left 43; debit: 45, left 35. draw 4: 52, 10, left 38;
	// debit: 60, left 30. draw 5: 67, 0, left 33; debit: 75, left 25.
	// draw 6: holds nothing more, charges 7: 82, left 18; debit: 90, left 10.
	for i, err := range sawBudget {
		if err != nil {
			t.Errorf("debit %d saw %v", i, err)
		}
	}
	leaf, err := s.Grant(ctx, "leaf")
	if err != nil {
		t.Fatal(err)
	}
	if leaf.SpentUJ != 6*7+6*8 || leaf.ReservedUJ != 0 {
		t.Errorf("leaf spent %d reserved %d, want %d and 0", leaf.SpentUJ, leaf.ReservedUJ, 6*7+6*8)
	}
	root, err := s.Grant(ctx, "root")
	if err != nil {
		t.Fatal(err)
	}
	if root.SpentUJ != 6*7 || root.ReservedUJ != 0 {
		t.Errorf("root spent %d reserved %d, want %d and 0", root.SpentUJ, root.ReservedUJ, 6*7)
	}
	ledger, err := s.Ledger(ctx, "leaf")
	if err != nil {
		t.Fatal(err)
	}
	if len(ledger) != 12 {
		t.Fatalf("%d ledger entries for leaf, want 12", len(ledger))
	}
	for i, le := range ledger {
		draw := i%2 == 0
		if draw && (le.Reservation != lease || le.AmountUJ != 7 || le.Index != -1) ||
			!draw && (le.Reservation != 0 || le.AmountUJ != 8 || le.Index != int64(i)) {
			t.Errorf("ledger entry %d: %+v", i, le)
		}
	}
	// The lease stays open, drawn down to nothing.
	if err := s.Release(ctx, lease); err != nil {
		t.Errorf("release the drawn lease: %v", err)
	}
	checkConsistent(t, s)
}

// TestBatchReadsInsideTransaction: what another process writes between two
// transactions is what the next batch reads, never what an earlier batch
// of this process kept.
func TestBatchReadsInsideTransaction(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	putGrant(t, s, "g", "", 100)
	seal(t, s, "s", []string{"g"}, 10, "one")
	// Another store on the file, as another process would have, charges
	// the grant and seals into the session.
	o := backends[0].openAt(t, s.Path())
	seal(t, o, "s", []string{"g"}, 85, "other")
	var saw error
	e, err := s.Seal(ctx, SealRequest{Session: "s", Debit: []string{"g"}, AmountUJ: 10,
		Build: func(pos Position, debitErr error) ([]byte, bool, error) {
			saw = debitErr
			return envelopeFor(pos, "two"), true, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	var be *BudgetError
	if !errors.As(saw, &be) || be.RemainingUJ != 5 {
		t.Errorf("debit saw %v, want the 5 µJ the other process left", saw)
	}
	if e.Seq != 3 || e.Index != 2 {
		t.Errorf("sealed at seq %d index %d, want 3 and 2", e.Seq, e.Index)
	}
	checkConsistent(t, s)
}

// TestStmtContext: statements of a SQLite write transaction run without a
// done channel (so modernc starts no watcher for each), unless the context
// has already ended; other conns keep the caller's context.
func TestStmtContext(t *testing.T) {
	live := context.Background()
	ended, cancel := context.WithCancel(live)
	cancel()
	timed, stop := context.WithTimeout(live, time.Hour)
	defer stop()
	if got := (conn{short: true}).stmtContext(timed); got.Done() != nil || got.Err() != nil {
		t.Errorf("short conn, live context: Done %v, Err %v; want neither", got.Done(), got.Err())
	}
	if got := (conn{short: true}).stmtContext(ended); !errors.Is(got.Err(), context.Canceled) {
		t.Errorf("short conn, ended context: Err %v, want context.Canceled", got.Err())
	}
	if got := (conn{}).stmtContext(timed); got != timed {
		t.Error("a conn that is not short changed the context")
	}
}

// TestWriteStopsAtEndedContext: a context that ends mid-transaction still
// fails the write, and nothing commits.
func TestWriteStopsAtEndedContext(t *testing.T) {
	s := openTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := s.write(ctx, func(ctx context.Context, tx conn) error {
		if !tx.short {
			t.Error("a SQLite write transaction's statements are not short")
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO settings (key, value) VALUES ('k', 'v')`); err != nil {
			return err
		}
		cancel()
		_, err := tx.ExecContext(ctx, `INSERT INTO settings (key, value) VALUES ('k2', 'v')`)
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("write after cancel: %v, want context.Canceled", err)
	}
	if _, err := s.Setting(context.Background(), "k"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the canceled transaction committed: %v", err)
	}
}

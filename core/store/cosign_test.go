package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// fakeCosigner is a witness in memory with the protocol's memory: the
// size and root it cosigned last, consistency proofs checked against it,
// and a larger log answered as *AheadError. (The real protocol, against
// joule's witness and litewitness, is core/witness's to test.)
type fakeCosigner struct {
	mu     sync.Mutex
	signer note.Signer
	v      note.Verifier
	logV   note.Verifier
	size   int64
	root   tlog.Hash
	down   bool
	calls  int
}

func newFakeCosigner(t testing.TB, name string) *fakeCosigner {
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := note.NewSigner(skey)
	v, _ := note.NewVerifier(vkey)
	return &fakeCosigner{signer: s, v: v, logV: testVerifier(t)}
}

func (f *fakeCosigner) Verifier() note.Verifier { return f.v }

func (f *fakeCosigner) setDown(down bool) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
}

func (f *fakeCosigner) Cosign(ctx context.Context, signed []byte, size, known int64, prove func(int64) (tlog.TreeProof, error)) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.down {
		return nil, fmt.Errorf("%w: connection refused", ErrWitnessUnreachable)
	}
	n, err := note.Open(signed, note.VerifierList(f.logV))
	if err != nil {
		return nil, err
	}
	cp, err := ParseCheckpoint([]byte(n.Text))
	if err != nil || cp.Size != size {
		return nil, fmt.Errorf("bad checkpoint: %v", err)
	}
	if f.size > size {
		return nil, &AheadError{Witness: f.v.Name(), Known: f.size, Size: size}
	}
	if f.size > 0 {
		if f.size == size {
			if cp.Root != f.root {
				return nil, fmt.Errorf("%w: fork at %d", ErrRolledBack, size)
			}
		} else {
			p, err := prove(f.size)
			if err != nil {
				return nil, err
			}
			if tlog.CheckTree(p, size, cp.Root, f.size, f.root) != nil {
				return nil, fmt.Errorf("%w: not an extension", ErrRolledBack)
			}
		}
	}
	f.size, f.root = size, cp.Root
	out, err := note.Sign(&note.Note{Text: n.Text}, f.signer)
	if err != nil {
		return nil, err
	}
	_, lines, _ := bytes.Cut(out, []byte("\n\n"))
	return lines, nil
}

func attachCosigners(t testing.TB, s *Store, dir string, quorum int, cs ...*fakeCosigner) *Witness {
	t.Helper()
	w := &Witness{Origin: "joule test log", Signer: testSigner(t), Verifier: testVerifier(t),
		Files: []string{filepath.Join(dir, "witness", "checkpoint")}, Marker: "test:" + dir, Quorum: quorum}
	for _, c := range cs {
		w.Cosigners = append(w.Cosigners, c)
	}
	var mu sync.Mutex
	var errs []string
	w.OnError = func(err error) { mu.Lock(); errs = append(errs, err.Error()); mu.Unlock() }
	if err := s.SetWitness(w); err != nil {
		t.Fatal(err)
	}
	return w
}

func allowSeal(s *Store, session string) (Entry, error) {
	return s.Seal(context.Background(), SealRequest{Session: session, Build: allowBuild("w"), RequireWitness: true})
}

func noRetryWait(t *testing.T) {
	old := cosignRetry
	cosignRetry = 0
	t.Cleanup(func() { cosignRetry = old })
}

// Each seal has the witnesses cosign the new checkpoint; each cosigned
// checkpoint is kept in its own file, verified, 0600.
func TestCosignFollowsLog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t)
	a, b := newFakeCosigner(t, "a.test/w"), newFakeCosigner(t, "b.test/w")
	w := attachCosigners(t, s, dir, 2, a, b)
	for i := range 3 {
		if _, err := allowSeal(s, "s"); err != nil {
			t.Fatal(err)
		}
		for _, c := range []*fakeCosigner{a, b} {
			cp, msg, err := ReadCosignedFile(w.CosignedFile(c), w.Origin, w.Verifier, c.v)
			if err != nil || cp == nil || cp.Size != int64(i+1) {
				t.Fatalf("after %d seals %s's file: %+v %v", i+1, c.v.Name(), cp, err)
			}
			if len(cp.Extensions) != 0 || bytes.Contains(msg, []byte(spentPrefix)) {
				t.Fatalf("a witness was sent the grants' figures:\n%s", msg)
			}
		}
	}
	if fi, err := os.Stat(w.CosignedFile(a)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cosigned file mode %v %v", fi.Mode(), err)
	}
	if !strings.Contains(w.CosignedFile(a), "checkpoint.cosigned.a.test_w.") {
		t.Fatalf("cosigned file %s", w.CosignedFile(a))
	}
	if err := s.AwaitWitness(ctx, -1); err != nil {
		t.Fatal(err)
	}
	// Both witnesses, one note: what a tlog proof carries.
	msg, cp, names, err := s.Cosigned(3)
	if err != nil || cp.Size != 3 || len(names) != 2 {
		t.Fatalf("Cosigned: %+v %v %v", cp, names, err)
	}
	n, err := note.Open(msg, note.VerifierList(w.Verifier, a.v, b.v))
	if err != nil || len(n.Sigs) != 3 {
		t.Fatalf("merged note: %v\n%s", err, msg)
	}
	// A process that starts afresh reads what was cosigned from the
	// files: no round trip for a log already cosigned.
	calls := a.calls
	s2 := openAt(t, s.Path())
	attachCosigners(t, s2, dir, 2, a, b)
	if err := s2.AwaitWitness(ctx, -1); err != nil || a.calls != calls {
		t.Fatalf("fresh process: %v, %d calls", err, a.calls-calls)
	}
}

func openAt(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// With a quorum, a witness that is down refuses every seal that allows
// something, writing nothing; a deny is sealed all the same, and the
// witness, back, cosigns the log with it.
func TestCosignQuorumDown(t *testing.T) {
	noRetryWait(t)
	ctx := context.Background()
	s := openTest(t)
	a, b := newFakeCosigner(t, "a.test/w"), newFakeCosigner(t, "b.test/w")
	attachCosigners(t, s, t.TempDir(), 2, a, b)
	if _, err := allowSeal(s, "s"); err != nil {
		t.Fatal(err)
	}
	b.setDown(true)
	// The allow sealed now is not cosigned by b: waiting for it fails.
	e, err := allowSeal(s, "s")
	if err != nil {
		t.Fatal(err) // the log before it was cosigned by both
	}
	err = s.AwaitWitness(ctx, e.Index+1)
	var qe *QuorumError
	if !errors.Is(err, ErrWitnessUnreachable) || !errors.As(err, &qe) || qe.Got != 1 || qe.Need != 2 || !strings.Contains(err.Error(), "b.test/w") {
		t.Fatalf("await with b down: %v", err)
	}
	before, _ := s.LogSize(ctx)
	if _, err := allowSeal(s, "s"); !errors.Is(err, ErrWitnessUnreachable) {
		t.Fatalf("allow with b down: %v", err)
	}
	if after, _ := s.LogSize(ctx); after != before {
		t.Fatalf("a refused seal wrote: %d -> %d", before, after)
	}
	if err := trySeal(s, "s"); err != nil {
		t.Fatalf("a deny with b down: %v", err)
	}
	b.setDown(false)
	if _, err := allowSeal(s, "s"); err != nil {
		t.Fatalf("allow with b back: %v", err)
	}
	if b.size != before+2 {
		t.Fatalf("b cosigned %d, want %d", b.size, before+2)
	}

	// A round that failed is not run again within cosignRetry.
	cosignRetry = 1 << 40
	b.setDown(true)
	trySeal(s, "s")
	calls := b.calls
	for range 3 {
		allowSeal(s, "s")
	}
	if b.calls != calls {
		t.Fatalf("%d rounds within the retry time", b.calls-calls)
	}
}

// Without a quorum, a witness that is down is reported, and nothing is
// refused.
func TestCosignBestEffort(t *testing.T) {
	noRetryWait(t)
	s := openTest(t)
	a := newFakeCosigner(t, "a.test/w")
	w := attachCosigners(t, s, t.TempDir(), 0, a)
	var reported []string
	w.OnError = func(err error) { reported = append(reported, err.Error()) }
	a.setDown(true)
	for range 2 {
		if _, err := allowSeal(s, "s"); err != nil {
			t.Fatal(err)
		}
	}
	if len(reported) != 2 || !strings.Contains(reported[0], "witness a.test/w") || !strings.Contains(reported[0], "connection refused") {
		t.Fatalf("reported %q", reported)
	}
	a.setDown(false)
	if _, err := allowSeal(s, "s"); err != nil || a.size != 3 {
		t.Fatalf("back: %v, cosigned %d", err, a.size)
	}
}

// A store rolled back behind what a witness cosigned is refused: by the
// cosigned file where it is kept, and, where that was rolled back or
// deleted too, by the witness itself (it knows a larger log), when a
// quorum is required.
func TestCosignRollback(t *testing.T) {
	noRetryWait(t)
	ctx := context.Background()
	for _, attack := range []string{"store only", "store and witness files", "everything rolled back together"} {
		t.Run(attack, func(t *testing.T) {
			home := t.TempDir()
			path := filepath.Join(home, "joule.db")
			s, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			a := newFakeCosigner(t, "a.test/w")
			w := attachCosigners(t, s, home, 1, a)
			for range 2 {
				if _, err := allowSeal(s, "s"); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			snapshot := map[string][]byte{}
			for _, f := range append([]string{path}, w.watched()...) {
				snapshot[f], _ = os.ReadFile(f)
			}
			s, err = Open(path)
			if err != nil {
				t.Fatal(err)
			}
			attachCosigners(t, s, home, 1, a)
			for range 3 {
				if _, err := allowSeal(s, "s"); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			os.Remove(path + "-wal")
			os.Remove(path + "-shm")
			os.WriteFile(path, snapshot[path], 0o600)
			switch attack {
			case "store and witness files":
				for _, f := range w.watched() {
					os.Remove(f)
				}
				// ...and the marker that says the store was witnessed.
				s, _ = Open(path)
				if _, err := s.conn().ExecContext(ctx, `DELETE FROM settings WHERE key LIKE 'witness:%'`); err != nil {
					t.Fatal(err)
				}
				s.Close()
			case "everything rolled back together":
				for _, f := range w.watched() {
					os.WriteFile(f, snapshot[f], 0o600)
				}
			}
			s, err = Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			attachCosigners(t, s, home, 1, a)
			before, _ := s.LogSize(ctx)
			if attack == "store only" {
				// What store check, doctor and witness sync ask: the
				// cosigned file alone says the store is behind.
				calls := a.calls
				if err := s.Cosign(ctx); !errors.Is(err, ErrRolledBack) || a.calls != calls {
					t.Fatalf("Cosign on the rolled-back store: %v (%d requests)", err, a.calls-calls)
				}
			}
			_, err = allowSeal(s, "s")
			if attack == "everything rolled back together" {
				// The store extends every file it has: the allow is sealed,
				// and the witness, asked to cosign it, says it knows more.
				if err != nil {
					t.Fatal(err)
				}
				err = s.AwaitWitness(ctx, before+1)
			}
			if !errors.Is(err, ErrRolledBack) {
				t.Fatalf("after the rollback: %v, want ErrRolledBack", err)
			}
			if !strings.Contains(err.Error(), "5") {
				t.Fatalf("the error does not say what was cosigned (5): %v", err)
			}
		})
	}
}

// A cosigned file that does not verify (edited, or another witness's) is
// refused as a witness that cannot be trusted; accepting the loss sets it
// aside.
func TestCosignedFileTampered(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	s := openTest(t)
	a := newFakeCosigner(t, "a.test/w")
	w := attachCosigners(t, s, home, 0, a)
	for range 2 {
		if _, err := allowSeal(s, "s"); err != nil {
			t.Fatal(err)
		}
	}
	f := w.CosignedFile(a)
	b, _ := os.ReadFile(f)
	os.WriteFile(f, bytes.Replace(b, []byte("\n2\n"), []byte("\n1\n"), 1), 0o600)
	if err := trySeal(s, "s"); !errors.Is(err, ErrWitnessInvalid) {
		t.Fatalf("tampered cosigned file: %v", err)
	}
	_, kept, err := s.AcceptLoss(ctx, "loss", func(pos Position, _ *Checkpoint, _ Checkpoint) ([]byte, error) {
		return envelopeFor(pos, "loss"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	set := false
	for _, k := range kept {
		set = set || strings.HasPrefix(k, f+".lost-")
	}
	if !set {
		t.Fatalf("kept %v, want %s set aside", kept, f)
	}
	if err := trySeal(s, "s"); err != nil {
		t.Fatalf("after accept-loss: %v", err)
	}
}

func TestQuorumSize(t *testing.T) {
	cp := func(n int64) *Checkpoint { return &Checkpoint{Size: n} }
	for _, tc := range []struct {
		cos    []*Checkpoint
		quorum int
		want   int64
	}{
		{[]*Checkpoint{cp(5), cp(3), nil}, 1, 5},
		{[]*Checkpoint{cp(5), cp(3), nil}, 2, 3},
		{[]*Checkpoint{cp(5), cp(3), nil}, 3, -1},
		{[]*Checkpoint{cp(2), cp(9), cp(4)}, 2, 4},
		{nil, 0, 1<<63 - 1},
	} {
		if got := quorumSize(tc.cos, tc.quorum); got != tc.want {
			t.Errorf("quorumSize(%v, %d) = %d, want %d", tc.cos, tc.quorum, got, tc.want)
		}
	}
}

// Two machines (two homes) on one store, one witness: a checkpoint that
// the other machine's newer one overtook at the witness is not a
// rollback; the store holds what the witness cosigned, and is cosigned
// as it is now instead.
func TestCosignOvertaken(t *testing.T) {
	noRetryWait(t)
	ctx := context.Background()
	a := openTest(t)
	b := openAt(t, a.Path())
	wit := newFakeCosigner(t, "w.test/w")
	wa := attachCosigners(t, a, t.TempDir(), 1, wit)
	attachCosigners(t, b, t.TempDir(), 1, wit)
	if _, err := allowSeal(a, "s"); err != nil {
		t.Fatal(err)
	}
	root1, _ := a.TreeHash(ctx, 1)
	for range 2 {
		if _, err := allowSeal(b, "s"); err != nil {
			t.Fatal(err)
		}
	}
	// a's checkpoint of size 1, sent after b's of size 3, by a that
	// knows nothing the witness cosigned (its file lost).
	os.Remove(wa.CosignedFile(wit))
	calls := wit.calls
	if err := a.cosign(ctx, 1, root1); err != nil {
		t.Fatalf("an overtaken checkpoint: %v", err)
	}
	cp, _, err := ReadCosignedFile(wa.CosignedFile(wit), wa.Origin, wa.Verifier, wit.v)
	if err != nil || cp == nil || cp.Size != 3 || wit.calls != calls+2 {
		t.Fatalf("a's cosigned checkpoint after being overtaken: %+v %v (%d requests)", cp, err, wit.calls-calls)
	}
	if err := a.AwaitWitness(ctx, -1); err != nil {
		t.Fatal(err)
	}
}

package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// witnessFor attaches a witness in a fresh directory (or dir) to s.
func attachWitness(t testing.TB, s *Store, dir string) *Witness {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	w := &Witness{Origin: "joule test log", Signer: testSigner(t), Verifier: testVerifier(t),
		Files: []string{filepath.Join(dir, "witness", "checkpoint")}, Marker: "test:" + dir,
		OnError: func(err error) { t.Errorf("witness: %v", err) }}
	if err := s.SetWitness(w); err != nil {
		t.Fatal(err)
	}
	return w
}

func readWitness(t testing.TB, w *Witness) *Checkpoint {
	t.Helper()
	cp, _, err := ReadWitnessFile(w.Files[0], w.Origin, w.Verifier)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func trySeal(s *Store, session string) error {
	_, err := s.Seal(context.Background(), SealRequest{Session: session, Build: allowBuild("w")})
	return err
}

func TestWitnessFollowsLog(t *testing.T) { forBackends(t, testWitnessFollowsLog) }

func testWitnessFollowsLog(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t)
	w := attachWitness(t, s, "")
	for i := range 3 {
		seal(t, s, "s", nil, 0, fmt.Sprint(i))
		cp := readWitness(t, w)
		root, err := s.TreeHash(ctx, int64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		if cp == nil || cp.Size != int64(i+1) || cp.Root != root {
			t.Fatalf("after %d seals the witness is %+v, want size %d root %s", i+1, cp, i+1, root)
		}
	}
	fi, err := os.Stat(w.Files[0])
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("witness mode %v, want 0600", fi.Mode().Perm())
	}
	if _, _, err := s.WitnessState(ctx); err != nil {
		t.Fatal(err)
	}
}

// A store that lost what its witness remembers refuses every seal, and
// writes nothing, until the loss is accepted.
func TestWitnessRefusesLostStore(t *testing.T) { forBackends(t, testWitnessRefusesLostStore) }

func testWitnessRefusesLostStore(t *testing.T, b backend) {
	ctx := context.Background()
	dir := t.TempDir()
	a := b.open(t)
	attachWitness(t, a, dir)
	for i := range 4 {
		seal(t, a, "s", nil, 0, fmt.Sprint(i))
	}
	// A wiped store (a fresh one where the old one was), and another
	// store with more receipts than were witnessed, neither an
	// extension of the witnessed log.
	wiped := b.open(t)
	attachWitness(t, wiped, dir)
	other := b.open(t)
	for i := range 6 {
		seal(t, other, "x", nil, 0, fmt.Sprint(i))
	}
	attachWitness(t, other, dir)
	for name, s := range map[string]*Store{"wiped": wiped, "another store": other} {
		before, _ := s.LogSize(ctx)
		err := trySeal(s, "s")
		var we *WitnessError
		if !errors.Is(err, ErrRolledBack) || !errors.As(err, &we) || we.Witnessed == nil || we.Witnessed.Size != 4 {
			t.Fatalf("%s: seal = %v, want ErrRolledBack naming the witnessed size 4", name, err)
		}
		if after, _ := s.LogSize(ctx); after != before {
			t.Errorf("%s: a refused seal wrote: log size %d -> %d", name, before, after)
		}
		if _, _, err := s.WitnessState(ctx); !errors.Is(err, ErrRolledBack) {
			t.Errorf("%s: WitnessState = %v, want ErrRolledBack", name, err)
		}
	}
	// Accepting the loss seals one receipt, re-anchors the witness, and
	// keeps the replaced one. A second handle on the wiped store, which
	// read the old witness before, goes on after it.
	var again *Store
	if b.name == "sqlite" {
		again = b.openAt(t, wiped.Path())
		attachWitness(t, again, dir)
		if err := trySeal(again, "s"); !errors.Is(err, ErrRolledBack) {
			t.Fatalf("second handle before recovery: %v", err)
		}
	}
	var got *Checkpoint
	e, kept, err := wiped.AcceptLoss(ctx, "loss", func(pos Position, witnessed *Checkpoint, now Checkpoint) ([]byte, error) {
		got = witnessed
		if now.Size != 0 {
			t.Errorf("now = %+v, want the empty log", now)
		}
		return envelopeFor(pos, "loss"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Size != 4 || e.Index != 0 || len(kept) != 1 {
		t.Fatalf("AcceptLoss: witnessed %+v, entry %+v, kept %v", got, e, kept)
	}
	if b, err := os.ReadFile(kept[0]); err != nil || !strings.Contains(string(b), "\n4\n") {
		t.Errorf("kept witness %s: %q %v", kept[0], b, err)
	}
	if err := trySeal(wiped, "s"); err != nil {
		t.Fatalf("seal after the loss was accepted: %v", err)
	}
	if cp := readWitness(t, wiped.Witness()); cp.Size != 2 {
		t.Errorf("witness after recovery is at size %d, want 2", cp.Size)
	}
	if again != nil {
		if err := trySeal(again, "s"); err != nil {
			t.Errorf("second handle after recovery: %v", err)
		}
	}
	// The original store is not what the re-anchored witness remembers.
	if err := trySeal(a, "s"); !errors.Is(err, ErrRolledBack) {
		t.Errorf("the old store after another was accepted: %v, want ErrRolledBack", err)
	}
}

// SQLite's file replaced by an older copy of itself, truncated to zero, or
// deleted: each is found at the next seal.
func TestWitnessFileAttacks(t *testing.T) {
	for _, attack := range []string{"older copy", "truncated", "deleted"} {
		t.Run(attack, func(t *testing.T) {
			ctx := context.Background()
			home := t.TempDir()
			path := filepath.Join(home, "joule.db")
			s, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			attachWitness(t, s, home)
			seal(t, s, "s", nil, 0, "1")
			seal(t, s, "s", nil, 0, "2")
			s.Close() // folds the write-ahead log into the file
			old, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s, err = Open(path)
			if err != nil {
				t.Fatal(err)
			}
			attachWitness(t, s, home)
			seal(t, s, "s", nil, 0, "3")
			s.Close()
			for _, f := range []string{path + "-wal", path + "-shm"} {
				os.Remove(f)
			}
			switch attack {
			case "older copy":
				err = os.WriteFile(path, old, 0o600)
			case "truncated":
				err = os.Truncate(path, 0)
			case "deleted":
				err = os.Remove(path)
			}
			if err != nil {
				t.Fatal(err)
			}
			s, err = Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			attachWitness(t, s, home)
			if _, _, err := s.WitnessState(ctx); !errors.Is(err, ErrRolledBack) {
				t.Errorf("WitnessState = %v, want ErrRolledBack", err)
			}
			if err := trySeal(s, "s"); !errors.Is(err, ErrRolledBack) {
				t.Errorf("seal = %v, want ErrRolledBack", err)
			}
		})
	}
}

// The witness file itself: missing beside a store that was witnessed,
// forged, older or newer than the store.
func TestWitnessFileEdited(t *testing.T) { forBackends(t, testWitnessFileEdited) }

func testWitnessFileEdited(t *testing.T, b backend) {
	ctx := context.Background()
	dir := t.TempDir()
	s := b.open(t)
	w := attachWitness(t, s, dir)
	seal(t, s, "s", nil, 0, "1")
	older, err := os.ReadFile(w.Files[0])
	if err != nil {
		t.Fatal(err)
	}
	seal(t, s, "s", nil, 0, "2")
	seal(t, s, "s", nil, 0, "3")
	current, _ := os.ReadFile(w.Files[0])

	// Older: the store extends it, so decisions go on and the witness
	// catches up.
	os.WriteFile(w.Files[0], older, 0o600)
	if _, _, err := s.WitnessState(ctx); err != nil {
		t.Errorf("older witness: %v, want nil (the store extends it)", err)
	}
	seal(t, s, "s", nil, 0, "4")
	if cp := readWitness(t, w); cp.Size != 4 {
		t.Errorf("witness after an older one was put back: size %d, want 4", cp.Size)
	}

	// Forged: a byte of the signed note changed.
	forged := []byte(strings.Replace(string(current), "\n3\n", "\n9\n", 1))
	os.WriteFile(w.Files[0], forged, 0o600)
	if err := trySeal(s, "s"); !errors.Is(err, ErrWitnessInvalid) {
		t.Errorf("forged witness: %v, want ErrWitnessInvalid", err)
	}

	// Missing, beside a store that records being witnessed there.
	os.Remove(w.Files[0])
	if err := trySeal(s, "s"); !errors.Is(err, ErrWitnessInvalid) {
		t.Errorf("missing witness: %v, want ErrWitnessInvalid", err)
	}
	if _, _, err := s.WitnessState(ctx); !errors.Is(err, ErrWitnessInvalid) {
		t.Errorf("missing witness: WitnessState = %v", err)
	}

	// Newer than the store: a checkpoint of a longer log, validly signed
	// (the store was rolled back since).
	other := b.open(t)
	ow := attachWitness(t, other, t.TempDir())
	for i := range 6 {
		seal(t, other, "s", nil, 0, fmt.Sprint(i))
	}
	newer, _ := os.ReadFile(ow.Files[0])
	os.WriteFile(w.Files[0], newer, 0o600)
	if err := trySeal(s, "s"); !errors.Is(err, ErrRolledBack) {
		t.Errorf("newer witness: %v, want ErrRolledBack", err)
	}
}

// A store never witnessed (one made before the witness existed) starts
// its witness at the first seal instead of refusing.
func TestWitnessStartsOnExistingStore(t *testing.T) {
	s := openTest(t)
	seal(t, s, "s", nil, 0, "before")
	w := attachWitness(t, s, "")
	seal(t, s, "s", nil, 0, "after")
	if cp := readWitness(t, w); cp == nil || cp.Size != 2 {
		t.Fatalf("witness %+v, want size 2", cp)
	}
}

// Concurrent writers of one witness file never let an older checkpoint
// replace a newer one.
func TestWitnessFileKeepsNewest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoint")
	signer := testSigner(t)
	var wg sync.WaitGroup
	for i := 1; i <= 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cp := Checkpoint{Origin: "o", Size: int64(i)}
			msg, err := signNote(cp, signer)
			if err == nil {
				err = writeWitnessFile(path, msg, cp.Size, false, false)
			}
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	cp, _, err := ReadWitnessFile(path, "o", testVerifier(t))
	if err != nil || cp == nil || cp.Size != 40 {
		t.Fatalf("witness after 40 concurrent writers: %+v %v, want size 40", cp, err)
	}
	if m, _ := filepath.Glob(path + ".tmp-*"); len(m) > 0 {
		t.Errorf("temp files left: %v", m)
	}
}

// Seals committed together (group commit) leave the witness at the end of
// the log.
func TestWitnessGroupCommit(t *testing.T) { forBackends(t, testWitnessGroupCommit) }

func testWitnessGroupCommit(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t)
	w := attachWitness(t, s, "")
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := trySeal(s, fmt.Sprintf("s%d", i%4)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	root, _ := s.TreeHash(ctx, 32)
	if cp := readWitness(t, w); cp.Size != 32 || cp.Root != root {
		t.Fatalf("witness after 32 concurrent seals: %+v, want size 32", cp)
	}
}

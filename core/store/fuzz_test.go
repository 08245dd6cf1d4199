package store

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// FuzzOpen feeds arbitrary bytes to Open as a database file, seeded with a
// real store and damaged copies. Property: nothing panics; a file that
// opens either fails Verify with ErrCorrupt or is consistent (the sessions
// add up to the log, and the log still accepts a seal).
func FuzzOpen(f *testing.F) {
	good := storeFile(f, 512)
	f.Add([]byte{})
	f.Add([]byte("SQLite format 3\x00"))
	f.Add(good)
	f.Add(good[:len(good)/2])
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)-100] ^= 0xff
	f.Add(flipped)
	header := append([]byte(nil), good...)
	header[60] ^= 0x01 // user_version
	f.Add(header)
	f.Fuzz(func(t *testing.T, file []byte) {
		path := filepath.Join(t.TempDir(), "joule.db")
		if err := os.WriteFile(path, file, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(path)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		defer s.Close()
		ctx := context.Background()
		if err := s.Verify(ctx); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				// Verify only reads; anything else is a driver error
				// worth seeing, but not a property violation if the
				// file is damaged in a way SQLite reports differently.
				t.Logf("verify: %v", err)
			}
			return
		}
		size, err := s.LogSize(ctx)
		if err != nil {
			t.Fatalf("verified store: log size: %v", err)
		}
		sessions, err := s.Sessions(ctx)
		if err != nil {
			t.Fatalf("verified store: sessions: %v", err)
		}
		var total uint64
		for _, si := range sessions {
			total += si.Count
		}
		if total != uint64(size) {
			t.Fatalf("verified store: sessions hold %d entries, log %d", total, size)
		}
		e, err := s.Seal(ctx, SealRequest{Session: "fuzz", Build: allowBuild("fuzz")})
		if err != nil {
			t.Logf("seal on a verified store: %v", err)
			return
		}
		if e.Index != size {
			t.Fatalf("seal landed at %d, log size was %d", e.Index, size)
		}
	})
}

// FuzzSeal seals arbitrary sessions, envelopes and amounts into one store.
// Property: a request is either refused with nothing written, or stored so
// that it reads back byte for byte, at the end of its session and the log,
// with the debit applied exactly when it was affordable and kept.
func FuzzSeal(f *testing.F) {
	s := openTest(f)
	const budget = 1_000_000
	putGrant(f, s, "g", "", budget)
	f.Add("session", []byte("receipt"), uint64(10), true)
	f.Add("", []byte("x"), uint64(0), false)
	f.Add("s\x00", []byte{}, uint64(math.MaxInt64), true)
	f.Add("ünïcode", []byte{0xff, 0x00}, uint64(math.MaxUint64), true)
	f.Add("s", []byte("y"), uint64(budget+1), true)
	f.Fuzz(func(t *testing.T, session string, envelope []byte, amount uint64, keep bool) {
		ctx := context.Background()
		before, err := s.Grant(ctx, "g")
		if err != nil {
			t.Fatal(err)
		}
		size, err := s.LogSize(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var debitErr error
		e, err := s.Seal(ctx, SealRequest{Session: session, Debit: []string{"g"}, AmountUJ: amount,
			Build: func(pos Position, de error) ([]byte, bool, error) {
				debitErr = de
				return envelope, keep, nil
			}})
		after, gerr := s.Grant(ctx, "g")
		if gerr != nil {
			t.Fatal(gerr)
		}
		newSize, serr := s.LogSize(ctx)
		if serr != nil {
			t.Fatal(serr)
		}
		if err != nil {
			if newSize != size || after.SpentUJ != before.SpentUJ {
				t.Fatalf("refused seal (%v) changed the store", err)
			}
			return
		}
		if e.Index != size || newSize != size+1 {
			t.Fatalf("sealed at %d, log %d -> %d", e.Index, size, newSize)
		}
		got, err := s.EntryAt(ctx, e.Index)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Envelope) != string(envelope) || got.Session != session || got.Seq != e.Seq {
			t.Fatalf("read back %+v, sealed %+v", got.Position, e.Position)
		}
		affordable := amount <= before.RemainingUJ()
		if (debitErr == nil) != affordable {
			t.Fatalf("amount %d with %d remaining: debit error %v", amount, before.RemainingUJ(), debitErr)
		}
		want := before.SpentUJ
		if affordable && keep {
			want += amount
		}
		if after.SpentUJ != want {
			t.Fatalf("spent %d -> %d, want %d (amount %d keep %t)", before.SpentUJ, after.SpentUJ, want, amount, keep)
		}
	})
}

// FuzzWitnessFile feeds arbitrary witness files to the seal's reader
// (without the file's lock) and to store check's (with it): neither
// panics, and each accepts only a canonical checkpoint the key signed.
func FuzzWitnessFile(f *testing.F) {
	signer, verifier := testSigner(f), testVerifier(f)
	good, _ := signNote(Checkpoint{Origin: "o", Size: 3}, signer)
	f.Add(good)
	f.Add([]byte("o\n3\nAAAA\n\n— joule.test abc\n"))
	f.Add([]byte{})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "checkpoint")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		noteSize(b)
		for _, locked := range []bool{false, true} {
			cp, _, err := openWitnessFile(path, "o", verifier, locked)
			if err != nil || cp == nil {
				continue
			}
			if again, perr := ParseCheckpoint(cp.Text()); perr != nil || again.Size != cp.Size {
				t.Fatalf("accepted a checkpoint that does not round-trip: %+v", cp)
			}
			if _, verr := note.Open(b, note.VerifierList(verifier)); verr != nil {
				t.Fatalf("accepted a note the key did not sign: %v", verr)
			}
		}
	})
}

package witness

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/joulehook/joule/core/store"
)

// teamMachine is one machine of a team sharing a store: its own log origin
// and key, and the size the witness last cosigned of its log.
type teamMachine struct {
	log    TeamLog
	signer note.Signer
	vkey   string
	known  int64
}

func newTeamMachine(t *testing.T, name string) *teamMachine {
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return &teamMachine{log: TeamLog{Origin: "joule receipts log " + name, Key: v}, signer: s, vkey: vkey}
}

// TestCheckTeam: two machines append to one store and each has the team's
// witness cosign the log as its own. A copy of the store from before the
// other machine's last receipts is refused by CheckTeam (store-rolled-back)
// on every machine, though it extends what the witness cosigned of the
// machine that did not append since, which is all that machine's own
// witness would check.
func TestCheckTeam(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "team.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, b := newTeamMachine(t, "a.test"), newTeamMachine(t, "b.test")
	wdir := t.TempDir()
	wv, err := InitServer(wdir, "team.test/witness")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := OpenServer(wdir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*teamMachine{a, b} {
		if err := srv.AddLog(m.log.Origin, []string{m.vkey}); err != nil {
			t.Fatal(err)
		}
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	client := &Client{URL: hs.URL, Key: wv}

	// appendAndCosign seals n receipts as m and has the witness cosign
	// the log as m's.
	appendAndCosign := func(m *teamMachine, n int) {
		t.Helper()
		for range n {
			if _, err := st.Seal(ctx, store.SealRequest{Session: m.log.Key.Name(), Build: func(pos store.Position, _ error) ([]byte, bool, error) {
				return fmt.Appendf(nil, "receipt %s %d", pos.Session, pos.Seq), false, nil
			}}); err != nil {
				t.Fatal(err)
			}
		}
		sum, err := st.Summarize(ctx)
		if err != nil {
			t.Fatal(err)
		}
		size := sum.LogSize
		root, err := st.TreeHash(ctx, size)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := note.Sign(&note.Note{Text: string(store.Checkpoint{Origin: m.log.Origin, Size: size, Root: root}.Text())}, m.signer)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.Cosign(ctx, msg, size, m.known, func(old int64) (tlog.TreeProof, error) { return st.ProveTree(ctx, old, size) }); err != nil {
			t.Fatalf("cosign %s at %d: %v", m.log.Origin, size, err)
		}
		m.known = size
	}
	appendAndCosign(a, 2)
	appendAndCosign(b, 1)
	old := filepath.Join(dir, "old.db")
	if err := st.Backup(ctx, old); err != nil {
		t.Fatal(err)
	}
	appendAndCosign(a, 3)

	team := []TeamLog{a.log, b.log}
	if n, err := CheckTeam(ctx, st, client, team, true); err != nil || n != 2 {
		t.Fatalf("the store as it is: %d checked, %v", n, err)
	}
	restored, err := store.Open(old)
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	// What b's own witness sees: its last cosigned checkpoint, extended.
	if n, err := CheckTeam(ctx, restored, client, []TeamLog{b.log}, true); err != nil || n != 1 {
		t.Fatalf("control: b's own log on the old copy: %d checked, %v", n, err)
	}
	_, err = CheckTeam(ctx, restored, client, team, true)
	if !errors.Is(err, store.ErrRolledBack) || !strings.Contains(err.Error(), "fewer than the 6 cosigned") || !strings.Contains(err.Error(), "a.test") {
		t.Fatalf("the old copy, checked against the team: %v", err)
	}

	// A log the witness has not cosigned is not a failure; one whose
	// checkpoint is not signed by the key given is.
	c := newTeamMachine(t, "c.test")
	if n, err := CheckTeam(ctx, st, client, []TeamLog{c.log}, true); err != nil || n != 0 {
		t.Fatalf("a log the witness does not know: %d checked, %v", n, err)
	}
	if _, err := CheckTeam(ctx, st, client, []TeamLog{{Origin: a.log.Origin, Key: c.log.Key}}, true); err == nil || errors.Is(err, store.ErrRolledBack) {
		t.Fatalf("a's checkpoint checked with another key: %v", err)
	}
}

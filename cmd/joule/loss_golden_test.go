package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// TestLossReceiptGolden pins the payload of the receipt accept-loss
// seals, byte for byte but for its nonce (drawn fresh each time).
func TestLossReceiptGolden(t *testing.T) {
	seed := core.Sum([]byte("loss golden"))
	key := ed25519.NewKeyFromSeed(seed[:])
	sealer, err := core.NewSealer("loss.golden", key)
	if err != nil {
		t.Fatal(err)
	}
	verifier, _ := core.NewVerifier("loss.golden", key.Public().(ed25519.PublicKey))
	now := time.Date(2026, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
	witnessed := &store.Checkpoint{Origin: "joule receipts log loss.golden", Size: 4, Root: [32]byte{1, 2, 3}}
	cur := store.Checkpoint{Origin: "joule receipts log loss.golden", Size: 2, Root: [32]byte{9, 8, 7}}
	pos := store.Position{Session: LossSession, Seq: 3, Prev: [32]byte{5}, Index: 2}
	found := fmt.Errorf("%w: the witness remembers 4 receipts, the store holds 2", store.ErrRolledBack)
	long := errors.New(strings.Repeat("w", 1000))
	got := map[string][]byte{}
	for _, c := range []struct {
		name      string
		witnessed *store.Checkpoint
		found     error
	}{
		{"rolled-back", witnessed, found},
		{"no-witness", nil, found},
		{"no-complaint", witnessed, nil},
		{"long-complaint", witnessed, long},
	} {
		env, summary, err := lossReceipt(sealer, pos, c.witnessed, cur, c.found, now, "/golden/home")
		if err != nil {
			t.Fatal(err)
		}
		payload, err := verifier.Open(env)
		if err != nil {
			t.Fatal(err)
		}
		a, err := receipts.Decode(payload)
		if err != nil {
			t.Fatal(err)
		}
		if a.Decision.Summary != summary {
			t.Errorf("%s: summary %q, the receipt's %q", c.name, summary, a.Decision.Summary)
		}
		nonce := []byte(a.Decision.Nonce)
		if bytes.Count(payload, nonce) != 1 {
			t.Fatalf("nonce %s appears %d times", nonce, bytes.Count(payload, nonce))
		}
		got[c.name] = bytes.Replace(payload, nonce, bytes.Repeat([]byte("0"), 32), 1)
	}
	path := filepath.Join("testdata", "loss-receipts.golden")
	if *update {
		var b strings.Builder
		names := make([]string, 0, len(got))
		for n := range got {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(&b, "%s %x\n", n, got[n])
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != len(got) {
		t.Errorf("%d golden payloads, %d sealed", len(lines), len(got))
	}
	for _, line := range lines {
		name, h, _ := strings.Cut(line, " ")
		want, err := hex.DecodeString(h)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got[name], want) {
			t.Errorf("%s: payload\n%x\nwant\n%x", name, got[name], want)
		}
	}
}

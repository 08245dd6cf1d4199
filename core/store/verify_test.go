package store

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestVerifyDetectsTampering damages a healthy store one way at a time,
// directly in SQL, and expects Verify (and where stated, the hot path) to
// refuse it.
func TestVerifyDetectsTampering(t *testing.T) { forBackends(t, testVerifyDetectsTampering) }

func testVerifyDetectsTampering(t *testing.T, b backend) {
	tests := []struct {
		name     string
		sql      string
		want     string
		sealFail bool // Seal must also refuse to extend the damaged store
	}{
		{"envelope rewritten", `UPDATE entries SET envelope = X'00' WHERE idx = 3`, "envelope does not match its hash", false},
		{"chain relinked", `UPDATE entries SET prev = zeroblob(32) WHERE idx = 4`, "does not link", false},
		{"sequence gap", `UPDATE entries SET seq = 9 WHERE idx = 5`, "has sequence 9", false},
		{"tree hash altered", `UPDATE tlog_hashes SET hash = zeroblob(32) WHERE id = 2`, "stored tree hash 2 does not match", false},
		{"tree hash deleted", `DELETE FROM tlog_hashes WHERE id = (SELECT MAX(id) FROM tlog_hashes)`, "stored tree hashes", true},
		{"spent altered", `UPDATE grants SET spent_uj = spent_uj - 1 WHERE id = 'g'`, "ledger sums to", false},
		{"reservation hold altered", `UPDATE grants SET reserved_uj = 0 WHERE id = 'g'`, "reservations sum to", false},
		{"session head altered", `UPDATE sessions SET last_seq = 2 WHERE id = 'a'`, "head is sequence 2", false},
		{"checkpoint root altered", `UPDATE checkpoints SET root = zeroblob(32)`, "checkpoint 1 root does not match", false},
		{"checkpoint note altered", `UPDATE checkpoints SET note = X'6f0a'`, "not a signed note", false},
		{"bad hash length", `UPDATE sessions SET head = X'01' WHERE id = 'b'`, "", false}, // refused by the CHECK constraint
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := b.open(t)
			ctx := context.Background()
			putGrant(t, s, "g", "", 1000)
			for i := range 8 {
				seal(t, s, []string{"a", "b"}[i%2], []string{"g"}, 5, "t")
			}
			if _, err := s.Reserve(ctx, []string{"g"}, 40); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Checkpoint(ctx, "o", testSigner(t)); err != nil {
				t.Fatal(err)
			}
			checkConsistent(t, s)
			_, err := rawExec(s, tt.sql)
			if tt.want == "" {
				if err == nil {
					t.Fatal("schema accepted a malformed hash")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			err = s.Verify(ctx)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Verify = %v, want ErrCorrupt mentioning %q", err, tt.want)
			}
			if tt.sealFail {
				_, err := s.Seal(ctx, SealRequest{Session: "a", Build: allowBuild("after")})
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Seal on a damaged log: %v, want ErrCorrupt", err)
				}
			}
		})
	}
}

package store

import (
	"context"
	"fmt"
	"testing"
)

func TestSessionRange(t *testing.T) { forBackends(t, testSessionRange) }

func testSessionRange(t *testing.T, b backend) {
	s := b.open(t)
	for i := 1; i <= 7; i++ {
		seal(t, s, "a", nil, 0, fmt.Sprintf("a%d", i))
		if i%2 == 0 {
			seal(t, s, "b", nil, 0, fmt.Sprintf("b%d", i))
		}
	}
	ctx := context.Background()
	tests := []struct {
		session   string
		after     uint64
		limit     int
		wantSeqs  []uint64
		wantError bool
	}{
		{"a", 0, 3, []uint64{1, 2, 3}, false},
		{"a", 3, 3, []uint64{4, 5, 6}, false},
		{"a", 6, 3, []uint64{7}, false},
		{"a", 7, 3, nil, false},
		{"b", 1, 10, []uint64{2, 3}, false},
		{"a", 0, 0, nil, false},
		{"none", 0, 5, nil, false},
		{"", 0, 5, nil, true},
	}
	for _, tt := range tests {
		got, err := s.SessionRange(ctx, tt.session, tt.after, tt.limit)
		if (err != nil) != tt.wantError {
			t.Errorf("SessionRange(%q, %d, %d): %v", tt.session, tt.after, tt.limit, err)
			continue
		}
		var seqs []uint64
		for _, e := range got {
			if e.Session != tt.session {
				t.Errorf("entry of session %q", e.Session)
			}
			seqs = append(seqs, e.Seq)
		}
		if fmt.Sprint(seqs) != fmt.Sprint(tt.wantSeqs) {
			t.Errorf("SessionRange(%q, %d, %d) = %v, want %v", tt.session, tt.after, tt.limit, seqs, tt.wantSeqs)
		}
	}
	// Pages match the whole chain.
	all, _ := s.Session(ctx, "a")
	page, _ := s.SessionRange(ctx, "a", 2, 2)
	if page[0].Hash != all[2].Hash || page[1].Prev != all[2].Hash {
		t.Error("page entries differ from the chain")
	}
}

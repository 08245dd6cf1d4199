package receipts

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/joulehook/joule/core"
)

func TestNewDecision(t *testing.T) {
	when := time.Date(2026, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
	at := Link{Session: "s", Sequence: 2, Prev: core.Sum([]byte("before"))}
	nonce := strings.Repeat("ab", 16)
	act := func(edit func(*Act)) Act {
		a := Act{Time: when, Tool: "Bash", InputDigest: core.Sum([]byte("{}")), Summary: "Bash: ls", Cwd: "/w",
			Decision: Allow, Code: "allowed", Reason: "ok", Grants: []string{"g"}, DebitUJ: 5, Nonce: nonce}
		if edit != nil {
			edit(&a)
		}
		return a
	}
	want := func(edit func(*Decision)) *Decision {
		d := &Decision{Kind: KindDecision, Session: "s", Sequence: 2, Prev: at.Prev, TimeMS: uint64(when.UnixMilli()), Tool: "Bash",
			InputDigest: core.Sum([]byte("{}")), Summary: "Bash: ls", Cwd: "/w", Decision: Allow, Code: "allowed", Reason: "ok",
			Grants: []string{"g"}, DebitUJ: 5, Provenance: core.Estimator, Nonce: nonce, Steward: steward}
		if edit != nil {
			edit(d)
		}
		return d
	}
	tests := []struct {
		name    string
		act     Act
		want    *Decision
		wantErr string
	}{
		{"allow", act(nil), want(nil), ""},
		{"nil grants are none", act(func(a *Act) { a.Grants = nil }), want(func(d *Decision) { d.Grants = []string{} }), ""},
		{"content id", act(func(a *Act) { a.ContentID = "sha256:x" }), want(func(d *Decision) { d.ContentID = "sha256:x" }), ""},
		{"deny", act(func(a *Act) { a.Decision, a.Code, a.DebitUJ = Deny, "no", 0 }), want(func(d *Decision) { d.Decision, d.Code, d.DebitUJ = Deny, "no", 0 }), ""},
		{"reason at the bound", act(func(a *Act) { a.Reason = strings.Repeat("x", MaxReason) }), want(func(d *Decision) { d.Reason = strings.Repeat("x", MaxReason) }), ""},
		{"reason over the bound", act(func(a *Act) { a.Reason = strings.Repeat("x", MaxReason+1) }), want(func(d *Decision) { d.Reason = strings.Repeat("x", MaxReason) + "…" }), ""},
		{"reason cut on a rune", act(func(a *Act) { a.Reason = "a" + strings.Repeat("é", MaxReason) }), want(func(d *Decision) { d.Reason = "a" + strings.Repeat("é", MaxReason/2-1) + "…" }), ""},
		{"a deny debits nothing", act(func(a *Act) { a.Decision = Deny }), nil, "a deny debits nothing"},
		{"unknown decision", act(func(a *Act) { a.Decision = "maybe" }), nil, `decision "maybe"`},
		{"no code", act(func(a *Act) { a.Code = "" }), nil, "code is empty"},
		{"bad nonce", act(func(a *Act) { a.Nonce = "XYZ" }), nil, "nonce"},
		{"no time", act(func(a *Act) { a.Time = time.Time{} }), nil, "no time"},
		{"no session", Act{Time: when, Decision: Allow, Code: "c"}, nil, "session, sequence and steward"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := at
			if tt.name == "no session" {
				l = Link{}
			}
			got, err := NewDecision(l, steward, tt.act)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			gb, _ := core.Canonical(got)
			wb, _ := core.Canonical(tt.want)
			if !bytes.Equal(gb, wb) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
			if !utf8.ValidString(got.Reason) {
				t.Fatal("reason is not valid UTF-8")
			}
		})
	}
}

func TestNewDecisionDrawsNonce(t *testing.T) {
	at := Link{Session: "s", Sequence: 1}
	act := Act{Time: time.Unix(1, 0), Decision: Allow, Code: "c"}
	a, err := NewDecision(at, steward, act)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewDecision(at, steward, act)
	if !core.ValidNonce(a.Nonce) || a.Nonce == b.Nonce {
		t.Fatalf("nonces %q, %q: want two fresh ones", a.Nonce, b.Nonce)
	}
}

func TestSealDecision(t *testing.T) {
	s, v := keys(t)
	act := Act{Time: time.Unix(1, 0), Tool: "Bash", Decision: Deny, Code: "no", Reason: "r", Nonce: strings.Repeat("cd", 16)}
	first, err := SealDecision(s, Link{Session: "s", Sequence: 1}, act)
	if err != nil {
		t.Fatal(err)
	}
	second, err := SealDecision(s, Link{Session: "s", Sequence: 2, Prev: core.Sum(first)}, act)
	if err != nil {
		t.Fatal(err)
	}
	got, err := VerifyChain(v, steward, [][]byte{first, second})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := NewDecision(Link{Session: "s", Sequence: 2, Prev: core.Sum(first)}, steward, act)
	if gb, wb := mustCanonical(t, got[1].Decision), mustCanonical(t, want); !bytes.Equal(gb, wb) {
		t.Fatalf("sealed %+v, want %+v", got[1].Decision, want)
	}
	if _, err := SealDecision(s, Link{Session: "s", Sequence: 1}, Act{Time: time.Unix(1, 0), Decision: Allow}); err == nil {
		t.Fatal("sealed a receipt without a code")
	}
}

func mustCanonical(t *testing.T, v any) []byte {
	t.Helper()
	b, err := core.Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTruncate(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc…"},
		{"aé", 2, "a…"},
		{"éé", 3, "é…"},
		{"日本", 2, "…"},
	} {
		if got := Truncate(tt.in, tt.n); got != tt.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

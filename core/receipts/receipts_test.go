package receipts

import (
	"bytes"
	"crypto/ed25519"
	"strings"
	"testing"

	"github.com/joulehook/joule/core"
)

const steward = "receipts.test"

func keys(t testing.TB) (*core.Sealer, *core.Verifier) {
	seed := core.Sum([]byte("receipts test"))
	key := ed25519.NewKeyFromSeed(seed[:])
	s, err := core.NewSealer(steward, key)
	if err != nil {
		t.Fatal(err)
	}
	v, err := core.NewVerifier(steward, key.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return s, v
}

func decision(seq uint64, prev core.ID) *Decision {
	return &Decision{Kind: KindDecision, Session: "s", Sequence: seq, Prev: prev, TimeMS: 1, Tool: "Bash",
		InputDigest: core.Sum([]byte("{}")), Summary: "Bash: ls", Cwd: "/w", Decision: Allow, Code: "allowed",
		Reason: "ok", Grants: []string{"g"}, DebitUJ: 5, Provenance: core.Estimator, Nonce: strings.Repeat("ab", 16), Steward: steward}
}

func efficiency(seq uint64, prev core.ID) *Efficiency {
	m := uint64(9)
	return &Efficiency{Kind: KindEfficiency, Session: "s", Sequence: seq, Prev: prev, TimeMS: 2, Unit: "model-call", Model: "claude-x",
		InputTokens: 10, OutputTokens: 20, EstimatedUJ: 100, MeasuredUJ: &m, Provenance: core.HwShunt, Coverage: CoverageEnforced,
		Status: StatusComplete, Grants: []string{}, Nonce: strings.Repeat("cd", 16), Steward: steward}
}

// chain seals n receipts, alternating kinds, each linked to the one before.
func chain(t testing.TB, n int) [][]byte {
	s, _ := keys(t)
	var envs [][]byte
	var prev core.ID
	for i := 1; i <= n; i++ {
		var c interface{ Validate() error }
		if i%2 == 1 {
			c = decision(uint64(i), prev)
		} else {
			c = efficiency(uint64(i), prev)
		}
		payload, err := Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		env, err := s.SealPayload(payload)
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, env)
		prev = core.Sum(env)
	}
	return envs
}

func TestVerifyChain(t *testing.T) {
	_, v := keys(t)
	envs := chain(t, 6)
	got, err := VerifyChain(v, steward, envs)
	if err != nil || len(got) != 6 {
		t.Fatalf("%d, %v", len(got), err)
	}
	if got[0].Decision == nil || got[1].Efficiency == nil {
		t.Fatal("kinds not decoded")
	}
	drop := func(i int) [][]byte { return append(append([][]byte{}, envs[:i]...), envs[i+1:]...) }
	tests := []struct {
		name string
		envs [][]byte
		pos  int
	}{
		{"first deleted", drop(0), 1},
		{"middle deleted", drop(3), 4},
		{"swapped", [][]byte{envs[0], envs[2], envs[1], envs[3]}, 2},
		{"duplicated", [][]byte{envs[0], envs[1], envs[1], envs[2]}, 3},
		{"foreign steward", [][]byte{envs[0], []byte{0xd2}}, 2},
	}
	for _, tt := range tests {
		_, err := VerifyChain(v, steward, tt.envs)
		ce, ok := err.(*ChainError)
		if !ok || ce.Position != tt.pos {
			t.Errorf("%s: got %v, want a break at %d", tt.name, err, tt.pos)
		}
	}
	// Every single-byte flip breaks the chain at the flipped receipt.
	for r := range envs {
		for i := 0; i < len(envs[r]); i++ {
			c := append([][]byte(nil), envs...)
			c[r] = bytes.Clone(envs[r])
			c[r][i] ^= 0x10
			_, err := VerifyChain(v, steward, c)
			ce, ok := err.(*ChainError)
			if !ok || ce.Position != r+1 {
				t.Fatalf("receipt %d byte %d: %v", r, i, err)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		c    interface{ Validate() error }
	}{
		{"deny with debit", func() *Decision { d := decision(1, core.ID{}); d.Decision = Deny; return d }()},
		{"bad decision", func() *Decision { d := decision(1, core.ID{}); d.Decision = "maybe"; return d }()},
		{"sequence zero", decision(0, core.ID{})},
		{"hwshunt decision", func() *Decision { d := decision(1, core.ID{}); d.Provenance = core.HwShunt; return d }()},
		{"no code", func() *Decision { d := decision(1, core.ID{}); d.Code = ""; return d }()},
		{"bad nonce", func() *Decision { d := decision(1, core.ID{}); d.Nonce = "x"; return d }()},
		{"coupling", func() *Efficiency { e := efficiency(1, core.ID{}); e.MeasuredUJ = nil; return e }()},
		{"estimator with measured", func() *Efficiency { e := efficiency(1, core.ID{}); e.Provenance = core.Estimator; return e }()},
		{"bad coverage", func() *Efficiency { e := efficiency(1, core.ID{}); e.Coverage = "all"; return e }()},
		{"bad status", func() *Efficiency { e := efficiency(1, core.ID{}); e.Status = "done"; return e }()},
		{"bad tier", func() *Efficiency { e := efficiency(1, core.ID{}); e.Tier = "L9"; return e }()},
		{"no unit", func() *Efficiency { e := efficiency(1, core.ID{}); e.Unit = ""; return e }()},
	}
	for _, tt := range tests {
		if _, err := Encode(tt.c); err == nil {
			t.Errorf("%s: encoded", tt.name)
		}
	}
}

func TestDecodeRejectsNonCanonical(t *testing.T) {
	payload, _ := Encode(decision(1, core.ID{}))
	if _, err := Decode(payload); err != nil {
		t.Fatal(err)
	}
	bad := append(bytes.Clone(payload), 0)
	if _, err := Decode(bad); err == nil {
		t.Fatal("trailing byte accepted")
	}
	if _, err := Decode([]byte{0xa1, 0x6a, 'j', 'c', '_', 'r', 'e', 'c', 'e', 'i', 'p', 't', 0x61, 'x'}); err == nil || !strings.Contains(err.Error(), "unknown kind") {
		t.Fatalf("unknown kind: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, c := range []interface{ Validate() error }{decision(1, core.ID{}), efficiency(2, core.Sum(nil)), batched()} {
		b, _ := Encode(c)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Decode(data)
		if err != nil {
			return
		}
		var c interface{ Validate() error } = a.Decision
		if a.Efficiency != nil {
			c = a.Efficiency
		}
		again, err := Encode(c)
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("decode-encode not identical: %v", err)
		}
	})
}

// TestKeysVerifyMixedChain: on a shared log one session's chain may be
// sealed by several machines, each with its own key. Keys verifies each
// receipt with the key its kid names, and names a steward it cannot trust.
func TestKeysVerifyMixedChain(t *testing.T) {
	mk := func(name string) (*core.Sealer, core.PublicKey) {
		seed := core.Sum([]byte(name))
		key := ed25519.NewKeyFromSeed(seed[:])
		s, err := core.NewSealer(name, key)
		if err != nil {
			t.Fatal(err)
		}
		var pub core.PublicKey
		copy(pub[:], key.Public().(ed25519.PublicKey))
		return s, pub
	}
	a, aPub := mk("gw-a.example")
	b, bPub := mk("gw-b.example")
	var envs [][]byte
	var prev core.ID
	for i := 1; i <= 4; i++ {
		s, name := a, "gw-a.example"
		if i%2 == 0 {
			s, name = b, "gw-b.example"
		}
		d := decision(uint64(i), prev)
		d.Steward = name
		payload, err := Encode(d)
		if err != nil {
			t.Fatal(err)
		}
		env, err := s.SealPayload(payload)
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, env)
		prev = core.Sum(env)
	}
	both, err := NewKeys(map[string]core.PublicKey{"gw-a.example": aPub, "gw-b.example": bPub})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := both.VerifyChain(envs); err != nil || len(got) != 4 {
		t.Fatalf("mixed chain: %d, %v", len(got), err)
	}
	onlyA, _ := NewKeys(map[string]core.PublicKey{"gw-a.example": aPub})
	_, err = onlyA.VerifyChain(envs)
	if ce, ok := err.(*ChainError); !ok || ce.Position != 2 || !strings.Contains(ce.Reason, `"gw-b.example"`) {
		t.Fatalf("untrusted steward: %v", err)
	}
	// A key filed under the wrong name verifies nothing.
	swapped, _ := NewKeys(map[string]core.PublicKey{"gw-a.example": bPub, "gw-b.example": aPub})
	if _, err := swapped.VerifyChain(envs); err == nil {
		t.Fatal("keys under the wrong stewards verified the chain")
	}
	for i := range envs[1] {
		c := append([][]byte(nil), envs...)
		c[1] = bytes.Clone(envs[1])
		c[1][i] ^= 0x01
		if _, err := both.VerifyChain(c); err == nil {
			t.Fatalf("byte %d of receipt 2 flipped, chain still verifies", i)
		}
	}
}

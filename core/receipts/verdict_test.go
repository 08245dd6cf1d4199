package receipts

import (
	"crypto/ed25519"
	"strings"
	"testing"

	"github.com/joulehook/joule/core"
)

// Each damage to a chain of five gets its own verdicts, receipt by
// receipt, and the receipts it does not touch stay ok.
func TestVerdicts(t *testing.T) {
	_, v := keys(t)
	k := Keys{steward: v}
	other := ed25519.NewKeyFromSeed(make([]byte, 32))
	stranger, err := core.NewSealer("stranger.test", other)
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := stranger.SealPayload([]byte{0xa0})
	if err != nil {
		t.Fatal(err)
	}
	flip := func(env []byte) []byte {
		c := append([]byte(nil), env...)
		c[len(c)-10] ^= 1 // inside the signature
		return c
	}
	for _, tc := range []struct {
		name   string
		damage func(e [][]byte) [][]byte
		want   string // one letter per receipt: o ok, s bad-signature, c broken-chain, u undecodable, t untrusted
	}{
		{"intact", func(e [][]byte) [][]byte { return e }, "ooooo"},
		{"flipped", func(e [][]byte) [][]byte { e[2] = flip(e[2]); return e }, "oosco"},
		{"deleted", func(e [][]byte) [][]byte { return append(e[:2:2], e[3:]...) }, "ooco"},
		{"reordered", func(e [][]byte) [][]byte { e[1], e[2] = e[2], e[1]; return e }, "occco"},
		{"duplicated", func(e [][]byte) [][]byte { return append(e, e[1]) }, "oooooc"},
		{"garbage", func(e [][]byte) [][]byte { e[0] = []byte("not cbor"); return e }, "ucooo"},
		{"foreign steward", func(e [][]byte) [][]byte { e[4] = foreign; return e }, "oooot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			for _, vd := range k.Verdicts(tc.damage(chain(t, 5))) {
				letter := map[string]string{VerdictOK: "o", VerdictBadSignature: "s", VerdictBrokenChain: "c", VerdictUndecodable: "u", VerdictUntrusted: "t"}[vd.Verdict]
				if (vd.Verdict == VerdictOK) != (vd.Reason == "") {
					t.Errorf("receipt %d: verdict %s with reason %q", vd.Position, vd.Verdict, vd.Reason)
				}
				got += letter
			}
			if got != tc.want {
				t.Errorf("verdicts %s, want %s", got, tc.want)
			}
		})
	}
	// VerifyChain and Verdicts agree on the first bad position.
	envs := chain(t, 5)
	envs[3] = flip(envs[3])
	_, err = k.VerifyChain(envs)
	var ce *ChainError
	if !asChainError(err, &ce) || ce.Position != 4 || k.Verdicts(envs)[3].Verdict != VerdictBadSignature {
		t.Errorf("VerifyChain %v; Verdicts %+v", err, k.Verdicts(envs)[3])
	}
	if !strings.Contains(k.Verdicts(envs)[4].Reason, "prev") {
		t.Errorf("the receipt after a flipped one: %+v", k.Verdicts(envs)[4])
	}
}

func asChainError(err error, ce **ChainError) bool {
	c, ok := err.(*ChainError)
	*ce = c
	return ok
}

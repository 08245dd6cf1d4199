package gate

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/joulehook/joule/core/store"
)

// BenchmarkGateWitness is BenchmarkGateFiveCommands on two stores, one
// without a witness (the baseline) and one with the home's witness file,
// interleaved in one run: x-base is the witnessed decision's time over the
// baseline's (target ≤ 1.10).
func BenchmarkGateWitness(b *testing.B) {
	skey, vkey, err := note.GenerateKey(nil, "gate.test")
	if err != nil {
		b.Fatal(err)
	}
	signer, _ := note.NewSigner(skey)
	verifier, _ := note.NewVerifier(vkey)
	var gates [2]*Gate
	var events [2][]byte
	for i := range gates {
		g := liveGrant()
		g.Allow = testAllow
		g.Ask, g.Deny = testAsk, testDeny
		g.BudgetUJ = 1 << 60
		gt, ws := storeGate(b, g, nil)
		if i == 1 {
			if err := gt.Store.SetWitness(&store.Witness{Origin: "bench", Signer: signer, Verifier: verifier,
				Files: []string{filepath.Join(filepath.Dir(gt.Store.Path()), "witness", "checkpoint")}, Marker: "bench", NoSync: true,
				OnError: func(err error) { b.Error(err) }}); err != nil {
				b.Fatal(err)
			}
		}
		gates[i] = gt
		events[i], _ = json.Marshal(map[string]any{"session_id": "s", "tool": "Bash", "cwd": ws,
			"input": map[string]any{"command": "go build ./... && go test ./... | grep -v ok; git status; echo done"}})
	}
	ctx := context.Background()
	var spent [2]time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		for k := range gates {
			j := (i + k) % 2
			start := time.Now()
			if r := gates[j].DecideJSON(ctx, events[j]); r.Decision != Allow || r.Receipt == "" {
				b.Fatalf("%+v", r)
			}
			spent[j] += time.Since(start)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(spent[0].Microseconds())/n, "base-µs/decision")
	b.ReportMetric(float64(spent[1].Microseconds())/n, "witness-µs/decision")
	b.ReportMetric(float64(spent[1])/float64(spent[0]), "x-base")
}

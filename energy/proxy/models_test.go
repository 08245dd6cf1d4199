package proxy

import (
	"fmt"
	"testing"

	"github.com/joulehook/joule/energy"
)

// TestModelCache: what the cache answers is what the table answers, for
// default, configured and calibrated models, asked once or again; and a
// flood of distinct names does not grow it without bound.
func TestModelCache(t *testing.T) {
	table := &energy.Table{
		Rules:        []energy.ClassRule{{Pattern: "my-*", Class: "mine"}},
		Rates:        map[energy.Class]energy.Rates{"mine": {InputUJ: 7, CachedUJ: 1, OutputUJ: 90}},
		OutputCaps:   map[energy.Class]uint64{"mine": 321},
		Calibrations: []energy.Calibration{{Model: "llama3.2", ID: "fit-1", Rates: energy.Rates{InputUJ: 10_000, CachedUJ: 1, OutputUJ: 200_000}}},
	}
	u := energy.Usage{Input: 1000, CachedInput: 200, CacheWrite: 50, Output: 300}
	ms := newModels(table)
	for _, model := range []string{"claude-sonnet-4-5", "claude-sonnet-4-5-20250929", "gpt-4o-mini", "llama3.2", "llama3.2:latest",
		"my-model", "Qwen/Qwen3-32B", "text-embedding-3-small", "", "unknown-thing"} {
		t.Run(model, func(t *testing.T) {
			for range 2 { // computed, then cached
				mi := ms.get(model)
				if got, want := mi.energy(u), table.Energy(model, u); got != want {
					t.Errorf("energy %+v, want %+v", got, want)
				}
				if got, want := mi.maxOut, table.MaxOutput(model); got != want {
					t.Errorf("output cap %d, want %d", got, want)
				}
			}
		})
	}
	for i := range 3 * maxModels {
		ms.get(fmt.Sprintf("model-%d", i))
	}
	if n := len(ms.m); n > maxModels {
		t.Errorf("%d models cached, bound %d", n, maxModels)
	}
}

package proxy

import (
	"sync"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/energy"
)

// maxModels bounds the model cache: model names come from clients.
const maxModels = 1024

// models remembers what the energy table says about each model name the
// calls use: matching a name against the table's glob rules, three times a
// call, cost more than the rest of the proxy's own metering. The table does
// not change after New.
type models struct {
	table *energy.Table
	mu    sync.RWMutex
	m     map[string]modelInfo
}

type modelInfo struct {
	rates  energy.Rates
	class  energy.Class
	prov   core.Provenance
	basis  string
	maxOut uint64 // output cap assumed when a request names none
}

func newModels(t *energy.Table) *models {
	return &models{table: t, m: map[string]modelInfo{}}
}

func (ms *models) get(model string) modelInfo {
	ms.mu.RLock()
	mi, ok := ms.m[model]
	ms.mu.RUnlock()
	if ok {
		return mi
	}
	mi.rates, mi.class, mi.prov, mi.basis = ms.table.RatesFor(model)
	mi.maxOut = ms.table.MaxOutput(model)
	ms.mu.Lock()
	if len(ms.m) >= maxModels {
		clear(ms.m)
	}
	ms.m[model] = mi
	ms.mu.Unlock()
	return mi
}

// energy is Table.Energy for the model.
func (mi modelInfo) energy(u energy.Usage) energy.Estimate {
	return energy.Estimate{UJ: mi.rates.Of(u), Class: mi.class, Provenance: mi.prov, Basis: mi.basis}
}

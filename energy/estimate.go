// Package energy turns model usage into microjoules at honest provenance:
// per-token coefficients by model class (Estimator), per-model calibrations
// (ModelBased), and hardware counters (RAPL, NVML) trusted as HwShunt only
// after a liveness probe shows them advancing under load.
package energy

import (
	"fmt"
	"math/bits"
	"path"
	"strings"

	"github.com/joulehook/joule/core"
)

// Usage is one call's tokens in disjoint buckets, the form the coefficients
// multiply: uncached input, cache reads, cache writes, and output (reasoning
// included).
type Usage struct {
	Input       uint64 `json:"input_tokens"`
	CachedInput uint64 `json:"cached_input_tokens"`
	CacheWrite  uint64 `json:"cache_write_tokens"`
	Output      uint64 `json:"output_tokens"`
}

// Add returns u + v, saturating.
func (u Usage) Add(v Usage) Usage {
	return Usage{sat(u.Input, v.Input), sat(u.CachedInput, v.CachedInput), sat(u.CacheWrite, v.CacheWrite), sat(u.Output, v.Output)}
}

// Zero reports whether no token was counted.
func (u Usage) Zero() bool { return u == Usage{} }

// Rates are per-token energies in µJ. Cache writes are charged at the
// uncached-input rate (energy.md §1.10: the write premium is storage).
type Rates struct {
	InputUJ  uint64 `json:"input_uj"`
	CachedUJ uint64 `json:"cached_uj"`
	OutputUJ uint64 `json:"output_uj"`
}

// Of returns the energy of u at r, saturating at the largest uint64.
func (r Rates) Of(u Usage) uint64 {
	total := mul(sat(u.Input, u.CacheWrite), r.InputUJ)
	total = sat(total, mul(u.CachedInput, r.CachedUJ))
	return sat(total, mul(u.Output, r.OutputUJ))
}

// Class names a row of the coefficient table.
type Class string

// The default classes (energy.md §1.10).
const (
	Small         Class = "small"          // 1–8B, local, batch 1
	Mid           Class = "mid"            // 30–70B, self-hosted
	Frontier      Class = "frontier"       // Sonnet / GPT-5 / Gemini Pro class
	FrontierLarge Class = "frontier-large" // Opus class: the frontier row ×3
	Embedding     Class = "embedding"      // embedding encoders: input only
)

// DefaultRates is energy.md §1.10's table. Embedding encoders are far
// smaller than any chat model; the small-local input rate bounds them from
// above.
var DefaultRates = map[Class]Rates{
	Small:         {InputUJ: 80_000, CachedUJ: 8_000, OutputUJ: 500_000},
	Mid:           {InputUJ: 300_000, CachedUJ: 30_000, OutputUJ: 1_500_000},
	Frontier:      {InputUJ: 500_000, CachedUJ: 50_000, OutputUJ: 3_000_000},
	FrontierLarge: {InputUJ: 1_500_000, CachedUJ: 150_000, OutputUJ: 9_000_000},
	Embedding:     {InputUJ: 80_000, CachedUJ: 8_000, OutputUJ: 0},
}

// DefaultMaxOutput is the output cap assumed for a request that names none,
// by class: the most a call of that class is expected to produce.
var DefaultMaxOutput = map[Class]uint64{
	Small: 4096, Mid: 4096, Frontier: 16384, FrontierLarge: 16384, Embedding: 0,
}

// ClassRule maps model names matching Pattern (a path.Match glob over the
// lower-cased name) to Class.
type ClassRule struct {
	Pattern string `json:"pattern"`
	Class   Class  `json:"class"`
}

// DefaultClassRules are tried in order; the first match wins. A name no rule
// matches is Frontier: a refusing meter errs high.
var DefaultClassRules = []ClassRule{
	{"*embed*", Embedding}, {"*minilm*", Embedding}, {"*bge-*", Embedding},
	{"*opus*", FrontierLarge}, {"gpt-4.5*", FrontierLarge}, {"o1-pro*", FrontierLarge}, {"o3-pro*", FrontierLarge},
	{"claude-*", Frontier}, {"gpt-*", Frontier}, {"o1*", Frontier}, {"o3*", Frontier}, {"o4*", Frontier},
	{"gemini-*", Frontier}, {"grok-*", Frontier}, {"deepseek-r1", Frontier}, {"deepseek-r1:671b*", Frontier},
	{"deepseek-v*", Frontier}, {"mistral-large*", Frontier},
	{"*:30b*", Mid}, {"*:32b*", Mid}, {"*:34b*", Mid}, {"*:40b*", Mid}, {"*:70b*", Mid}, {"*:72b*", Mid},
	{"*-30b*", Mid}, {"*-32b*", Mid}, {"*-34b*", Mid}, {"*-70b*", Mid}, {"*-72b*", Mid}, {"*mixtral*", Mid},
	{"*:0.5b*", Small}, {"*:1b*", Small}, {"*:1.5b*", Small}, {"*:2b*", Small}, {"*:3b*", Small},
	{"*:4b*", Small}, {"*:7b*", Small}, {"*:8b*", Small}, {"*-1b*", Small}, {"*-3b*", Small}, {"*-7b*", Small},
	{"*-8b*", Small}, {"llama3.2*", Small}, {"llama3.1", Small}, {"llama3.1:latest", Small}, {"llama3", Small},
	{"qwen2.5-coder", Small}, {"qwen2.5-coder:latest", Small}, {"qwen3", Small}, {"qwen3:latest", Small},
	{"phi*", Small}, {"gemma*", Small}, {"smollm*", Small}, {"tinyllama*", Small}, {"mistral", Small},
	{"mistral:latest", Small}, {"mistral:7b*", Small},
}

// Calibration is a per-model fit from measured energy (energy.md §1.11).
// A model with a calibration is estimated ModelBased at these rates.
type Calibration struct {
	Model string `json:"model"` // exact model name as the API reports it
	Rates
	ID string `json:"id"` // names the fit: model digest, hardware, engine, date
}

// Table converts usage to energy. The zero Table uses the defaults.
type Table struct {
	Rules        []ClassRule     // tried before DefaultClassRules
	Rates        map[Class]Rates // overrides and additions to DefaultRates
	OutputCaps   map[Class]uint64
	Calibrations []Calibration
}

// Estimate is one figure with its provenance.
type Estimate struct {
	UJ         uint64
	Class      Class
	Provenance core.Provenance // Estimator or ModelBased
	Basis      string          // the class or calibration used, for a receipt's note
}

// ClassOf returns the model's class.
func (t *Table) ClassOf(model string) Class {
	c, _ := t.classFor(model)
	return c
}

// classFor returns the model's class and whether a rule named it; a name
// no rule matches is Frontier.
func (t *Table) classFor(model string) (Class, bool) {
	name := strings.ToLower(strings.TrimSpace(model))
	// A hub name ("Qwen/Qwen3-32B") is also tried without its owner, since
	// a glob's * stops at a slash.
	base := name[strings.LastIndexByte(name, '/')+1:]
	for _, rules := range [][]ClassRule{t.rules(), DefaultClassRules} {
		for _, r := range rules {
			if ok, _ := path.Match(r.Pattern, name); ok {
				return r.Class, true
			}
			if ok, _ := path.Match(r.Pattern, base); ok && base != name {
				return r.Class, true
			}
		}
	}
	return Frontier, false
}

func (t *Table) rules() []ClassRule {
	if t == nil {
		return nil
	}
	return t.Rules
}

// RatesFor returns the rates for model, the provenance they carry and
// what they are based on.
func (t *Table) RatesFor(model string) (Rates, Class, core.Provenance, string) {
	class, known := t.classFor(model)
	if t != nil {
		for _, c := range t.Calibrations {
			if c.Model == model {
				return c.Rates, class, core.ModelBased, "calibration " + c.ID
			}
		}
		if r, ok := t.Rates[class]; ok {
			return r, class, core.Estimator, "class " + string(class) + " (configured)"
		}
	}
	if r, ok := DefaultRates[class]; ok && !known {
		return r, class, core.Estimator, "class " + string(class) + " (the default: no class rule names this model)"
	}
	if r, ok := DefaultRates[class]; ok {
		return r, class, core.Estimator, "class " + string(class)
	}
	return DefaultRates[Frontier], Frontier, core.Estimator, "class frontier (unknown class " + string(class) + ")"
}

// Energy estimates the energy of u on model.
func (t *Table) Energy(model string, u Usage) Estimate {
	r, class, prov, basis := t.RatesFor(model)
	return Estimate{UJ: r.Of(u), Class: class, Provenance: prov, Basis: basis}
}

// MaxOutput is the output cap assumed for model when a request names none.
func (t *Table) MaxOutput(model string) uint64 {
	class := t.ClassOf(model)
	if t != nil {
		if n, ok := t.OutputCaps[class]; ok {
			return n
		}
	}
	if n, ok := DefaultMaxOutput[class]; ok {
		return n
	}
	return DefaultMaxOutput[Frontier]
}

// Validate checks a configured table: known classes have rates, patterns
// parse, calibrations name a model.
func (t *Table) Validate() error {
	for _, r := range t.Rules {
		if _, err := path.Match(r.Pattern, ""); err != nil {
			return fmt.Errorf("class rule %q: %v", r.Pattern, err)
		}
		if _, ok := DefaultRates[r.Class]; !ok {
			if _, ok := t.Rates[r.Class]; !ok {
				return fmt.Errorf("class rule %q names class %q, which has no rates", r.Pattern, r.Class)
			}
		}
	}
	for _, c := range t.Calibrations {
		if c.Model == "" || c.ID == "" {
			return fmt.Errorf("a calibration needs a model and an id")
		}
	}
	return nil
}

// sat adds saturating at the largest uint64.
func sat(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return ^uint64(0)
	}
	return s
}

// mul multiplies saturating at the largest uint64.
func mul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return ^uint64(0)
	}
	return lo
}

// Cap limits uj to the store's largest amount (2^63−1).
func Cap(uj uint64) uint64 { return min(uj, 1<<63-1) }

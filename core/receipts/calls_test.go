package receipts

import (
	"strings"
	"testing"

	"github.com/joulehook/joule/core"
)

// batched is a receipt of three calls whose figures add up.
func batched() *Efficiency {
	calls := []Call{
		{TimeMS: 5, Model: "claude-x", InputTokens: 10, CachedInputTokens: 1, CacheWriteTokens: 2, OutputTokens: 20, EstimatedUJ: 100, Status: StatusComplete, Nonce: strings.Repeat("a1", 16)},
		{TimeMS: 9, Model: "claude-x", InputTokens: 30, OutputTokens: 5, EstimatedUJ: 50, Status: StatusIncomplete, Note: "the client went away", Nonce: strings.Repeat("a2", 16),
			MaxOutputRequested: 128000, MaxOutputFitted: 4096},
		{TimeMS: 7, Model: "claude-x", InputTokens: 1, OutputTokens: 1, EstimatedUJ: 3, Status: StatusComplete, Nonce: strings.Repeat("a3", 16)},
	}
	return &Efficiency{Kind: KindEfficiency, Session: "s", Sequence: 4, TimeMS: 9, Unit: "model-call", Model: "claude-x",
		InputTokens: 41, CachedInputTokens: 1, CacheWriteTokens: 2, OutputTokens: 26, EstimatedUJ: 153, Provenance: core.ModelBased,
		Coverage: CoverageEnforced, Status: StatusIncomplete, Note: "3 calls", Grants: []string{"g"}, Nonce: strings.Repeat("cd", 16),
		Steward: steward, Calls: calls}
}

func TestCallsRoundTrip(t *testing.T) {
	e := batched()
	payload, err := Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Decode(payload)
	if err != nil {
		t.Fatal(err)
	}
	got := a.Efficiency
	if got.CallCount() != 3 || got.FittedCount() != 1 {
		t.Fatalf("CallCount %d, FittedCount %d; want 3, 1", got.CallCount(), got.FittedCount())
	}
	if n := got.Nonces(); len(n) != 4 || n[0] != e.Nonce || n[2] != e.Calls[1].Nonce {
		t.Fatalf("Nonces = %v", n)
	}
	split := got.Split()
	if len(split) != 3 {
		t.Fatalf("Split: %d receipts", len(split))
	}
	var in, out, uj uint64
	for i, one := range split {
		if err := one.Validate(); err != nil {
			t.Errorf("split call %d does not validate: %v", i, err)
		}
		if one.Session != "s" || one.Sequence != 4 || one.Nonce != e.Calls[i].Nonce || one.Calls != nil {
			t.Errorf("split call %d: %+v", i, one)
		}
		in, out, uj = in+one.InputTokens, out+one.OutputTokens, uj+one.EstimatedUJ
	}
	if in != e.InputTokens || out != e.OutputTokens || uj != e.EstimatedUJ {
		t.Errorf("split sums in %d out %d uj %d, want %d %d %d", in, out, uj, e.InputTokens, e.OutputTokens, e.EstimatedUJ)
	}
	if split[1].MaxOutputFitted != 4096 || split[1].Status != StatusIncomplete || split[1].Note != "the client went away" {
		t.Errorf("split call 1 lost its own fields: %+v", split[1])
	}
	// Cover derives the same figures from the calls alone.
	covered := batched()
	covered.Model, covered.InputTokens, covered.OutputTokens, covered.EstimatedUJ, covered.TimeMS, covered.Status = "", 0, 0, 0, 0, ""
	covered.Cover(covered.Calls)
	if want := batched(); covered.Model != want.Model || covered.InputTokens != want.InputTokens || covered.CachedInputTokens != want.CachedInputTokens ||
		covered.OutputTokens != want.OutputTokens || covered.EstimatedUJ != want.EstimatedUJ || covered.TimeMS != want.TimeMS || covered.Status != want.Status {
		t.Errorf("Cover: %+v", covered)
	}
	if err := covered.Validate(); err != nil {
		t.Errorf("Cover made a receipt Validate refuses: %v", err)
	}
	single := efficiency(1, core.ID{})
	if single.CallCount() != 1 || single.FittedCount() != 0 || len(single.Split()) != 1 || len(single.Nonces()) != 1 {
		t.Error("a receipt of one call does not count as one")
	}
}

// TestCallsValidate: a receipt of several calls is refused unless it is
// exactly what its calls add up to.
func TestCallsValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(e *Efficiency)
		want string
	}{
		{"one call", func(e *Efficiency) { e.Calls = e.Calls[:1] }, "1 calls"},
		{"empty list", func(e *Efficiency) { e.Calls = []Call{} }, "0 calls"},
		{"input sum", func(e *Efficiency) { e.InputTokens++ }, "token counts"},
		{"cached sum", func(e *Efficiency) { e.Calls[0].CachedInputTokens++ }, "token counts"},
		{"write sum", func(e *Efficiency) { e.CacheWriteTokens = 0 }, "token counts"},
		{"output sum", func(e *Efficiency) { e.Calls[2].OutputTokens = 0 }, "token counts"},
		{"energy sum", func(e *Efficiency) { e.EstimatedUJ = 1 }, "estimated_uj"},
		{"overflow", func(e *Efficiency) {
			e.Calls[0].EstimatedUJ, e.Calls[1].EstimatedUJ = 1<<63, 1<<63
		}, "overflows"},
		{"complete with an incomplete call", func(e *Efficiency) { e.Status = StatusComplete }, "status"},
		{"incomplete with only complete calls", func(e *Efficiency) { e.Calls[1].Status = StatusComplete }, "status"},
		{"bad call status", func(e *Efficiency) { e.Calls[0].Status = "done" }, "call 0: status"},
		{"time not the last", func(e *Efficiency) { e.TimeMS = 7 }, "time_ms"},
		{"bad call nonce", func(e *Efficiency) { e.Calls[2].Nonce = "x" }, "call 2: nonce"},
		{"repeated nonce", func(e *Efficiency) { e.Calls[2].Nonce = e.Calls[0].Nonce }, "appears twice"},
		{"call nonce is the receipt's", func(e *Efficiency) { e.Calls[0].Nonce = e.Nonce }, "appears twice"},
		{"model differs", func(e *Efficiency) { e.Calls[1].Model = "gpt-x" }, "model"},
		{"fitted cap alone", func(e *Efficiency) { e.Calls[1].MaxOutputRequested = 0 }, "together"},
		{"measured on a batch", func(e *Efficiency) {
			m := uint64(1)
			e.MeasuredUJ, e.Provenance = &m, core.HwShunt
		}, "measured_uj"},
		{"fitted on a batch", func(e *Efficiency) { e.MaxOutputRequested, e.MaxOutputFitted = 2, 1 }, "fitted caps"},
		{"receipt fitted cap alone", func(e *Efficiency) { e.Calls = nil; e.MaxOutputFitted = 3 }, "together"},
	}
	if _, err := Encode(batched()); err != nil {
		t.Fatalf("the valid receipt is refused: %v", err)
	}
	mixed := batched()
	mixed.Model, mixed.Calls[1].Model = "", "gpt-x"
	if _, err := Encode(mixed); err != nil {
		t.Fatalf("calls of several models under no receipt model: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := batched()
			tt.edit(e)
			_, err := Encode(e)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one naming %q", err, tt.want)
			}
		})
	}
}

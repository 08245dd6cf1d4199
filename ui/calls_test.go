package ui

import (
	"strings"
	"testing"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
)

// TestStatsCountCoveredCalls: a receipt covering several calls counts as
// that many model calls, and each fitted one as fitted.
func TestStatsCountCoveredCalls(t *testing.T) {
	nonce := func(c string) string { return strings.Repeat(c, 32) }
	covering := &receipts.Efficiency{Kind: receipts.KindEfficiency, Session: "s", Sequence: 1, TimeMS: 3, Unit: "model-call", Model: "m",
		InputTokens: 3, OutputTokens: 5, EstimatedUJ: 30, Provenance: core.Estimator, Coverage: receipts.CoverageEnforced,
		Status: receipts.StatusComplete, Grants: []string{}, Nonce: nonce("a"), Steward: "x", Calls: []receipts.Call{
			{TimeMS: 1, Model: "m", InputTokens: 1, OutputTokens: 2, EstimatedUJ: 10, Status: receipts.StatusComplete, Nonce: nonce("b"), MaxOutputRequested: 9, MaxOutputFitted: 4},
			{TimeMS: 2, Model: "m", InputTokens: 1, OutputTokens: 2, EstimatedUJ: 10, Status: receipts.StatusComplete, Nonce: nonce("c")},
			{TimeMS: 3, Model: "m", InputTokens: 1, OutputTokens: 1, EstimatedUJ: 10, Status: receipts.StatusComplete, Nonce: nonce("d"), MaxOutputRequested: 9, MaxOutputFitted: 1},
		}}
	if err := covering.Validate(); err != nil {
		t.Fatal(err)
	}
	single := *covering
	single.Calls, single.Sequence, single.MaxOutputRequested, single.MaxOutputFitted = nil, 2, 9, 5
	var st Stats
	for _, e := range []*receipts.Efficiency{covering, &single} {
		row := rowOf(store.StoredEntry{}, receipts.Verdict{Verdict: receipts.VerdictOK, Receipt: &receipts.Any{Efficiency: e}})
		st.add(&row)
	}
	if st.Calls != 4 || st.Fitted != 3 || st.Tokens[0] != 6 || st.TotalUJ != 60 {
		t.Errorf("Stats: %d calls, %d fitted, %d input tokens, %d µJ; want 4, 3, 6, 60", st.Calls, st.Fitted, st.Tokens[0], st.TotalUJ)
	}
	row := rowOf(store.StoredEntry{}, receipts.Verdict{Verdict: receipts.VerdictOK, Receipt: &receipts.Any{Efficiency: covering}})
	if !strings.HasPrefix(row.Summary, "3 × model-call") {
		t.Errorf("summary %q", row.Summary)
	}
}

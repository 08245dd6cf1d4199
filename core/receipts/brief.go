package receipts

import (
	"fmt"
	"strings"
	"time"
)

// Brief is what a one-line listing of receipts says of one receipt.
type Brief struct {
	Kind     string // "decision" or "efficiency"
	Tool     string // a decision's tool, an efficiency receipt's unit
	Decision string // a decision's; empty for an efficiency receipt
	Code     string // a decision's; empty for an efficiency receipt
	EnergyUJ uint64 // a decision's debit, an efficiency receipt's measured energy, else its estimate
	Summary  string
}

// Brief sums the receipt up for a listing. An efficiency receipt decides
// nothing: its status and coverage go in the summary, not in Decision and
// Code. A nil receipt (one that did not verify) has an empty Brief.
func (a *Any) Brief() Brief {
	switch {
	case a == nil:
		return Brief{}
	case a.Decision != nil:
		d := a.Decision
		return Brief{Kind: "decision", Tool: d.Tool, Decision: d.Decision, Code: d.Code, EnergyUJ: d.DebitUJ, Summary: d.Summary}
	case a.Efficiency != nil:
		f := a.Efficiency
		b := Brief{Kind: "efficiency", Tool: f.Unit, EnergyUJ: f.EstimatedUJ}
		if f.MeasuredUJ != nil {
			b.EnergyUJ = *f.MeasuredUJ
		}
		b.Summary = strings.TrimSpace(f.Unit+" "+f.Model) + " (" + f.Status + ", " + f.Coverage + ")"
		if len(f.Calls) > 0 {
			b.Summary = fmt.Sprintf("%d × %s", len(f.Calls), b.Summary)
		}
		return b
	}
	return Brief{}
}

// sinceLayouts are the times ParseSince reads, tried in order, in the
// local time zone unless the time names its own.
var sinceLayouts = []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02"}

// ParseSince reads the lower time bound of a receipt filter: a duration
// back from now (90m, 2h), or a date or time (2026-01-02,
// 2026-01-02T15:04, RFC 3339). The empty string is no bound: the zero
// time.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%s: want a positive duration, e.g. 2h", s)
		}
		return now.Add(-d), nil
	}
	for _, layout := range sinceLayouts {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q: want a duration (90m, 2h) or a time (2026-01-02, 2026-01-02T15:04:05Z)", s)
}

package receipts

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestBrief(t *testing.T) {
	measured := uint64(2_500_000)
	for _, tt := range []struct {
		name string
		in   *Any
		want Brief
	}{
		{"not verified", nil, Brief{}},
		{"decision", &Any{Decision: &Decision{Tool: "Bash", Decision: Deny, Code: "capability", DebitUJ: 7, Summary: "sudo ls"}},
			Brief{Kind: "decision", Tool: "Bash", Decision: Deny, Code: "capability", EnergyUJ: 7, Summary: "sudo ls"}},
		{"efficiency, measured", &Any{Efficiency: &Efficiency{Unit: "model-call", Model: "claude-x", Status: StatusComplete, Coverage: CoverageEnforced, EstimatedUJ: 9, MeasuredUJ: &measured}},
			Brief{Kind: "efficiency", Tool: "model-call", EnergyUJ: measured, Summary: "model-call claude-x (complete, enforced)"}},
		{"efficiency, estimated, no model", &Any{Efficiency: &Efficiency{Unit: "model-call", Status: StatusComplete, Coverage: CoverageEnforced, EstimatedUJ: 9}},
			Brief{Kind: "efficiency", Tool: "model-call", EnergyUJ: 9, Summary: "model-call (complete, enforced)"}},
		{"efficiency of calls", &Any{Efficiency: &Efficiency{Unit: "session", Model: "m", Status: StatusComplete, Coverage: CoverageEnforced, Calls: make([]Call, 3)}},
			Brief{Kind: "efficiency", Tool: "session", Summary: "3 × session m (complete, enforced)"}},
		{"neither", &Any{}, Brief{}},
	} {
		if got := tt.in.Brief(); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		in      string
		want    time.Time
		wantErr string
	}{
		{"", time.Time{}, ""},
		{"2h", now.Add(-2 * time.Hour), ""},
		{"90m", now.Add(-90 * time.Minute), ""},
		{"0s", now, ""},
		{"2026-01-02T15:04:05Z", time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC), ""},
		{"2026-01-02T15:04:05+02:00", time.Date(2026, 1, 2, 13, 4, 5, 0, time.UTC), ""},
		{"2026-01-02T15:04", time.Date(2026, 1, 2, 15, 4, 0, 0, time.Local), ""},
		{"2026-01-02", time.Date(2026, 1, 2, 0, 0, 0, 0, time.Local), ""},
		{"-2h", time.Time{}, "-2h: want a positive duration, e.g. 2h"},
		{"yesterday", time.Time{}, `"yesterday": want a duration (90m, 2h) or a time (2026-01-02, 2026-01-02T15:04:05Z)`},
		{"2026-13-02", time.Time{}, `"2026-13-02": want a duration`},
		{"2h\n", time.Time{}, `"2h\n": want a duration`},
	} {
		got, err := ParseSince(tt.in, now)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)):
			t.Errorf("ParseSince(%q): %v, want an error %q", tt.in, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || !got.Equal(tt.want)):
			t.Errorf("ParseSince(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

// FuzzParseSince: any input is parsed or refused with an error quoting it,
// never a panic; a duration never reaches past now.
func FuzzParseSince(f *testing.F) {
	for _, s := range []string{"", "2h", "90m", "-1s", "1h30m", "2026-01-02", "2026-01-02T15:04", "2026-01-02T15:04:05Z", "2026-01-02T15:04:05.5+05:30", "x", "9999999999h"} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseSince(s, now)
		if err != nil {
			if !got.IsZero() {
				t.Errorf("ParseSince(%q) failed but returned %v", s, got)
			}
			if !strings.HasPrefix(err.Error(), s+": ") && !strings.HasPrefix(err.Error(), strconv.Quote(s)+": ") {
				t.Errorf("ParseSince(%q): the error %q does not name the input", s, err)
			}
			return
		}
		if s == "" {
			if !got.IsZero() {
				t.Errorf("ParseSince(\"\") = %v, want no bound", got)
			}
			return
		}
		if d, derr := time.ParseDuration(s); derr == nil && (d < 0 || got.After(now) || !got.Equal(now.Add(-d))) {
			t.Errorf("ParseSince(%q) = %v with now %v", s, got, now)
		}
	})
}

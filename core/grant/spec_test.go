package grant

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLookupTemplate(t *testing.T) {
	tpl, err := LookupTemplate("dev")
	if err != nil || tpl.TTL != Templates["dev"].TTL || !slices.Equal(tpl.Allow, Templates["dev"].Allow) {
		t.Fatalf("dev: %+v, %v", tpl, err)
	}
	_, err = LookupTemplate("nope")
	if err == nil || err.Error() != `unknown template "nope" (have ci, dev, readonly)` {
		t.Fatalf("unknown: %v", err)
	}
}

func TestParseTiers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"l0,l1,l2", []string{"l0", "l1", "l2"}},
		{" L0 , ,l3,", []string{"l0", "l3"}},
		{",", []string{}},
		{"", []string{}},
		{"l9", []string{"l9"}}, // checked when signed, by Validate
	} {
		got := ParseTiers(tc.in)
		if got == nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseTiers(%q) = %#v, want %#v", tc.in, got, tc.want)
		}
	}
}

func FuzzParseTiers(f *testing.F) {
	for _, s := range []string{"l0,l1,l2", " L0 , ,l3,", ",", "", "l\u00a00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := ParseTiers(s)
		if got == nil {
			t.Fatalf("%q: nil", s)
		}
		for _, v := range got {
			if v == "" || v != strings.ToLower(strings.TrimSpace(v)) || strings.Contains(v, ",") {
				t.Fatalf("%q: item %q is not a folded, trimmed verb", s, v)
			}
		}
		if again := ParseTiers(strings.Join(got, ",")); !slices.Equal(again, got) {
			t.Fatalf("%q: %q reads back as %q", s, got, again)
		}
	})
}

func TestParseBudget(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    uint64
		wantErr error // nil: any error when fail
		fail    bool
	}{
		{in: "30MJ", want: 30_000_000_000_000},
		{in: "50J", want: 50_000_000},
		{in: "0J", fail: true, wantErr: ErrNoBudget},
		{in: "0.0kWh", fail: true, wantErr: ErrNoBudget},
		{in: "50", fail: true},
		{in: "5mj", fail: true},
	} {
		got, err := ParseBudget(tc.in)
		switch {
		case tc.fail && err == nil:
			t.Errorf("ParseBudget(%q) = %d, want an error", tc.in, got)
		case tc.fail && tc.wantErr != nil && !errors.Is(err, tc.wantErr):
			t.Errorf("ParseBudget(%q): %v, want %v", tc.in, err, tc.wantErr)
		case tc.fail && tc.wantErr == nil && errors.Is(err, ErrNoBudget):
			t.Errorf("ParseBudget(%q): %v, want a parse error", tc.in, err)
		case !tc.fail && (err != nil || got != tc.want):
			t.Errorf("ParseBudget(%q) = %d, %v, want %d", tc.in, got, err, tc.want)
		}
	}
}

func FuzzParseBudget(f *testing.F) {
	for _, s := range []string{"30MJ", "0J", "1µJ", "0.5µJ", "9223372036854775807µJ", "-1J"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		uj, err := ParseBudget(s)
		e, eerr := ParseEnergy(s)
		switch {
		case err == nil && (uj == 0 || uj != e || eerr != nil):
			t.Fatalf("%q: budget %d, energy %d (%v)", s, uj, e, eerr)
		case err != nil && eerr == nil && e != 0:
			t.Fatalf("%q: refused (%v) an energy of %d µJ", s, err, e)
		}
	})
}

func TestSpecBuild(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(ws, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	dev := Templates["dev"]
	now := t0
	for _, tc := range []struct {
		name  string
		spec  Spec
		check func(*Grant) string
		field string // a *SpecError on this field
	}{
		{name: "no template: the day's budget and 8h", spec: Spec{Allow: []string{"Read"}},
			check: func(g *Grant) string {
				if g.BudgetUJ != DayBudget || g.NotAfter-g.NotBefore != int64(DefaultTTL/time.Second) || g.Tiers == nil || len(g.Tiers) != 0 {
					return "defaults not applied"
				}
				return ""
			}},
		{name: "template then added rules", spec: Spec{Template: &dev, Allow: []string{"Bash(ls -la)"}, Deny: []string{"Bash(curl:*)"}},
			check: func(g *Grant) string {
				if !slices.Equal(g.Allow, append(slices.Clone(dev.Allow), "Bash(ls -la)")) ||
					!slices.Equal(g.Deny, append(slices.Clone(dev.Deny), "Bash(curl:*)")) ||
					!slices.Equal(g.Tiers, dev.Tiers) || g.BudgetUJ != dev.BudgetUJ || g.NotAfter-g.NotBefore != int64(dev.TTL/time.Second) {
					return "template not applied"
				}
				if len(Templates["dev"].Allow) != len(dev.Allow) {
					return "the template was changed"
				}
				return ""
			}},
		{name: "overrides", spec: Spec{Template: &dev, Tiers: []string{}, BudgetUJ: 5, TTL: time.Hour},
			check: func(g *Grant) string {
				if len(g.Tiers) != 0 || g.BudgetUJ != 5 || g.NotAfter-g.NotBefore != 3600 {
					return "overrides not applied"
				}
				return ""
			}},
		{name: "delegated: budget left to the issuer", spec: Spec{Allow: []string{"Read"}, Delegated: true},
			check: func(g *Grant) string {
				if g.BudgetUJ != 0 {
					return "a delegated grant got a budget of its own"
				}
				return ""
			}},
		{name: "roots resolved", spec: Spec{Allow: []string{"Read"}, Roots: []string{link, ws}, Subject: "s1"},
			check: func(g *Grant) string {
				if !slices.Equal(g.Roots, []string{ws, ws}) || g.Subject != "s1" || g.NotBefore != now.Unix() {
					return "roots, subject or window wrong"
				}
				return ""
			}},
		{name: "negative ttl", spec: Spec{Allow: []string{"Read"}, TTL: -time.Hour}, field: "ttl"},
		{name: "root not a directory", spec: Spec{Allow: []string{"Read"}, Roots: []string{file}}, field: "workspace"},
		{name: "missing root", spec: Spec{Allow: []string{"Read"}, Roots: []string{filepath.Join(ws, "none")}}, field: "workspace"},
		{name: "bad rule", spec: Spec{Allow: []string{"Bash(unclosed"}, Roots: []string{ws}}, field: "rules"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.spec.Roots) == 0 {
				tc.spec.Roots = []string{ws}
			}
			g, err := tc.spec.Build(now)
			if tc.field != "" {
				var se *SpecError
				if !errors.As(err, &se) || se.Field != tc.field {
					t.Fatalf("got %v, want a SpecError on %s", err, tc.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if msg := tc.check(g); msg != "" {
				t.Fatalf("%s: %+v", msg, g)
			}
		})
	}
}

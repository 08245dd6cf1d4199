package main

import (
	"regexp"
	"strings"
	"testing"
)

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"install", "install", 0}, {"intall", "install", 1}, {"recepits", "receipts", 1},
		{"docter", "doctor", 1}, {"ab", "ba", 1}, {"abc", "", 3}, {"grant", "gate", 3}, {"µJ", "mJ", 1},
	} {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
	for word, want := range map[string]string{"intall": "install", "INSTALL": "", "install": "", "xyzzy": "", "rec": "", "recipts": "receipts", "prxy": "proxy", "ui": ""} {
		if got := closest(word, []string{"install", "receipts", "proxy", "init", "ui"}); got != want {
			t.Errorf("closest(%q) = %q, want %q", word, got, want)
		}
	}
}

// TestDidYouMean: a mistyped command, subcommand, flag or host gets the
// one meant, as a command that works when typed; a word near nothing gets
// the list's whereabouts.
func TestDidYouMean(t *testing.T) {
	env, ws := initHome(t)
	meant := regexp.MustCompile(`hint: did you mean '(joule [^']+)'\?|hint: did you mean (--\w+)\?`)
	for _, tt := range []struct {
		args []string
		want string // the command or flag meant
	}{
		{[]string{"intall", "claude-code"}, "joule install"},
		{[]string{"recepits"}, "joule receipts"},
		{[]string{"docter"}, "joule doctor"},
		{[]string{"help", "instal"}, "joule help install"},
		{[]string{"receipts", "lss"}, "joule receipts ls"},
		{[]string{"witness", "stauts"}, "joule witness status"},
		{[]string{"conformance", "chek", "x"}, "joule conformance check"},
		{[]string{"install", "claud-code", "--project"}, "joule install claude-code"},
		{[]string{"install", "claude-code", "--projct"}, "--project"},
		{[]string{"proxy", "--lisen", "127.0.0.1:0"}, "--listen"},
		{[]string{"doctor", "--jsno"}, "--json"},
		{[]string{"xyzzy"}, ""},
	} {
		r := jouleIn(t, ws, nil, env, tt.args...)
		m := meant.FindStringSubmatch(r.stderr)
		switch {
		case r.code != 2:
			t.Errorf("%v: exit %d, want 2: %+v", tt.args, r.code, r)
		case tt.want == "" && (m != nil || !strings.Contains(r.stderr, "joule help")):
			t.Errorf("%v: %q", tt.args, r.stderr)
		case tt.want != "" && (m == nil || m[1]+m[2] != tt.want):
			t.Errorf("%v: %q, want the hint %q", tt.args, r.stderr, tt.want)
		case strings.HasPrefix(tt.want, "joule "):
			// What it means, typed: a command joule takes.
			if h := jouleIn(t, ws, nil, env, append(strings.Fields(tt.want)[1:], "-h")...); h.code != 0 {
				t.Errorf("%s -h: %+v", tt.want, h)
			}
		}
	}
}

// TestACPHelpTierOrder: joule acp -h names the cascade's tiers in the
// order the agent consults them, L0 to L4.
func TestACPHelpTierOrder(t *testing.T) {
	r := joule(t, nil, nil, "acp", "-h")
	at := -1
	for _, tier := range []string{"L0 (", "→ L1 (", "→ L2 (", "→ L3 (", "→ L4 ("} {
		i := strings.Index(r.stdout, tier)
		if i < at {
			t.Fatalf("acp -h does not say %q after the tiers before it:\n%s", tier, r.stdout)
		}
		at = i
	}
}

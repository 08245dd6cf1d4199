package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestGrantIssueUsage: bad values are usage errors (exit 2) with an error
// that names what is wrong, and a grant without --budget gets the documented
// default, never a budget of zero.
func TestGrantIssueUsage(t *testing.T) {
	env, ws := initHome(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--template", "dev", "--budget", "50"}, "unit"},
		{[]string{"--template", "dev", "--budget", "5TJ"}, "unknown unit"},
		{[]string{"--template", "dev", "--budget", "0J"}, "no budget"},
		{[]string{"--template", "dev", "--ttl", "-1h"}, "positive duration"},
		{[]string{"--template", "dev", "--ttl", "0s", "--budget", "x"}, "--budget"},
		{[]string{"--allow", "Bash(go test:*"}, "parenthes"},
		{[]string{"--template", "dev", "--workspace", "/nonexistent/dir"}, "not a directory"},
		{[]string{"--budget", "420kJ", "--use"}, "--template"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := joule(t, nil, env, append([]string{"grant", "issue", "--workspace", ws}, tt.args...)...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("exit %d (want 2), stderr %q (want %q)", r.code, r.stderr, tt.want)
			}
		})
	}
	r := joule(t, nil, env, "grant", "issue", "--workspace", ws, "--allow", "Read")
	if r.code != 0 || !strings.Contains(r.stdout, "budget         30 MJ (30 MJ left)") || !strings.Contains(r.stdout, "valid") {
		t.Fatalf("default budget: %+v", r)
	}
	id := strings.Fields(r.stdout)[1]
	// A child without --budget gets what its parent has left, not zero.
	r = joule(t, nil, env, "grant", "issue", "--workspace", ws, "--allow", "Read", "--parent", id)
	if r.code != 0 || !strings.Contains(r.stdout, "budget         30 MJ") {
		t.Fatalf("child default budget: %+v", r)
	}
	var shown struct {
		Grant struct {
			BudgetUJ uint64 `json:"budget_uj"`
		} `json:"grant"`
	}
	r = joule(t, nil, env, "grant", "show", strings.Fields(r.stdout)[1])
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil || shown.Grant.BudgetUJ == 0 {
		t.Fatalf("show: %v %+v", err, r)
	}
}

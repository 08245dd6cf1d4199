package main

import (
	"strings"
	"testing"
)

// TestGrantWithoutTiersSaysSo: a grant issued with rules but no --tiers
// names no tier verbs, under which joule acp can consult nothing; issuing
// one says so, and issuing one with tiers (or from a template) does not.
func TestGrantWithoutTiersSaysSo(t *testing.T) {
	env, ws := initHome(t)
	r := joule(t, nil, env, "grant", "issue", "--allow", "Read", "--workspace", ws)
	if r.code != 0 || !strings.Contains(r.stderr, "names no tier verbs") || !strings.Contains(r.stderr, "--tiers l0,l1,l2") {
		t.Fatalf("without --tiers: %+v", r)
	}
	for _, args := range [][]string{{"--allow", "Read", "--tiers", "l0,l1"}, {"--template", "dev"}} {
		r = joule(t, nil, env, append([]string{"grant", "issue", "--workspace", ws}, args...)...)
		if r.code != 0 || strings.Contains(r.stderr, "tier verbs") {
			t.Fatalf("%v: %+v", args, r)
		}
	}
	// The command the note suggests works as printed.
	r = joule(t, nil, env, "grant", "issue", "--template", "dev", "--use", "--workspace", ws)
	if r.code != 0 {
		t.Fatalf("the suggested command: %+v", r)
	}
}

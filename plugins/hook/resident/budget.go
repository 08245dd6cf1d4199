package resident

import "time"

// DefaultBudget is how long a hook's answer may take in all, whoever
// answers it (the thin client, or joule hook run by the host itself): below
// the 30 s hook timeout every joule install writes, so that the host reads
// joule's deny, never its own timeout, which most hosts (Claude Code among
// them) treat as allow.
const DefaultBudget = 20 * time.Second

// BudgetEnv overrides DefaultBudget with a shorter duration (tests).
const BudgetEnv = "JOULE_HOOK_TIMEOUT"

// Budget is the answer's budget under getenv: $JOULE_HOOK_TIMEOUT when it
// is a positive duration no longer than DefaultBudget, else DefaultBudget.
// A longer one is ignored: it would outlive the host's own timeout.
func Budget(getenv func(string) string) time.Duration {
	if d, err := time.ParseDuration(getenv(BudgetEnv)); err == nil && d > 0 && d < DefaultBudget {
		return d
	}
	return DefaultBudget
}

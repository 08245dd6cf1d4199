package grant

import "time"

// Template is a named starting point for `joule grant issue --template`.
type Template struct {
	Summary          string
	Allow, Ask, Deny []string
	Tiers            []string
	BudgetUJ         uint64
	TTL              time.Duration
}

// readOnlyCommands are commands that only look.
var readOnlyCommands = []string{
	"Bash(git status:*)", "Bash(git diff:*)", "Bash(git log:*)", "Bash(git show:*)",
	"Bash(git branch)", "Bash(ls:*)", "Bash(pwd)", "Bash(wc:*)", "Bash(head:*)",
	"Bash(tail:*)", "Bash(grep:*)", "Bash(rg:*)", "Bash(which:*)", "Bash(echo:*)", "Bash(printf:*)",
}

// selfHarm is denied by every template: privilege escalation, history
// rewriting on shared branches, and fetching code to run it.
var selfHarm = []string{"Bash(sudo:*)", "Bash(su:*)", "Bash(git push --force:*)", "Bash(git push -f:*)"}

// DayBudget is the budget of the interactive templates, and so of the
// grant joule init issues: a day of frontier-model coding through the
// metering proxy at the default coefficients, with room to spare (the
// arithmetic is in docs/meter.md). The ci template, which runs for two
// hours, gets a third of it.
const DayBudget = 30_000_000_000_000 // 30 MJ

// Templates are the named grants of `joule grant issue --template` and
// `joule init`. Every rule is in the workspace's terms; see docs/grants.md.
var Templates = map[string]Template{
	"readonly": {
		Summary:  "read the workspace and run commands that only look; no writes",
		Allow:    append([]string{"Read", "WebSearch"}, readOnlyCommands...),
		Deny:     append([]string{"Write"}, selfHarm...),
		Tiers:    []string{"l0", "l1", "l2"},
		BudgetUJ: DayBudget,
		TTL:      8 * time.Hour,
	},
	"dev": {
		Summary: "read and write the workspace, build and test; ask before rm, git push and fetches",
		Allow: append([]string{"Read", "Write", "WebSearch", "TodoWrite", "Task",
			"Bash(go:*)", "Bash(gofmt:*)", "Bash(make:*)", "Bash(npm test:*)", "Bash(npm run:*)", "Bash(npx tsc:*)",
			"Bash(cargo build:*)", "Bash(cargo test:*)", "Bash(pytest:*)", "Bash(git add:*)", "Bash(git commit:*)",
			"Bash(git checkout:*)", "Bash(git switch:*)", "Bash(git stash:*)", "Bash(mkdir:*)", "Bash(touch:*)",
			"Bash(cat:*)", "Bash(sort:*)", "Bash(diff:*)", "Bash(sed -n:*)"}, readOnlyCommands...),
		Ask:      []string{"WebFetch", "Bash(rm:*)", "Bash(git push:*)"},
		Deny:     selfHarm,
		Tiers:    []string{"l0", "l1", "l2", "l3", "l4"},
		BudgetUJ: DayBudget,
		TTL:      8 * time.Hour,
	},
	"ci": {
		Summary: "unattended: build and test in the workspace; nothing that needs a human",
		Allow: append([]string{"Read", "Write", "Bash(go:*)", "Bash(gofmt:*)", "Bash(make:*)", "Bash(npm ci)",
			"Bash(npm test:*)", "Bash(cargo test:*)", "Bash(pytest:*)"}, readOnlyCommands...),
		Deny:     append([]string{"WebFetch", "Bash(git push:*)", "Bash(curl:*)", "Bash(wget:*)"}, selfHarm...),
		Tiers:    []string{"l0", "l1", "l2", "l3"},
		BudgetUJ: DayBudget / 3,
		TTL:      2 * time.Hour,
	},
}

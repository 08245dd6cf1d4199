package rule

import (
	"errors"
	"fmt"
	"net/url"
)

// Set is a grant's rules: deny wins over ask, ask over allow, except that
// a rule naming a whole tool ranks below those that name what they match
// (check).
type Set struct {
	Allow, Ask, Deny []Rule
}

// ParseSet parses the three lists of a grant. It reports every bad rule,
// each with its list and index, not only the first.
func ParseSet(allow, ask, deny []string) (Set, error) {
	var s Set
	var errs []error
	parseList := func(name string, texts []string) []Rule {
		rules := make([]Rule, 0, len(texts))
		for i, text := range texts {
			r, err := Parse(text)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s[%d]: %w", name, i, err))
				continue
			}
			rules = append(rules, r)
		}
		return rules
	}
	s.Allow = parseList("allow", allow)
	s.Ask = parseList("ask", ask)
	s.Deny = parseList("deny", deny)
	if len(errs) > 0 {
		return Set{}, errors.Join(errs...)
	}
	return s, nil
}

// Verdict is the outcome of checking an action against a Set: the list that
// decided (Mode) and its first rule that matched. The zero Verdict means no
// rule matched; what that means (usually: ask) is the caller's policy.
type Verdict struct {
	Mode Mode
	Rule Rule
}

// Matched reports whether some rule matched.
func (v Verdict) Matched() bool { return v.Mode != 0 }

// check tries deny rules, then ask and allow rules that name what they
// match, then ask and allow rules that name a whole tool. A whole-tool ask
// rule (`Bash`, `WebFetch`) is the grant's default for that tool: it holds
// what no allow rule grants, and does not hold back `go test` that
// `Bash(go test:*)` allows. A deny rule wins whatever it names.
func (s Set) check(match func(Rule, Mode) bool) Verdict {
	for _, r := range s.Deny {
		if match(r, Deny) {
			return Verdict{Mode: Deny, Rule: r}
		}
	}
	for _, l := range []struct {
		mode  Mode
		rules []Rule
		whole bool
	}{{Ask, s.Ask, false}, {Allow, s.Allow, false}, {Ask, s.Ask, true}, {Allow, s.Allow, true}} {
		for _, r := range l.rules {
			if r.WholeTool() == l.whole && match(r, l.mode) {
				return Verdict{Mode: l.mode, Rule: r}
			}
		}
	}
	return Verdict{}
}

// CheckCommand checks one simple command (see Rule.MatchCommand).
func (s Set) CheckCommand(args []Word) Verdict {
	return s.check(func(r Rule, m Mode) bool { return r.MatchCommand(args, m) })
}

// CheckPath checks a file access (see Rule.MatchPath).
func (s Set) CheckPath(kind Access, abs string, roots Roots) Verdict {
	return s.check(func(r Rule, m Mode) bool { return r.MatchPath(kind, abs, roots, m) })
}

// CheckURL checks a fetch (see Rule.MatchURL).
func (s Set) CheckURL(u *url.URL) Verdict {
	return s.check(func(r Rule, m Mode) bool { return r.MatchURL(u, m) })
}

// CheckTool checks the rules that name a tool as a whole (see
// Rule.MatchTool). A gate checks every call this way and, for Bash, file and
// WebFetch calls, also by their input, and keeps the strictest verdict.
func (s Set) CheckTool(name string) Verdict {
	return s.check(func(r Rule, _ Mode) bool { return r.MatchTool(name) })
}

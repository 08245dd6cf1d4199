package grant

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/joulehook/joule/core/rule"
)

// Chain is a delegation chain, root first, leaf (the grant in use) last.
type Chain []*Signed

// IDs returns the grant ids, root first.
func (c Chain) IDs() []string {
	ids := make([]string, len(c))
	for i, s := range c {
		ids[i] = s.ID.String()
	}
	return ids
}

// Leaf returns the grant in use.
func (c Chain) Leaf() *Signed { return c[len(c)-1] }

// Errors a chain check returns; the gate maps them to decision codes.
var (
	ErrExpired   = errors.New("grant-expired")
	ErrNotYet    = errors.New("grant-not-yet-valid")
	ErrInvalid   = errors.New("grant-invalid")
	ErrWrongUser = errors.New("grant-subject-mismatch")
)

// RenewHint is how every expiry message names the way out.
func RenewHint(id string) string {
	return fmt.Sprintf("renew it with 'joule grant renew %s'", id)
}

// codedError is a chain error whose code (one of the errors above) the
// gate reports beside its text, so the text does not repeat it.
type codedError struct {
	code error
	msg  string
}

func (e *codedError) Error() string { return e.msg }
func (e *codedError) Unwrap() error { return e.code }

// Check verifies that the chain links up (each grant names the one before
// it as parent), that every link is in its window at now and applies to the
// session, and that each child attenuates its parent.
func (c Chain) Check(session string, now time.Time) error {
	if len(c) == 0 {
		return fmt.Errorf("%w: empty chain", ErrInvalid)
	}
	if c[0].Grant.Parent != "" {
		return fmt.Errorf("%w: root grant %s names a parent %s that is not in the chain", ErrInvalid, c[0].ID, c[0].Grant.Parent)
	}
	for i, s := range c {
		g := s.Grant
		if i > 0 {
			if g.Parent != c[i-1].ID.String() {
				return fmt.Errorf("%w: grant %s names parent %q, not %s", ErrInvalid, s.ID, g.Parent, c[i-1].ID)
			}
			if err := Attenuates(c[i-1].Grant, g); err != nil {
				return fmt.Errorf("%w: grant %s does not attenuate its parent: %v", ErrInvalid, s.ID, err)
			}
		}
		if now.Unix() < g.NotBefore {
			return fmt.Errorf("%w: grant %s is valid from %s", ErrNotYet, s.ID, time.Unix(g.NotBefore, 0).UTC().Format(time.RFC3339))
		}
		if now.Unix() >= g.NotAfter {
			return &codedError{ErrExpired, fmt.Sprintf("grant %s expired at %s: %s", s.ID, time.Unix(g.NotAfter, 0).UTC().Format(time.RFC3339), RenewHint(s.ID.String()))}
		}
		if !g.AppliesTo(session) {
			return fmt.Errorf("%w: grant %s is for session %q", ErrWrongUser, s.ID, g.Subject)
		}
	}
	return nil
}

// Attenuates checks that child asks for no more than parent: a window
// inside the parent's, a budget no larger, tier verbs and roots among the
// parent's, every allow and ask rule covered by a parent allow rule, and
// every parent deny rule kept. The budget is checked against the parent's
// whole budget here; against its remainder when issuing, from the ledger.
func Attenuates(parent, child *Grant) error {
	switch {
	case child.NotBefore < parent.NotBefore || child.NotAfter > parent.NotAfter:
		return errors.New("its window leaves the parent's")
	case child.BudgetUJ > parent.BudgetUJ:
		return fmt.Errorf("its budget %s exceeds the parent's %s", FormatEnergy(child.BudgetUJ), FormatEnergy(parent.BudgetUJ))
	case parent.Subject != AnySubject && child.Subject != parent.Subject:
		return fmt.Errorf("its subject %q is not the parent's %q", child.Subject, parent.Subject)
	}
	for _, v := range child.Tiers {
		if !slices.Contains(parent.Tiers, v) {
			return fmt.Errorf("tier verb %s is not in the parent", v)
		}
	}
	for _, r := range child.Roots {
		if !slices.ContainsFunc(parent.Roots, func(p string) bool { return rule.Within(r, p) }) {
			return fmt.Errorf("workspace root %s is outside the parent's", r)
		}
	}
	ps, err := parent.Rules()
	if err != nil {
		return err
	}
	cs, err := child.Rules()
	if err != nil {
		return err
	}
	coveredBy := func(r rule.Rule, lists ...[]rule.Rule) bool {
		for _, l := range lists {
			if slices.ContainsFunc(l, func(p rule.Rule) bool { return covers(p, r) }) {
				return true
			}
		}
		return false
	}
	// An allow needs a parent allow; an ask may narrow a parent allow or ask.
	for _, r := range cs.Allow {
		if !coveredBy(r, ps.Allow) {
			return fmt.Errorf("allow rule %s is not covered by the parent's allow rules", r)
		}
	}
	for _, r := range cs.Ask {
		if !coveredBy(r, ps.Allow, ps.Ask) {
			return fmt.Errorf("ask rule %s is not covered by the parent's allow or ask rules", r)
		}
	}
	for _, d := range ps.Deny {
		if !slices.ContainsFunc(cs.Deny, func(c rule.Rule) bool { return c.String() == d.String() }) {
			return fmt.Errorf("it drops the parent's deny rule %s", d)
		}
	}
	return nil
}

// covers reports, conservatively, whether parent rule p allows everything
// child rule c does. When in doubt it says no: the gate also checks every
// link of a chain at decision time, so a missed cover only refuses a
// delegation, never widens one.
func covers(p, c rule.Rule) bool {
	if p.String() == c.String() {
		return true
	}
	pt, ct := family(p.Tool()), family(c.Tool())
	ps, cs := p.Spec(), c.Spec()
	switch {
	case strings.HasPrefix(p.Tool(), "mcp__"):
		server, _, _ := strings.Cut(strings.TrimPrefix(p.Tool(), "mcp__"), "__")
		pTool := strings.TrimPrefix(p.Tool(), "mcp__"+server)
		return (pTool == "" || pTool == "__*") && strings.HasPrefix(c.Tool(), "mcp__"+server+"__")
	case pt != ct:
		return false
	case ps == "":
		// A bare Bash or WebFetch covers every spec; bare Read and Write
		// cover the workspace only, so only relative patterns.
		if pt == "Read" || pt == "Write" {
			return cs != "" && !strings.HasPrefix(cs, "/") && !strings.HasPrefix(cs, "~")
		}
		return true
	case cs == "":
		return false
	case pt == "Bash":
		prefix, ok := strings.CutSuffix(ps, ":*")
		return ok && (cs == prefix || strings.HasPrefix(cs, prefix+" ") || strings.HasPrefix(cs, prefix+":"))
	case pt == "Read" || pt == "Write":
		if ps == "**" {
			return !strings.HasPrefix(cs, "/") && !strings.HasPrefix(cs, "~")
		}
		dir, ok := strings.CutSuffix(ps, "/**")
		return ok && !strings.ContainsAny(dir, "*?[") && strings.HasPrefix(cs, dir+"/")
	case pt == "WebFetch":
		host, ok := strings.CutPrefix(ps, "domain:*.")
		child := strings.TrimPrefix(strings.TrimPrefix(cs, "domain:"), "*.")
		return ok && strings.HasSuffix(child, "."+host)
	}
	return false
}

// family folds the write tools into one name, as rules do.
func family(tool string) string {
	switch tool {
	case "Write", "Edit", "MultiEdit", "NotebookEdit":
		return "Write"
	}
	return tool
}

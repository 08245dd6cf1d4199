package grant

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/joulehook/joule/core/rule"
)

// DefaultTTL is how long a grant without a template or a TTL of its own is
// valid.
const DefaultTTL = 8 * time.Hour

// ErrNoBudget is ParseBudget's answer to an amount of zero.
var ErrNoBudget = errors.New("a grant with no budget denies every call budget-exceeded")

// ErrNegativeTTL is a validity period below zero.
var ErrNegativeTTL = errors.New("want a positive duration")

// LookupTemplate returns the template called name; an unknown name is an
// error that lists the names there are.
func LookupTemplate(name string) (Template, error) {
	tpl, ok := Templates[name]
	if !ok {
		names := make([]string, 0, len(Templates))
		for n := range Templates {
			names = append(names, n)
		}
		sort.Strings(names)
		return Template{}, fmt.Errorf("unknown template %q (have %s)", name, strings.Join(names, ", "))
	}
	return tpl, nil
}

// ParseTiers reads a comma-separated list of tier verbs such as "l0,l1,l2":
// case is folded and blank items dropped. It never returns nil, so an empty
// list overrides a template's tiers. The verbs are checked when the grant
// is signed (Validate), where an unknown one is named.
func ParseTiers(s string) []string {
	out := []string{}
	for _, t := range strings.Split(s, ",") {
		if t = strings.ToLower(strings.TrimSpace(t)); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// ParseBudget reads a grant budget: an amount of energy (ParseEnergy) above
// zero, since a grant with no budget can allow nothing (ErrNoBudget).
func ParseBudget(s string) (uint64, error) {
	uj, err := ParseEnergy(s)
	if err != nil {
		return 0, err
	}
	if uj == 0 {
		return 0, ErrNoBudget
	}
	return uj, nil
}

// SpecError is a Spec that makes no grant because of a value a person gave
// (as against a failure to read the machine): Field is "ttl", "workspace"
// or "rules", Value what was given for it.
type SpecError struct {
	Field string
	Value string
	Err   error
}

func (e *SpecError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%s: %v", e.Field, e.Err)
	}
	return fmt.Sprintf("%s %s: %v", e.Field, e.Value, e.Err)
}

func (e *SpecError) Unwrap() error { return e.Err }

// Spec is what a person asks of a new grant before it is signed: a
// template to start from, rules added to the template's, and overrides.
// Zero values take the template's, else the documented defaults
// (docs/grants.md).
type Spec struct {
	Template         *Template // nil: none
	Subject          string
	Allow, Ask, Deny []string // added to the template's
	Tiers            []string // nil: the template's; see ParseTiers
	// BudgetUJ zero takes the template's; without a template, DayBudget,
	// or for a delegated grant zero, which the issuer fills with what the
	// parent has left.
	BudgetUJ  uint64
	TTL       time.Duration // zero: the template's, or DefaultTTL
	Delegated bool          // the grant will be issued under a parent
	Roots     []string      // workspace directories; none: the current one
}

// Build makes the unsigned grant s asks for, valid from now. A value s
// cannot use is a *SpecError; reading the file system can fail otherwise.
func (s *Spec) Build(now time.Time) (*Grant, error) {
	g := &Grant{Subject: s.Subject, NotBefore: now.Unix()}
	ttl := s.TTL
	if tpl := s.Template; tpl != nil {
		g.Allow, g.Ask, g.Deny, g.Tiers, g.BudgetUJ = tpl.Allow, tpl.Ask, tpl.Deny, tpl.Tiers, tpl.BudgetUJ
		if ttl == 0 {
			ttl = tpl.TTL
		}
	}
	g.Allow = append(append([]string(nil), g.Allow...), s.Allow...)
	g.Ask = append(append([]string(nil), g.Ask...), s.Ask...)
	g.Deny = append(append([]string(nil), g.Deny...), s.Deny...)
	if s.Tiers != nil {
		g.Tiers = append([]string{}, s.Tiers...)
	}
	if g.Tiers == nil {
		g.Tiers = []string{}
	}
	switch {
	case s.BudgetUJ != 0:
		g.BudgetUJ = s.BudgetUJ
	case s.Template == nil && !s.Delegated:
		g.BudgetUJ = DayBudget
	}
	if s.TTL < 0 {
		return nil, &SpecError{Field: "ttl", Value: s.TTL.String(), Err: ErrNegativeTTL}
	}
	if ttl == 0 {
		ttl = DefaultTTL
	}
	g.NotAfter = now.Add(ttl).Unix()
	roots := s.Roots
	if len(roots) == 0 {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		roots = []string{wd}
	}
	for _, r := range roots {
		res, err := ResolveRoot(r)
		if err != nil {
			return nil, err
		}
		g.Roots = append(g.Roots, res)
	}
	if _, err := rule.ParseSet(g.Allow, g.Ask, g.Deny); err != nil {
		return nil, &SpecError{Field: "rules", Err: err}
	}
	return g, nil
}

// ResolveRoot turns a workspace directory into the absolute path, with
// symbolic links resolved, that a grant names; one that is not a directory
// is a *SpecError.
func ResolveRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	info, err := os.Stat(abs)
	if err != nil || !info.IsDir() {
		return "", &SpecError{Field: "workspace", Value: dir, Err: errors.New("not a directory")}
	}
	return rule.Resolve("/", abs)
}

package grant

import (
	"errors"
	"time"
)

// Renewal is the grant that replaces old when it is renewed: the same
// rules, tiers, roots, subject and parent, a budget of what old has left,
// valid from now for ttl, or for as long as old was valid when ttl is
// zero. The caller signs it and supersedes old (joule grant renew).
func Renewal(old *Grant, remainingUJ uint64, now time.Time, ttl time.Duration) (*Grant, error) {
	if ttl < 0 {
		return nil, ErrNegativeTTL
	}
	if ttl == 0 {
		ttl = time.Duration(old.NotAfter-old.NotBefore) * time.Second
	}
	if remainingUJ == 0 {
		return nil, errors.New("nothing of its budget is left: issue a new grant instead")
	}
	g := *old
	g.Allow = append([]string(nil), old.Allow...)
	g.Ask = append([]string(nil), old.Ask...)
	g.Deny = append([]string(nil), old.Deny...)
	g.Tiers = append([]string{}, old.Tiers...)
	g.Roots = append([]string(nil), old.Roots...)
	g.BudgetUJ = remainingUJ
	g.Nonce = "" // a fresh one when signed
	g.NotBefore = now.Unix()
	g.NotAfter = now.Add(ttl).Unix()
	return &g, nil
}

// Package audit checks a store against what is signed: every fact a gate
// decision relies on (a grant's envelope, its budget and parent columns,
// its spent and reserved figures, the ledger behind them and every open
// reservation) is compared with the signed grant envelopes and the signed
// receipts, and every disagreement is reported, naming the grant and the
// session and sequence of the receipt it concerns. It is what
// `joule store check` and `joule receipts verify` run on top of the
// store's own structural check (store.Verify).
package audit

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
)

// Finding is one fact of the store that disagrees with what is signed.
// Grant, Session and Seq say what it concerns, where they apply (Seq is the
// SEQ of `joule receipts ls`, Index the Merkle log index, -1 for none).
type Finding struct {
	Grant   string
	Session string
	Seq     uint64
	Index   int64
	Problem string
}

func (f Finding) String() string {
	var where []string
	if f.Grant != "" {
		where = append(where, "grant "+f.Grant)
	}
	if f.Session != "" {
		where = append(where, fmt.Sprintf("session %s seq %d", f.Session, f.Seq))
	}
	if len(where) == 0 {
		return f.Problem
	}
	return strings.Join(where, " ") + ": " + f.Problem
}

// position is where a receipt sits, as users see it.
type position struct {
	session string
	seq     uint64
	index   int64
}

// debitKey is one grant's debit by one receipt.
type debitKey struct {
	grant string
	index int64
}

// Check audits st. trust verifies grant envelopes and keys receipt
// envelopes. It returns the findings, none for a store whose every
// decision-relevant fact is backed by a signature; err is for a store it
// could not read at all.
func Check(ctx context.Context, st *store.Store, trust grant.Trust, keys receipts.Keys) ([]Finding, error) {
	a := &auditor{
		signed:   make(map[string]*grant.Signed),
		lastUse:  make(map[string]position),
		expected: make(map[debitKey]uint64),
		at:       make(map[int64]position),
	}
	if err := st.Verify(ctx); err != nil {
		a.add(Finding{Index: -1, Problem: err.Error()})
	}
	grants, err := st.Grants(ctx)
	if err != nil {
		return nil, err
	}
	rows := make(map[string]store.GrantRecord, len(grants))
	for _, g := range grants {
		rows[g.ID] = g
	}
	if err := a.receipts(ctx, st, keys); err != nil {
		return nil, err
	}
	for _, g := range grants {
		a.grant(g, rows, trust)
	}
	for _, id := range slices.Sorted(maps.Keys(a.lastUse)) {
		if _, ok := rows[id]; !ok {
			a.add(a.atUse(id, Finding{Grant: id, Problem: "signed receipts name this grant, but its row is missing from the store"}))
		}
	}
	if err := a.ledger(ctx, st, rows); err != nil {
		return nil, err
	}
	if err := a.reservations(ctx, st, rows); err != nil {
		return nil, err
	}
	return a.findings, nil
}

type auditor struct {
	findings []Finding
	signed   map[string]*grant.Signed // verified envelopes, by grant id
	lastUse  map[string]position      // the last verified receipt naming each grant
	expected map[debitKey]uint64      // debits the verified decision receipts made
	at       map[int64]position       // every entry's position, by log index
	bad      map[int64]bool           // log indexes whose receipt does not verify
}

func (a *auditor) add(f Finding) { a.findings = append(a.findings, f) }

// atUse places a grant's finding at the last receipt that relied on it.
func (a *auditor) atUse(id string, f Finding) Finding {
	if p, ok := a.lastUse[id]; ok {
		f.Session, f.Seq, f.Index = p.session, p.seq, p.index
		f.Problem += " (last relied on by this receipt)"
	} else {
		f.Index = -1
	}
	return f
}

// receipts verifies every receipt and collects the debits the decision
// receipts signed: a decision that is not a deny and debits more than
// zero charged its DebitUJ to every grant it lists.
func (a *auditor) receipts(ctx context.Context, st *store.Store, keys receipts.Keys) error {
	a.bad = make(map[int64]bool)
	last := make(map[string]uint64)
	return st.EachEntry(ctx, func(e store.Entry, damage error) error {
		p := position{e.Session, e.Seq, e.Index}
		a.at[e.Index] = p
		here := Finding{Session: e.Session, Seq: e.Seq, Index: e.Index}
		if prev := last[e.Session]; e.Seq > prev+1 {
			a.add(Finding{Session: e.Session, Seq: prev + 1, Index: -1,
				Problem: fmt.Sprintf("receipts %d to %d of the session are missing (seq %d follows %d)", prev+1, e.Seq-1, e.Seq, prev)})
		}
		last[e.Session] = max(last[e.Session], e.Seq)
		if damage != nil {
			a.bad[e.Index] = true
			here.Problem = "receipt row damaged: " + damage.Error()
			a.add(here)
			return nil
		}
		r, err := keys.Open(e.Envelope)
		if err != nil {
			a.bad[e.Index] = true
			here.Problem = "receipt does not verify: " + err.Error()
			a.add(here)
			return nil
		}
		if r.Session != e.Session || r.Sequence != e.Seq {
			a.bad[e.Index] = true
			here.Problem = fmt.Sprintf("the signed receipt is session %s seq %d, stored at another place", r.Session, r.Sequence)
			a.add(here)
			return nil
		}
		var names []string
		switch {
		case r.Decision != nil:
			names = r.Decision.Grants
			if d := r.Decision; d.Decision != "deny" && d.DebitUJ > 0 {
				for _, g := range d.Grants {
					a.expected[debitKey{g, e.Index}] = d.DebitUJ
				}
			}
		case r.Efficiency != nil:
			names = r.Efficiency.Grants
		}
		for _, g := range names {
			a.lastUse[g] = p
		}
		return nil
	})
}

// grant checks one grant row against its envelope.
func (a *auditor) grant(g store.GrantRecord, rows map[string]store.GrantRecord, trust grant.Trust) {
	fail := func(format string, args ...any) {
		a.add(a.atUse(g.ID, Finding{Grant: g.ID, Problem: fmt.Sprintf(format, args...)}))
	}
	s, err := trust.Open(g.Signed)
	if err != nil {
		fail("its envelope does not verify: %v", err)
		return
	}
	if s.ID.String() != g.ID {
		fail("its envelope is grant %s", s.ID)
		return
	}
	a.signed[g.ID] = s
	if g.BudgetUJ != s.Grant.BudgetUJ {
		fail("budget_uj column says %d µJ, the signed grant %d µJ", g.BudgetUJ, s.Grant.BudgetUJ)
	}
	if g.Parent != s.Grant.Parent {
		fail("parent column says %q, the signed grant %q", g.Parent, s.Grant.Parent)
	}
	if p := s.Grant.Parent; p != "" {
		if _, ok := rows[p]; !ok {
			fail("its signed parent %s is missing from the store", p)
		}
	}
}

// ledger compares every ledger row with the signed receipts: each debit by
// a decision must be one its receipt signed, each signed debit must be in
// the ledger, and each grant's spent_uj must be what its rows add up to.
func (a *auditor) ledger(ctx context.Context, st *store.Store, rows map[string]store.GrantRecord) error {
	all, err := st.AllLedger(ctx)
	if err != nil {
		return err
	}
	sums := make(map[string]uint64)
	seen := make(map[debitKey]bool)
	for _, le := range all {
		sums[le.GrantID] += le.AmountUJ
		f := Finding{Grant: le.GrantID, Index: le.Index}
		if p, ok := a.at[le.Index]; ok {
			f.Session, f.Seq = p.session, p.seq
		}
		if le.TotalUJ != sums[le.GrantID] {
			t := f
			t.Problem = fmt.Sprintf("a ledger row's running total says %d µJ, the grant's rows up to it add up to %d µJ", le.TotalUJ, sums[le.GrantID])
			if le.Index < 0 {
				t.Problem += fmt.Sprintf(" (a charge settled from reservation %d)", le.Reservation)
			}
			a.add(t)
			sums[le.GrantID] = le.TotalUJ // report each break once
		}
		if le.Index < 0 {
			continue // a metered charge, settled from a reservation
		}
		k := debitKey{le.GrantID, le.Index}
		want, signed := a.expected[k]
		switch {
		case seen[k]:
			f.Problem = fmt.Sprintf("the ledger debits this receipt twice (%d µJ again)", le.AmountUJ)
		case a.bad[le.Index]:
			f.Problem = fmt.Sprintf("the ledger debits %d µJ for a receipt that does not verify", le.AmountUJ)
		case !signed:
			f.Problem = fmt.Sprintf("the ledger debits %d µJ that no signed receipt debited", le.AmountUJ)
		case want != le.AmountUJ:
			f.Problem = fmt.Sprintf("the ledger debits %d µJ, the signed receipt %d µJ", le.AmountUJ, want)
		}
		seen[k] = true
		if f.Problem != "" {
			a.add(f)
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(a.expected), func(x, y debitKey) int {
		return cmp.Or(cmp.Compare(x.index, y.index), strings.Compare(x.grant, y.grant))
	}) {
		if !seen[k] {
			p := a.at[k.index]
			a.add(Finding{Grant: k.grant, Session: p.session, Seq: p.seq, Index: k.index,
				Problem: fmt.Sprintf("the signed receipt debited %d µJ, which the ledger does not hold", a.expected[k])})
		}
	}
	for _, id := range slices.Sorted(maps.Keys(rows)) {
		if g := rows[id]; g.SpentUJ != sums[id] {
			a.add(a.atUse(id, Finding{Grant: id, Problem: fmt.Sprintf("spent_uj says %d µJ, its ledger adds up to %d µJ", g.SpentUJ, sums[id])}))
		}
	}
	return nil
}

// reservations checks every open reservation against the grants it holds:
// each must be in the store with a verified envelope, and no reservation
// can hold more than a grant's signed budget (Reserve never made one).
func (a *auditor) reservations(ctx context.Context, st *store.Store, rows map[string]store.GrantRecord) error {
	rs, err := st.Reservations(ctx)
	if err != nil {
		return err
	}
	held := make(map[string]uint64)
	for _, r := range rs {
		if len(r.Grants) == 0 {
			a.add(Finding{Index: -1, Problem: fmt.Sprintf("reservation %d holds no grant", r.ID)})
		}
		for _, id := range r.Grants {
			held[id] += r.AmountUJ
			s, ok := a.signed[id]
			switch {
			case !ok:
				if _, row := rows[id]; !row {
					a.add(Finding{Grant: id, Index: -1, Problem: fmt.Sprintf("reservation %d holds this grant, whose row is missing", r.ID)})
				}
				// A row whose envelope fails is reported already.
			case r.AmountUJ > s.Grant.BudgetUJ:
				a.add(a.atUse(id, Finding{Grant: id, Problem: fmt.Sprintf("reservation %d holds %d µJ, more than the signed budget of %d µJ", r.ID, r.AmountUJ, s.Grant.BudgetUJ)}))
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(rows)) {
		if g := rows[id]; g.ReservedUJ != held[id] {
			a.add(a.atUse(id, Finding{Grant: id, Problem: fmt.Sprintf("reserved_uj says %d µJ, its open reservations hold %d µJ", g.ReservedUJ, held[id])}))
		}
	}
	return nil
}

// Err is a non-nil error summarizing findings, or nil when there are none.
func Err(findings []Finding) error {
	if len(findings) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d findings, the first: %s", store.ErrCorrupt, len(findings), findings[0])
}

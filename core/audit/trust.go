package audit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/core/trust"
)

// Trust checks the store's grants against the signed trust chain
// (core/trust): the chain must verify with the trusted issuers' keys,
// every grant row must have its issue receipt, every revoked flag must be
// what the chain says, and every grant the chain makes active must be in
// the store. With files, the home's own chain must verify with its key and
// sign the issuers file and config.json as they are. Each finding names
// the grant or the chain, and the receipt it concerns.
func Trust(ctx context.Context, st *store.Store, tr grant.Trust, files *trust.Files) ([]Finding, error) {
	var out []Finding
	sessions := []string{trust.GrantsSession}
	if files != nil {
		sessions = append(sessions, files.Home)
	}
	heads, err := st.SessionHeads(ctx, sessions...)
	if err != nil {
		return nil, err
	}
	chain := func(session string) trust.Chain {
		c := trust.Chain{Session: session}
		if h, ok := heads[session]; ok {
			c.Head = &h
		}
		return c
	}
	chainFinding := func(err error) Finding {
		var te *trust.Error
		if errors.As(err, &te) {
			return Finding{Session: te.Session, Seq: te.Seq, Index: -1, Problem: err.Error()}
		}
		return Finding{Index: -1, Problem: err.Error()}
	}
	if files != nil {
		own, err := receipts.NewKeys(map[string]core.PublicKey{files.Steward: files.Key})
		if err != nil {
			return nil, err
		}
		home, err := trust.LoadHome(ctx, st, own, chain(files.Home))
		if err == nil {
			err = home.Check(*files)
		}
		if err != nil {
			out = append(out, chainFinding(err))
		}
	}
	keys, err := receipts.NewKeys(tr)
	if err != nil {
		return nil, err
	}
	ts, err := trust.LoadGrants(ctx, st, keys, chain(trust.GrantsSession))
	if err != nil {
		return append(out, chainFinding(err)), nil
	}
	recs, err := st.Grants(ctx)
	if err != nil {
		return nil, err
	}
	rows := make(map[string]store.GrantRecord, len(recs))
	at := func(seq uint64) (string, uint64) {
		if seq == 0 {
			return "", 0
		}
		return trust.GrantsSession, seq
	}
	for _, g := range recs {
		rows[g.ID] = g
		f := Finding{Grant: g.ID, Index: -1}
		switch {
		case !ts.Issued(g.ID):
			f.Problem = fmt.Sprintf("the trust chain (session %s) records no issue of this grant: its row was written without 'joule grant issue' ('joule grant adopt %s' records it, if it is yours)", trust.GrantsSession, g.ID)
		case g.Revoked && !ts.Revoked(g.ID):
			f.Session, f.Seq = at(ts.IssuedAt(g.ID))
			f.Problem = "its row says revoked, but the trust chain records no revocation of it"
		case !g.Revoked && ts.Revoked(g.ID):
			f.Session, f.Seq = at(ts.RevokedAt(g.ID))
			f.Problem = "the trust chain revoked it, but its row's revoked flag was set back (the gate reads the chain: it stays revoked)"
		}
		if f.Problem != "" {
			out = append(out, f)
		}
	}
	active := map[string]bool{}
	if id := ts.Default(); id != "" {
		active[id] = true
	}
	for _, s := range ts.Sessions() {
		active[ts.Active(s)] = true
	}
	for _, root := range ts.Workspaces() {
		active[ts.WorkspaceGrant(root)] = true
	}
	for _, id := range slices.Sorted(maps.Keys(active)) {
		if _, ok := rows[id]; !ok {
			out = append(out, Finding{Grant: id, Index: -1, Problem: "the trust chain makes this grant active, but its row is missing from the store"})
		}
	}
	// The settings that named the active grant before the chain did:
	// nothing reads them, so one that disagrees was written by hand.
	legacy, err := st.SettingsUnder(ctx, trust.LegacyActiveSetting)
	if err != nil {
		return nil, err
	}
	for _, key := range slices.Sorted(maps.Keys(legacy)) {
		session, scoped := strings.CutPrefix(key, trust.LegacyActiveSetting+":")
		signed := ts.Default()
		if scoped {
			signed = ts.Active(session)
		}
		if v := legacy[key]; v != signed {
			out = append(out, Finding{Grant: v, Index: -1, Problem: fmt.Sprintf("the setting %s names this grant, but the trust chain makes %q active there; the gate reads the chain, and only an edit by hand writes that setting", key, signed)})
		}
	}
	return out, nil
}

package gate

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/core/store/pgtest"
	"github.com/joulehook/joule/core/trust"
)

// teamMachine is one machine of a team: its own key, and a gate that
// trusts the administrator's and its own key for receipts but takes grants
// and the grants' trust chain from the administrator alone (Admins).
type teamMachine struct {
	gate   *Gate
	issuer *grant.Issuer
}

func newTeamMachine(t *testing.T, dir, name string, st *store.Store) (*teamMachine, *identity.Identity) {
	t.Helper()
	home := filepath.Join(dir, name)
	id, err := identity.Create(home, name+".test", false)
	if err != nil {
		t.Fatal(err)
	}
	is, err := grant.NewIssuer(id.Steward, id.Key)
	if err != nil {
		t.Fatal(err)
	}
	sealer, _ := id.Sealer()
	return &teamMachine{gate: &Gate{Store: st, Sealer: sealer, Trust: grant.Trust{id.Steward: id.Public()}, JouleHome: home}, issuer: is}, id
}

// team makes an administrator's and a member's machine over the stores
// given, each trusting both keys, with the administrator's as the team's.
func team(t *testing.T, adminStore, memberStore *store.Store) (admin, member *teamMachine) {
	t.Helper()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	admin, aid := newTeamMachine(t, dir, "admin", adminStore)
	member, mid := newTeamMachine(t, dir, "member", memberStore)
	admins := grant.Trust{aid.Steward: aid.Public()}
	for _, m := range []*teamMachine{admin, member} {
		m.gate.Trust[aid.Steward] = aid.Public()
		m.gate.Trust[mid.Steward] = mid.Public()
		m.gate.Admins = admins
	}
	return admin, member
}

// TestTeamMemberCannotCheatGate: a team on PostgreSQL set up with
// store.SetupTeam, the administrator's machine connecting as a joule_admins
// role and a member's as a joule_members role. The member tries each
// attack of #34 on the trust state through joule itself (its own gate, its
// own key): each is refused, and neither machine's decision changes.
func TestTeamMemberCannotCheatGate(t *testing.T) {
	bin := pgtest.Require(t)
	srv, err := pgtest.Start(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	loc, err := srv.NewDatabase("gate_team")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(loc)
	db := strings.TrimPrefix(u.Path, "/")
	for _, stmt := range []string{store.TeamRolesSQL,
		`CREATE ROLE alice LOGIN PASSWORD 'alice-pw' IN ROLE joule_admins`,
		`CREATE ROLE bob LOGIN PASSWORD 'bob-pw' IN ROLE joule_members`} {
		if err := srv.Exec(ctx, "postgres", stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	open := func(loc string) *store.Store {
		st, err := store.Open(loc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	if err := open(loc).SetupTeam(ctx); err != nil {
		t.Fatal(err)
	}
	admin, member := team(t, open(srv.URLAs(db, "alice", "alice-pw")), open(srv.URLAs(db, "bob", "bob-pw")))
	ws := filepath.Join(admin.gate.JouleHome, "..", "ws")
	os.MkdirAll(ws, 0o755)

	teamGrant, err := admin.gate.Issue(ctx, admin.issuer, newGrant(ws, 1_000_000, time.Hour), "", true)
	if err != nil {
		t.Fatalf("the administrator issues: %v", err)
	}
	revoked, err := admin.gate.Issue(ctx, admin.issuer, newGrant(ws, 5_000_000, time.Hour), "", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.gate.Revoke(ctx, revoked.ID.String()); err != nil {
		t.Fatal(err)
	}
	spare, err := admin.gate.Issue(ctx, admin.issuer, newGrant(ws, 9_000_000, time.Hour), "", false)
	if err != nil {
		t.Fatal(err)
	}
	event := func(session string) []byte {
		return []byte(fmt.Sprintf(`{"session_id":%q,"tool":"Bash","input":{"command":"go test ./..."},"cwd":%q}`, session, ws))
	}
	// What every machine decides, and the trust state it decides from.
	decisions := func() string {
		var b strings.Builder
		for _, m := range []*teamMachine{admin, member} {
			name := filepath.Base(m.gate.JouleHome)
			r := m.gate.DecideJSON(ctx, event(name+"-session"))
			ts, err := m.gate.TrustState(ctx)
			if err != nil {
				t.Fatalf("%s's trust state: %v", name, err)
			}
			fmt.Fprintf(&b, "%s: %s %s active %s revoked %v; ", name, r.Decision, r.Code, ts.Active(""), ts.Revoked(revoked.ID.String()))
		}
		return b.String()
	}
	want := decisions()
	if !strings.Contains(want, "admin: allow") || !strings.Contains(want, "member: allow") || !strings.Contains(want, "active "+teamGrant.ID.String()) {
		t.Fatalf("before the attacks: %s", want)
	}

	forged := newGrant(ws, 1_000_000_000_000_000, 24*time.Hour) // 1 GJ
	forgedSigned, err := member.issuer.Sign(forged)
	if err != nil {
		t.Fatal(err)
	}
	attacks := []struct {
		name string
		do   func() error
	}{
		{"1 GJ grant issued with the member's key and made active", func() error {
			_, err := member.gate.Issue(ctx, member.issuer, newGrant(ws, 1_000_000_000_000_000, 24*time.Hour), "", true)
			return err
		}},
		{"that grant adopted", func() error { return member.gate.Adopt(ctx, forgedSigned, "mine", true) }},
		{"the team's active grant switched to a revoked one", func() error { return member.gate.Use(ctx, revoked.ID.String(), "") }},
		{"the team's active grant switched to a larger one", func() error { return member.gate.Use(ctx, spare.ID.String(), "") }},
		{"a larger grant made active for the member's session", func() error { return member.gate.Use(ctx, spare.ID.String(), "member-session") }},
		{"an activation sealed into the trust chain", func() error {
			_, err := member.gate.SealRecord(ctx, Record{Session: trust.GrantsSession, Tool: "joule grant use", Code: trust.CodeActivated,
				Summary: trust.ActivatedSummary(revoked.ID.String(), ""), Grants: []string{revoked.ID.String()}})
			return err
		}},
		{"the team's grant revoked", func() error { return member.gate.Revoke(ctx, teamGrant.ID.String()) }},
		{"the active grant setting switched", func() error {
			return member.gate.Store.SetSetting(ctx, trust.LegacyActiveSetting, revoked.ID.String())
		}},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			err := a.do()
			t.Logf("refused: %v", err)
			if err == nil {
				t.Error("the member's attack succeeded")
			}
			if got := decisions(); got != want {
				t.Errorf("decisions changed:\nbefore %s\nafter  %s", want, got)
			}
		})
	}
	if err := member.gate.Store.Verify(ctx); err != nil {
		t.Errorf("store check after the attacks: %v", err)
	}
}

// TestTeamAdminsSignTheChain: without the database's roles (a SQLite
// store both machines write, as a member with the database owner's
// password could), a grant the member signed with its own key and
// recorded as issued and active in the trust chain is refused by every
// machine, its own included (trust-corrupt): the chain must be the
// administrators'. The same receipts on a gate without team
// administrators are allowed, which is what Admins closes.
func TestTeamAdminsSignTheChain(t *testing.T) {
	ctx := context.Background()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	st, err := store.Open(filepath.Join(dir, "team.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	admin, member := team(t, st, st)
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	if _, err := admin.gate.Issue(ctx, admin.issuer, newGrant(ws, 1_000_000, time.Hour), "", true); err != nil {
		t.Fatal(err)
	}
	event := []byte(fmt.Sprintf(`{"session_id":"s","tool":"Bash","input":{"command":"go test ./..."},"cwd":%q}`, ws))
	if r := member.gate.DecideJSON(ctx, event); r.Decision != Allow {
		t.Fatalf("the member's machine under the administrator's grant: %+v", r)
	}
	// The member, with the admins check off on its own gate, issues a 1 GJ
	// grant with its key and makes it active for the team.
	rogue := &Gate{Store: st, Sealer: member.gate.Sealer, Trust: member.gate.Trust, JouleHome: member.gate.JouleHome}
	if _, err := rogue.Issue(ctx, member.issuer, newGrant(ws, 1_000_000_000_000_000, 24*time.Hour), "", true); err != nil {
		t.Fatal(err)
	}
	if r := rogue.DecideJSON(ctx, event); r.Decision != Allow {
		t.Fatalf("control: a gate without team administrators takes the member's grant: %+v", r)
	}
	for name, g := range map[string]*Gate{"admin": admin.gate, "member": member.gate} {
		r := g.DecideJSON(ctx, event)
		if r.Decision != Deny || r.Code != CodeTrustCorrupt || !strings.Contains(r.Reason, "member.test") {
			t.Errorf("%s's machine after the member's grant: %+v, want %s naming the member's key", name, r, CodeTrustCorrupt)
		}
	}
}

// TestTeamWitnessRefusesRollback: a gate whose team witness check finds
// the store behind another machine's cosigned log denies, store-rolled-back
// and unsealed, however this machine's own witness stands; the check is
// asked once a second, and a failure to reach the witnesses is not a
// rollback.
func TestTeamWitnessRefusesRollback(t *testing.T) {
	ctx := context.Background()
	g, is, ws := trustGate(t)
	if _, err := g.Issue(ctx, is, newGrant(ws, 1_000_000, time.Hour), "", true); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	g.Now = func() time.Time { return now }
	calls := 0
	var answer error
	g.TeamWitness = func(context.Context) error { calls++; return answer }
	event := []byte(fmt.Sprintf(`{"session_id":"s","tool":"Bash","input":{"command":"go test ./..."},"cwd":%q}`, ws))
	if r := g.DecideJSON(ctx, event); r.Decision != Allow || calls != 1 {
		t.Fatalf("the team's logs extended: %+v after %d checks", r, calls)
	}
	answer = fmt.Errorf("witness w: the team's logs: %w", store.ErrRolledBack)
	if r := g.DecideJSON(ctx, event); r.Decision != Allow || calls != 1 {
		t.Fatalf("within the second, the answer stands: %+v after %d checks", r, calls)
	}
	now = now.Add(2 * time.Second)
	r := g.DecideJSON(ctx, event)
	if r.Decision != Deny || r.Code != CodeRolledBack || r.Receipt != "" || !strings.Contains(r.Reason, "the team's logs") || calls != 2 {
		t.Fatalf("another machine's cosigned log not extended: %+v after %d checks", r, calls)
	}
	now = now.Add(2 * time.Second)
	answer = fmt.Errorf("witness w: connection refused")
	if r := g.DecideJSON(ctx, event); r.Decision != Allow {
		t.Fatalf("the witness unreachable (no quorum asked of it here): %+v", r)
	}
}

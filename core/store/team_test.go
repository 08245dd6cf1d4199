package store

import (
	"context"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

var teamRolesOnce sync.Once

// ensureTeamRoles creates the team's group roles on the test server once.
func ensureTeamRoles(tb testing.TB) {
	tb.Helper()
	var err error
	teamRolesOnce.Do(func() {
		err = pgServer.Exec(context.Background(), "postgres", TeamRolesSQL)
		if err != nil && strings.Contains(err.Error(), "already exists") {
			err = nil
		}
	})
	if err != nil {
		tb.Fatalf("%s: %v", TeamRolesSQL, err)
	}
}

// teamStore sets up a fresh PostgreSQL database for a team (SetupTeam, as
// its owner) and opens it as the owner, as an administrator's role and as
// a member's role. It returns the database's name too.
func teamStore(t *testing.T) (owner, admin, member *Store, db string) {
	t.Helper()
	loc := freshPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ensureTeamRoles(t)
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	db = strings.TrimPrefix(u.Path, "/")
	owner = backends[1].openAt(t, loc)
	if err := owner.SetupTeam(ctx); err != nil {
		t.Fatal(err)
	}
	if err := owner.SetupTeam(ctx); err != nil {
		t.Fatalf("SetupTeam again (an upgrade): %v", err)
	}
	for _, stmt := range []string{
		fmt.Sprintf(`CREATE ROLE %s_admin LOGIN PASSWORD 'admin-pw' IN ROLE joule_admins`, db),
		fmt.Sprintf(`CREATE ROLE %s_member LOGIN PASSWORD 'member-pw' IN ROLE joule_members`, db),
	} {
		if err := pgServer.Exec(ctx, "postgres", stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	admin = backends[1].openAt(t, pgServer.URLAs(db, db+"_admin", "admin-pw"))
	member = backends[1].openAt(t, pgServer.URLAs(db, db+"_member", "member-pw"))
	return owner, admin, member, db
}

// tableDigest is a digest of every row of every table of the store, read
// as the owner: what an attack must leave as it was.
func tableDigest(t *testing.T, s *Store) string {
	t.Helper()
	var b strings.Builder
	for _, table := range []string{"grants", "settings", "sessions", "entries", "tlog_hashes", "reservations", "reservation_grants", "ledger", "checkpoints", "log_head", "joule_schema"} {
		var d string
		q := fmt.Sprintf(`SELECT COALESCE(md5(string_agg(t::text, ',' ORDER BY t::text)), '') FROM %s t`, table)
		if err := s.db.QueryRow(q).Scan(&d); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		fmt.Fprintf(&b, "%s=%s ", table, d)
	}
	return b.String()
}

// TestTeamSetupAllowsWork: under the team's roles, everything joule does
// every day still works as a member (sealing with a debit, a proxy's
// lease reserved, drawn and settled) and as an administrator (issuing,
// revoking, sealing into the trust chain), and the store verifies.
func TestTeamSetupAllowsWork(t *testing.T) {
	owner, admin, member, _ := teamStore(t)
	ctx := context.Background()
	teamHistory(t, admin, member)
	id, err := member.Reserve(ctx, []string{"team"}, 50)
	if err != nil {
		t.Fatalf("member reserve: %v", err)
	}
	if _, err := member.Seal(ctx, SealRequest{Session: "bob", Draw: &Draw{Reservation: id, ReleaseUJ: 10, ChargeUJ: 10}, Build: allowBuild("drawn")}); err != nil {
		t.Fatalf("member draw: %v", err)
	}
	if err := member.Settle(ctx, id, 5); err != nil {
		t.Fatalf("member settle: %v", err)
	}
	// Concurrent decisions, committed in groups (several in one
	// transaction, some of one session): the checks at commit take them.
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := member.Seal(ctx, SealRequest{Session: fmt.Sprintf("c%d", i%4), Debit: []string{"team"}, AmountUJ: 1, Build: allowBuild("concurrent")})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent seal as a member: %v", err)
		}
	}
	for range 6 { // checkpoints of trees of several shapes
		if _, err := member.Checkpoint(ctx, "joule receipts log member.test", testSigner(t)); err != nil {
			t.Fatalf("member checkpoint: %v", err)
		}
		seal(t, member, "bob", nil, 0, "between checkpoints")
	}
	if err := member.SetSetting(ctx, "otlp:state", "x"); err != nil {
		t.Fatalf("member setting: %v", err)
	}
	if err := member.SetSetting(ctx, "otlp:state", "y"); err != nil {
		t.Fatalf("member setting update: %v", err)
	}
	for name, s := range map[string]*Store{"owner": owner, "admin": admin, "member": member} {
		if err := s.Verify(ctx); err != nil {
			t.Errorf("Verify as %s: %v", name, err)
		}
	}
	g, err := owner.Grant(ctx, "team")
	if err != nil || g.SpentUJ != 10+32+10+5 || g.ReservedUJ != 0 {
		t.Errorf("team grant %+v %v: want spent 57, nothing reserved", g, err)
	}
}

// teamHistory is a team's store as an administrator and a member leave
// it: the administrator issued grants "team" and "revoked" (each with its
// receipt in the trust chain), revoked "revoked" (a receipt) and made
// "team" the active grant; the member sealed a decision that debited 10 µJ.
func teamHistory(t *testing.T, admin, member *Store) {
	t.Helper()
	ctx := context.Background()
	putGrant(t, admin, "team", "", 1000)
	putGrant(t, admin, "revoked", "", 1000)
	for _, tag := range []string{"issued team", "issued revoked", "revoked revoked", "active team"} {
		if _, err := admin.Seal(ctx, SealRequest{Session: "joule-grants", System: true, Build: allowBuild(tag)}); err != nil {
			t.Fatalf("admin seals %s: %v", tag, err)
		}
	}
	if err := admin.Revoke(ctx, "revoked"); err != nil {
		t.Fatalf("admin revokes: %v", err)
	}
	if err := admin.SetSetting(ctx, "active_grant", "team"); err != nil {
		t.Fatalf("admin sets the active grant: %v", err)
	}
	seal(t, member, "bob", []string{"team"}, 10, "work")
}

// TestTeamMemberCannotCheat runs, as a team member's PostgreSQL role,
// each attack of #34 on a team's trust state and log, by SQL and through
// the store's own API: every one is refused by PostgreSQL and changes no
// row, so no machine's decision can change; the store still verifies and
// the member can still work.
func TestTeamMemberCannotCheat(t *testing.T) {
	owner, admin, member, db := teamStore(t)
	ctx := context.Background()
	teamHistory(t, admin, member)
	dump := filepath.Join(t.TempDir(), "old.dump")
	ownerURL := pgServer.URL(db)
	if out, err := exec.Command(pgServer.Tool("pg_dump"), "--format=custom", "--file="+dump, "--dbname="+ownerURL).CombinedOutput(); err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, out)
	}
	seal(t, member, "bob", []string{"team"}, 10, "after the dump")
	if _, err := admin.Seal(ctx, SealRequest{Session: "joule-grants", System: true, Build: allowBuild("after the dump")}); err != nil {
		t.Fatal(err)
	}
	size := int64(0)
	if err := owner.db.QueryRow(`SELECT count(*) FROM entries`).Scan(&size); err != nil {
		t.Fatal(err)
	}
	zero := `'\x` + strings.Repeat("00", 32) + `'`
	other := `'\x` + strings.Repeat("11", 32) + `'`
	attacks := []struct{ name, sql, want string }{
		// un-revoke a grant
		{"revoked flag set back", `UPDATE grants SET revoked = 0 WHERE id = 'revoked'`, "permission denied for table grants"},
		{"revocation receipt deleted", `DELETE FROM entries WHERE session = 'joule-grants' AND seq = 3`, "permission denied for table entries"},
		{"trust chain's head set back", `UPDATE sessions SET last_seq = 2 WHERE id = 'joule-grants'`, ""},
		{"revocation receipt rewritten", `UPDATE entries SET envelope = 'x' WHERE session = 'joule-grants' AND seq = 3`, "permission denied for table entries"},
		// switch the team's active grant
		{"active grant setting switched", `UPDATE settings SET value = 'revoked' WHERE key = 'active_grant'`, ""},
		{"active grant set for a session", `INSERT INTO settings (key, value) VALUES ('active_grant:bob', 'revoked')`, "row-level security policy for table \"settings\""},
		{"activation appended to the trust chain", fmt.Sprintf(`INSERT INTO entries (idx, session, seq, prev, hash, envelope, created_ns)
			SELECT %d, 'joule-grants', last_seq + 1, head, %s, 'active revoked', 0 FROM sessions WHERE id = 'joule-grants'`, size, other), "row-level security policy for table \"entries\""},
		// a 1 GJ grant signed with the member's own key, made team-active
		{"own grant inserted", `INSERT INTO grants (id, signed, budget_uj, created_ns) VALUES ('forged', '\x01', 1000000000000000, 0)`, "permission denied for table grants"},
		{"budget raised", `UPDATE grants SET budget_uj = 1000000000000000 WHERE id = 'team'`, "permission denied for table grants"},
		{"envelope swapped", `UPDATE grants SET signed = '\x01' WHERE id = 'team'`, "permission denied for table grants"},
		{"parent changed", `UPDATE grants SET parent = 'revoked' WHERE id = 'team'`, "permission denied for table grants"},
		{"trust chain session created anew", `INSERT INTO sessions (id, last_seq, head, first_ns, last_ns) VALUES ('joule-store', 1, ` + other + `, 0, 0)`, "row-level security policy for table \"sessions\""},
		// spent figures
		{"spent lowered", `UPDATE grants SET spent_uj = 0 WHERE id = 'team'`, "caches spent 0 reserved 0"},
		{"reserved raised", `UPDATE grants SET reserved_uj = 7 WHERE id = 'team'`, "reserved 7, its ledger"},
		{"ledger row with a wrong total", fmt.Sprintf(`INSERT INTO ledger (grant_id, amount_uj, total_uj, entry, created_ns) VALUES ('team', 0, 0, %d, 0)`, size-1), "ledger total 0 of grant team"},
		{"ledger deleted", `DELETE FROM ledger`, "permission denied for table ledger"},
		{"ledger total lowered", `UPDATE ledger SET total_uj = 0`, "permission denied for table ledger"},
		// truncate the log, or take its tail
		{"log truncated", `TRUNCATE entries, sessions, tlog_hashes, ledger, checkpoints CASCADE`, "permission denied for table entries"},
		{"log tail deleted", fmt.Sprintf(`DELETE FROM entries WHERE idx >= %d`, size-2), "permission denied for table entries"},
		{"tree hashes deleted", `DELETE FROM tlog_hashes`, "permission denied for table tlog_hashes"},
		{"checkpoints deleted", `DELETE FROM checkpoints`, "permission denied for table checkpoints"},
		{"own session set back", `UPDATE sessions SET last_seq = 1 WHERE id = 'bob'`, "head set back"},
		{"another's session head moved on", `UPDATE sessions SET last_seq = last_seq + 5 WHERE id = 'bob'`, "is not its last receipt"},
		{"a session head without receipts", `INSERT INTO sessions (id, last_seq, head, first_ns, last_ns) VALUES ('carol', 3, ` + other + `, 0, 0)`, "is not its last receipt"},
		{"own session deleted", `DELETE FROM sessions WHERE id = 'bob'`, "permission denied for table sessions"},
		{"entry out of order", fmt.Sprintf(`INSERT INTO entries (idx, session, seq, prev, hash, envelope, created_ns) VALUES (%d, 'bob', 99, %s, %s, 'x', 0)`, size+5, zero, other), "is not the next one"},
		{"entry that forks its session", fmt.Sprintf(`INSERT INTO entries (idx, session, seq, prev, hash, envelope, created_ns)
			SELECT %d, 'bob', last_seq + 1, %s, %s, 'x', 0 FROM sessions WHERE id = 'bob'`, size, other, other), "does not follow the one before it"},
		// the Merkle log's hashes
		{"entry without its tree hashes", fmt.Sprintf(`INSERT INTO entries (idx, session, seq, prev, hash, envelope, created_ns)
			SELECT %d, 'bob', last_seq + 1, head, %s, 'x', 0 FROM sessions WHERE id = 'bob'`, size, other), "leaf hash at index"},
		{"entry with a wrong leaf hash", fmt.Sprintf(`WITH e AS (INSERT INTO entries (idx, session, seq, prev, hash, envelope, created_ns)
			SELECT %d, 'bob', last_seq + 1, head, %s, 'x', 0 FROM sessions WHERE id = 'bob' RETURNING idx)
			INSERT INTO tlog_hashes (id, hash) SELECT %d, %s FROM e`, size, other, tlog.StoredHashIndex(0, size), other), "leaf hash at index"},
		{"checkpoint of another tree", `INSERT INTO checkpoints (size, root, note, created_ns) VALUES (1, ` + other + `, convert_to(E'joule receipts log x\n1\nERERERERERERERERERERERERERERERERERERERERERE=\n', 'UTF8'), 0)`, "is not the log's"},
		{"checkpoint beyond the log", fmt.Sprintf(`INSERT INTO checkpoints (size, root, note, created_ns) VALUES (%d, %s, 'x', 0)`, size+1, other), "is not the log's"},
		// take the checks away
		{"row-level security disabled", `ALTER TABLE entries DISABLE ROW LEVEL SECURITY`, "must be owner of table entries"},
		{"append check dropped", `DROP TRIGGER joule_check_append ON entries`, "must be owner of relation entries"},
		{"append check replaced", `CREATE OR REPLACE FUNCTION joule_check_append() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN RETURN NEW; END $f$`, "permission denied for schema public"},
		{"admin check shadowed", `CREATE FUNCTION pg_temp.joule_team_admin() RETURNS boolean LANGUAGE sql AS 'SELECT true'; INSERT INTO grants (id, signed, budget_uj, created_ns) VALUES ('forged', '\x01', 1, 0)`, "permission denied for table grants"},
		{"table dropped", `DROP TABLE entries CASCADE`, "must be owner of table entries"},
		{"table created", `CREATE TABLE public.evil (x int)`, "permission denied for schema public"},
		{"member made admin", fmt.Sprintf(`GRANT joule_admins TO %s_member`, db), "must have admin option"},
	}
	before := tableDigest(t, owner)
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			// Refused: an error, or (a row the policies hide from the
			// member's UPDATE) no row changed.
			res, err := member.db.ExecContext(ctx, a.sql)
			switch {
			case err == nil && a.want == "":
				if n, _ := res.RowsAffected(); n != 0 {
					t.Errorf("the member's %q changed %d rows", a.sql, n)
				}
			case err == nil:
				t.Errorf("the member's %q succeeded", a.sql)
			case a.want == "" || !strings.Contains(err.Error(), a.want):
				t.Errorf("the member's %q: error %q, want one saying %q", a.sql, err, a.want)
			}
			if after := tableDigest(t, owner); after != before {
				t.Errorf("the store changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}

	// Through the store's own API, as a member's joule would try.
	apiAttacks := []struct {
		name string
		do   func() error
	}{
		{"grant put", func() error {
			return member.PutGrant(ctx, GrantRecord{ID: "forged", Signed: []byte("signed:forged"), BudgetUJ: 1_000_000_000_000_000})
		}},
		{"grant revoked", func() error { return member.Revoke(ctx, "team") }},
		{"issue sealed into the trust chain", func() error {
			_, err := member.Seal(ctx, SealRequest{Session: "joule-grants", System: true, Build: allowBuild("issued forged")})
			return err
		}},
		{"loss sealed into the store's record", func() error {
			_, err := member.Seal(ctx, SealRequest{Session: "joule-store", System: true, Build: allowBuild("loss")})
			return err
		}},
		{"active grant setting", func() error { return member.SetSetting(ctx, "active_grant", "revoked") }},
		{"active grant setting for a session", func() error { return member.SetSetting(ctx, "active_grant:bob", "revoked") }},
	}
	for _, a := range apiAttacks {
		t.Run(a.name, func(t *testing.T) {
			if err := a.do(); err == nil {
				t.Error("succeeded")
			}
			if after := tableDigest(t, owner); after != before {
				t.Errorf("the store changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}

	// An older dump restored over the store, as the member: pg_restore
	// goes on past each error, as an attacker would.
	t.Run("older dump restored", func(t *testing.T) {
		out, err := exec.Command(pgServer.Tool("pg_restore"), "--clean", "--if-exists", "--no-owner",
			"--dbname="+pgServer.URLAs(db, db+"_member", "member-pw"), dump).CombinedOutput()
		if err == nil {
			t.Errorf("pg_restore as the member succeeded:\n%s", out)
		}
		if after := tableDigest(t, owner); after != before {
			t.Errorf("the store changed:\nbefore %s\nafter  %s", before, after)
		}
	})

	for name, s := range map[string]*Store{"owner": owner, "admin": admin, "member": member} {
		if err := s.Verify(ctx); err != nil {
			t.Errorf("Verify as %s after the attacks: %v", name, err)
		}
	}
	seal(t, member, "bob", []string{"team"}, 10, "still working")

	// The digest sees a change: the owner, whom no policy binds, can
	// still edit a row (and that is whom the team trusts with the database).
	before = tableDigest(t, owner)
	if _, err := owner.db.ExecContext(ctx, `UPDATE settings SET value = 'revoked' WHERE key = 'active_grant'`); err != nil {
		t.Fatal(err)
	}
	if tableDigest(t, owner) == before {
		t.Error("the owner's edit left the digest as it was: the test cannot see a change")
	}
}

// TestTeamHomeChains: a home's own chain (joule-home:…) takes receipts
// only from the login role that appended to it first, so one member cannot
// leave another machine's home chain unverifiable; its own it keeps
// appending to.
func TestTeamHomeChains(t *testing.T) {
	owner, _, member, db := teamStore(t)
	ctx := context.Background()
	if err := pgServer.Exec(ctx, "postgres", fmt.Sprintf(`CREATE ROLE %s_other LOGIN PASSWORD 'other-pw' IN ROLE joule_members`, db)); err != nil {
		t.Fatal(err)
	}
	other := backends[1].openAt(t, pgServer.URLAs(db, db+"_other", "other-pw"))
	homeSeal := func(s *Store, session, tag string) error {
		_, err := s.Seal(ctx, SealRequest{Session: session, System: true, Build: allowBuild(tag)})
		return err
	}
	for _, step := range []struct {
		who     *Store
		name    string
		session string
		ok      bool
	}{
		{member, "member", "joule-home:member.test+11111111", true},
		{member, "member", "joule-home:member.test+11111111", true},
		{other, "other", "joule-home:other.test+22222222", true},
		{other, "other", "joule-home:member.test+11111111", false},
		{member, "member", "joule-home:other.test+22222222", false},
		{member, "member", "joule-home:member.test+11111111", true},
	} {
		before := tableDigest(t, owner)
		err := homeSeal(step.who, step.session, step.name)
		switch {
		case step.ok && err != nil:
			t.Errorf("%s into its own %s: %v", step.name, step.session, err)
		case !step.ok && (err == nil || !strings.Contains(err.Error(), "row-level security policy for table \"entries\"")):
			t.Errorf("%s into another's %s: %v, want refused by row-level security", step.name, step.session, err)
		case !step.ok && tableDigest(t, owner) != before:
			t.Errorf("%s into another's %s changed the store", step.name, step.session)
		}
	}
	if err := owner.Verify(ctx); err != nil {
		t.Errorf("Verify: %v", err)
	}
}

// BenchmarkTeamSeal measures a durable seal with a debit as a member of a
// store set up with SetupTeam (the row-level security policies, the append
// and cache checks) against the same on a store without it, in one run:
// ms/seal for each and their ratio.
func BenchmarkTeamSeal(b *testing.B) {
	ctx := context.Background()
	open := func(team bool) *Store {
		loc := freshPostgres(b)
		owner := backends[1].openAt(b, loc)
		putGrant(b, owner, "g", "", 1<<60)
		if !team {
			return owner
		}
		ensureTeamRoles(b)
		if err := owner.SetupTeam(ctx); err != nil {
			b.Fatal(err)
		}
		u, _ := url.Parse(loc)
		db := strings.TrimPrefix(u.Path, "/")
		if err := pgServer.Exec(ctx, "postgres", fmt.Sprintf(`CREATE ROLE %s_bench LOGIN PASSWORD 'bench-pw' IN ROLE joule_members`, db)); err != nil {
			b.Fatal(err)
		}
		return backends[1].openAt(b, pgServer.URLAs(db, db+"_bench", "bench-pw"))
	}
	plain, team := open(false), open(true)
	var took [2]time.Duration
	b.ResetTimer()
	for i := range b.N {
		for j, s := range []*Store{plain, team} {
			start := time.Now()
			if _, err := s.Seal(ctx, SealRequest{Session: "bench", Debit: []string{"g"}, AmountUJ: 1, Build: allowBuild(strconv.Itoa(i))}); err != nil {
				b.Fatal(err)
			}
			took[j] += time.Since(start)
		}
	}
	plainMS := float64(took[0].Microseconds()) / 1000 / float64(b.N)
	teamMS := float64(took[1].Microseconds()) / 1000 / float64(b.N)
	b.ReportMetric(plainMS, "plain-ms/seal")
	b.ReportMetric(teamMS, "team-ms/seal")
	b.ReportMetric(teamMS/plainMS, "team-x-plain")
}

package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/store/pgtest"
)

// The trust tests attack the trust state itself, as the user who runs
// joule can outside containment: the rows and files that used to be it
// (the revoked flag, the active-grant setting, a grant row, the issuers
// file, config.json), the trust chain's own receipts, and where the store
// is (config.json, $JOULE_STORE). Each runs for real on SQLite and on
// PostgreSQL, then runs the real binary: the decision the attack aimed at
// must not change, `joule store check` and `joule receipts verify` must
// exit 1 saying what was found, and the command the refusal names must
// recover, as printed.

// trustHome is a tamperHome (one grant, g1, that allows go test) with a
// second grant, g2, that allows every command, issued but not active: what
// an attacker would like the gate to decide with.
type trustHome struct {
	*tamperHome
	home string
	g2   string
	srv  *pgtest.Server
}

func newTrustHome(t *testing.T, srv *pgtest.Server) *trustHome {
	t.Helper()
	h := &trustHome{tamperHome: newTamperHome(t, srv), srv: srv}
	h.home = homeOf(h.env)
	r := joule(t, nil, h.env, "grant", "issue", "--template", "", "--allow", "Bash", "--budget", "1000J", "--workspace", h.ws)
	if r.code != 0 {
		t.Fatalf("grant issue: %+v", r)
	}
	h.g2 = regexp.MustCompile(`grant +(\S+)`).FindStringSubmatch(r.stdout)[1]
	return h
}

func (h *trustHome) event(t *testing.T, cmd string) decision {
	t.Helper()
	return gateOnce(t, h.env, bashEvent(h.ws, "s1", cmd))
}

// offlineGrant signs, with the endpoint's key read from its file as an
// agent outside containment can, a grant that allows every command, and
// writes it into the store's grants table without joule.
func (h *trustHome) offlineGrant(t *testing.T) string {
	t.Helper()
	id, err := identity.Load(h.home)
	if err != nil {
		t.Fatal(err)
	}
	is, _ := grant.NewIssuer(id.Steward, id.Key)
	now := time.Now()
	s, err := is.Sign(&grant.Grant{Subject: grant.AnySubject, Roots: []string{h.ws}, Allow: []string{"Bash"}, Tiers: []string{},
		BudgetUJ: 1 << 50, NotBefore: now.Add(-time.Minute).Unix(), NotAfter: now.Add(1000 * time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	h.exec(t, `INSERT INTO grants (id, signed, budget_uj, created_ns) VALUES (?, ?, ?, ?)`, s.ID.String(), s.Envelope, int64(s.Grant.BudgetUJ), now.UnixNano())
	return s.ID.String()
}

// setActive writes the setting that named the active grant before the
// trust chain did.
func (h *trustHome) setActive(t *testing.T, key, id string) {
	t.Helper()
	h.exec(t, `INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, id)
}

// lastTrust is the last receipt of the trust chain: its seq, log index,
// and the hash of the one before it.
func (h *trustHome) lastTrust(t *testing.T) (seq, idx int64, prev []byte) {
	t.Helper()
	q := `SELECT seq, idx, prev FROM entries WHERE session = 'joule-grants' ORDER BY seq DESC LIMIT 1`
	if err := h.db.QueryRow(q).Scan(&seq, &idx, &prev); err != nil {
		t.Fatal(err)
	}
	return seq, idx, prev
}

// dropLastTrust takes the trust chain's last receipt out of its session
// and sets the session's head row back, as if it had never been sealed;
// with leaf, the log is cut before it (truncateLog).
func (h *trustHome) dropLastTrust(t *testing.T, leaf bool) {
	t.Helper()
	seq, idx, prev := h.lastTrust(t)
	if leaf {
		h.truncateLog(t, idx)
		return
	}
	h.exec(t, `DELETE FROM entries WHERE idx = ?`, idx)
	h.exec(t, `UPDATE sessions SET last_seq = ?, head = ? WHERE id = 'joule-grants'`, seq-1, prev)
}

// truncateLog cuts the log to its first n receipts, consistently: the
// entries, their ledger rows and Merkle leaves, the store's own
// checkpoints past n, each session's head and each grant's spent total
// set back to what they were, as a store rolled back would be.
func (h *tamperHome) truncateLog(t *testing.T, n int64) {
	t.Helper()
	h.exec(t, `DELETE FROM ledger WHERE entry >= ?`, n)
	h.exec(t, `DELETE FROM entries WHERE idx >= ?`, n)
	h.exec(t, `DELETE FROM tlog_hashes WHERE id >= ?`, tlog.StoredHashIndex(0, n))
	h.exec(t, `DELETE FROM checkpoints WHERE size > ?`, n)
	h.exec(t, `DELETE FROM sessions WHERE NOT EXISTS (SELECT 1 FROM entries e WHERE e.session = sessions.id)`)
	h.exec(t, `UPDATE sessions SET last_seq = (SELECT MAX(seq) FROM entries e WHERE e.session = sessions.id),
		head = (SELECT hash FROM entries e WHERE e.session = sessions.id ORDER BY seq DESC LIMIT 1)`)
	h.exec(t, `UPDATE grants SET spent_uj = COALESCE((SELECT total_uj FROM ledger l WHERE l.grant_id = grants.id ORDER BY l.id DESC LIMIT 1), 0)`)
}

// recoverCommands are the joule commands a reason names, in quotes, that
// run as they are (no ID or FILE to fill in), but 'joule trust' and
// 'joule store check', which only show.
func recoverCommands(reason string) [][]string {
	var out [][]string
	for _, m := range regexp.MustCompile(`'(joule [^']+)'`).FindAllStringSubmatch(reason, -1) {
		args := strings.Fields(m[1])[1:]
		switch strings.Join(args, " ") {
		case "trust", "store check", "grant ls":
			continue
		}
		if regexp.MustCompile(` (FILE|ID|KEY|NAME|SESSION|DIR)\b`).MatchString(m[1]) {
			continue // a placeholder to fill in
		}
		out = append(out, args)
	}
	return out
}

func TestTrustTampered(t *testing.T) {
	const goTest, ls = "go test ./...", "ls"
	tests := []struct {
		name string
		// setup runs through joule before the snapshot of what is
		// decided; edit is the attack, without joule.
		setup func(t *testing.T, h *trustHome)
		edit  func(t *testing.T, h *trustHome)
		cmd   string // the action whose decision the attack aims at
		want  string // its code after the attack
		found []string
		// recover, when set, is the decision once the command the refusal
		// names has run; "" for a refusal that names none to run as is.
		recover string
	}{
		{name: "revocation set back in its row",
			setup: func(t *testing.T, h *trustHome) { mustJoule(t, h.env, "grant", "revoke", h.id) },
			edit:  func(t *testing.T, h *trustHome) { h.exec(t, `UPDATE grants SET revoked = 0 WHERE id = ?`, h.id) },
			cmd:   goTest, want: gate.CodeGrantRevoked,
			found: []string{"grant %s", "revoked flag was set back"}},
		{name: "revocation set back in every grant",
			setup: func(t *testing.T, h *trustHome) { mustJoule(t, h.env, "grant", "revoke", h.id) },
			edit:  func(t *testing.T, h *trustHome) { h.exec(t, `UPDATE grants SET revoked = 0`) },
			cmd:   goTest, want: gate.CodeGrantRevoked,
			found: []string{"revoked flag was set back"}},
		{name: "active grant switched in its setting",
			edit: func(t *testing.T, h *trustHome) { h.setActive(t, "active_grant", h.g2) },
			cmd:  ls, want: gate.CodeNotGranted,
			found: []string{"the setting active_grant names this grant"}},
		{name: "active grant switched for one session",
			edit: func(t *testing.T, h *trustHome) { h.setActive(t, "active_grant:s1", h.g2) },
			cmd:  ls, want: gate.CodeNotGranted,
			found: []string{"the setting active_grant:s1 names this grant"}},
		{name: "grant signed offline with the copied key, made active in its setting",
			edit: func(t *testing.T, h *trustHome) { h.setActive(t, "active_grant", h.offlineGrant(t)) },
			cmd:  ls, want: gate.CodeNotGranted,
			found: []string{"records no issue of this grant", "the setting active_grant names this grant"}},
		{name: "grant signed offline put in the active grant's place",
			edit: func(t *testing.T, h *trustHome) {
				off := h.offlineGrant(t)
				var env []byte
				h.db.QueryRow(h.q(`SELECT signed FROM grants WHERE id = ?`), off).Scan(&env)
				h.exec(t, `UPDATE grants SET signed = ?, budget_uj = ? WHERE id = ?`, env, int64(1<<50), h.id)
			},
			cmd: ls, want: gate.CodeGrantInvalid,
			found: []string{"its envelope is grant"}},
		{name: "revocation receipt taken out, its head row set back",
			setup: func(t *testing.T, h *trustHome) {
				mustJoule(t, h.env, "grant", "revoke", h.id)
				h.event(t, goTest) // a receipt after it: the log keeps its size
			},
			edit: func(t *testing.T, h *trustHome) { h.dropLastTrust(t, false) },
			cmd:  goTest, want: gate.CodeRolledBack,
			// The loss accepted, the row still says revoked: refused
			// until the revocation is sealed again.
			found: []string{"receipts of session joule-grants", "witness FAILED"}, recover: gate.CodeGrantRevoked},
		{name: "revocation receipt and its leaf taken out of the log tail",
			setup: func(t *testing.T, h *trustHome) { mustJoule(t, h.env, "grant", "revoke", h.id) },
			edit:  func(t *testing.T, h *trustHome) { h.dropLastTrust(t, true) },
			cmd:   goTest, want: gate.CodeRolledBack,
			found: []string{"witness FAILED"}, recover: gate.CodeGrantRevoked},
		{name: "trust receipt byte flipped",
			edit: func(t *testing.T, h *trustHome) {
				h.flip(t, "entries", "envelope", "session = 'joule-grants' AND seq = ?", 1)
			},
			cmd: goTest, want: gate.CodeTrustCorrupt,
			found: []string{"session joule-grants seq 1"}},
		{name: "trust receipts reordered",
			edit: func(t *testing.T, h *trustHome) {
				h.exec(t, `UPDATE entries SET seq = 100 + seq WHERE session = 'joule-grants' AND seq IN (1, 2)`)
				h.exec(t, `UPDATE entries SET seq = 103 - seq WHERE session = 'joule-grants' AND seq IN (101, 102)`)
			},
			cmd: goTest, want: gate.CodeTrustCorrupt,
			found: []string{"session joule-grants seq 1"}},
		{name: "trust session's head row deleted",
			edit: func(t *testing.T, h *trustHome) {
				if h.pg {
					// PostgreSQL keeps the foreign key; the database's
					// owner drops it first.
					h.exec(t, `ALTER TABLE entries DROP CONSTRAINT entries_session_fkey`)
				}
				h.exec(t, `DELETE FROM sessions WHERE id = 'joule-grants'`)
			},
			cmd: goTest, want: gate.CodeTrustCorrupt,
			found: []string{"joule-grants"}},
		{name: "issuers file gains the agent's own key",
			edit: func(t *testing.T, h *trustHome) {
				other := filepath.Join(t.TempDir(), "agent")
				mustJoule(t, []string{"JOULE_HOME=" + other}, "keygen", "--steward", "agent.example")
				pub, _ := os.ReadFile(filepath.Join(other, "steward.pub"))
				os.WriteFile(filepath.Join(h.home, IssuersFile), pub, 0o600)
			},
			cmd: goTest, want: gate.CodeIssuersUnsigned,
			found: []string{"issuers file"}, recover: gate.CodeAllowed},
		{name: "issuers file a symbolic link to a file the agent writes",
			edit: func(t *testing.T, h *trustHome) {
				other := filepath.Join(t.TempDir(), "agent")
				mustJoule(t, []string{"JOULE_HOME=" + other}, "keygen", "--steward", "agent.example")
				os.Symlink(filepath.Join(other, "steward.pub"), filepath.Join(h.home, IssuersFile))
			},
			cmd: goTest, want: gate.CodeIssuersUnsigned,
			found: []string{"issuers file"}, recover: gate.CodeAllowed},
		{name: "issuers line naming this endpoint's steward with the agent's key",
			edit: func(t *testing.T, h *trustHome) {
				id, err := identity.Load(h.home)
				if err != nil {
					t.Fatal(err)
				}
				other := filepath.Join(t.TempDir(), "agent")
				mustJoule(t, []string{"JOULE_HOME=" + other}, "keygen", "--steward", id.Steward)
				pub, _ := os.ReadFile(filepath.Join(other, "steward.pub"))
				os.WriteFile(filepath.Join(h.home, IssuersFile), pub, 0o600)
			},
			cmd: goTest, want: gate.CodeIssuersUnsigned,
			found: []string{"this endpoint's own steward"}},
		{name: "config.json makes every command free",
			edit: func(t *testing.T, h *trustHome) {
				os.WriteFile(filepath.Join(h.home, ConfigFile), []byte(`{"costs":{"Bash":"1µJ"}}`), 0o600)
			},
			cmd: goTest, want: gate.CodeConfigUnsigned,
			found: []string{"config.json's trust settings"}, recover: gate.CodeAllowed},
		{name: "config.json lets commands run unconfined",
			edit: func(t *testing.T, h *trustHome) {
				os.WriteFile(filepath.Join(h.home, ConfigFile), []byte(`{"exec_fallback":"unconfined"}`), 0o600)
			},
			cmd: goTest, want: gate.CodeConfigUnsigned,
			found: []string{"config.json's trust settings"}, recover: gate.CodeAllowed},
		{name: "config.json's store pointed at a new store",
			edit: func(t *testing.T, h *trustHome) {
				os.WriteFile(filepath.Join(h.home, ConfigFile), []byte(fmt.Sprintf(`{"store":%q}`, filepath.Join(t.TempDir(), "new.db"))), 0o600)
				h.env = withoutStoreEnv(h.env)
			},
			cmd: goTest, want: gate.CodeStoreMoved,
			found: []string{"store moved"}, recover: gate.CodeNoActiveGrant},
		{name: "JOULE_STORE pointed at another home's store, a log of its own",
			edit: func(t *testing.T, h *trustHome) {
				other := newTamperHome(t, h.srv)
				h.env = append(withoutStoreEnv(h.env), StoreEnv+"="+storeOf(other))
			},
			cmd: goTest, want: gate.CodeStoreMoved,
			// Bound to that store, the home reads its trust chain, which
			// another key signed: nothing is decided from it.
			found: []string{"store moved"}, recover: gate.CodeTrustCorrupt},
	}
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			var srv *pgtest.Server
			if backend == "postgres" {
				var err error
				if srv, err = pgtest.Start(pgtest.Require(t)); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { srv.Stop() })
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					h := newTrustHome(t, srv)
					if d := h.event(t, goTest); d.Code != gate.CodeAllowed {
						t.Fatalf("before: %+v", d)
					}
					if tt.setup != nil {
						tt.setup(t, h)
					}
					before := h.event(t, tt.cmd)
					if r := joule(t, nil, h.env, "store", "check"); r.code != 0 {
						t.Fatalf("store check before the attack: %+v", r)
					}
					tt.edit(t, h)
					d := h.event(t, tt.cmd)
					if d.Code != tt.want || d.Decision != "deny" {
						t.Fatalf("after the attack: %+v, want a deny %s (before it: %s)", d, tt.want, before.Code)
					}
					r := joule(t, nil, h.env, "store", "check")
					if r.code != 1 {
						t.Errorf("store check exit %d, want 1:\n%s%s", r.code, r.stdout, r.stderr)
					}
					for _, want := range tt.found {
						if strings.Contains(want, "%s") {
							want = fmt.Sprintf(want, h.id)
						}
						if !strings.Contains(r.stdout+r.stderr, want) {
							t.Errorf("store check does not say %q:\n%s%s", want, r.stdout, r.stderr)
						}
					}
					v := joule(t, nil, h.env, "receipts", "verify")
					if v.code != 1 || !strings.Contains(v.stdout+v.stderr, "FAIL") && !strings.Contains(v.stderr, "refused") {
						t.Errorf("receipts verify exit %d, want 1 saying what failed:\n%s%s", v.code, v.stdout, v.stderr)
					}
					if tt.recover == "" {
						return
					}
					cmds := recoverCommands(d.Reason)
					if len(cmds) == 0 {
						t.Fatalf("the refusal names no command to run: %s", d.Reason)
					}
					for _, args := range cmds {
						if r := joule(t, nil, h.env, args...); r.code != 0 {
							t.Fatalf("joule %s, as the refusal printed it: %+v", strings.Join(args, " "), r)
						}
					}
					if d := h.event(t, goTest); d.Code != tt.recover {
						t.Errorf("after %v: %+v, want %s", cmds, d, tt.recover)
					}
					if r := joule(t, nil, h.env, "receipts", "verify"); r.code != 0 && tt.recover == gate.CodeAllowed {
						t.Errorf("receipts verify after the recovery: %+v", r)
					}
				})
			}
		})
	}
}

func mustJoule(t *testing.T, env []string, args ...string) result {
	t.Helper()
	r := joule(t, nil, env, args...)
	if r.code != 0 {
		t.Fatalf("joule %s: %+v", strings.Join(args, " "), r)
	}
	return r
}

// q turns ? placeholders into PostgreSQL's where needed.
func (h *tamperHome) q(query string) string {
	if h.pg {
		for i := 1; strings.Contains(query, "?"); i++ {
			query = strings.Replace(query, "?", fmt.Sprintf("$%d", i), 1)
		}
	}
	return query
}

func withoutStoreEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, StoreEnv+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// storeOf is the location of h's store.
func storeOf(h *tamperHome) string {
	for _, kv := range h.env {
		if v, ok := strings.CutPrefix(kv, StoreEnv+"="); ok {
			return v
		}
	}
	return filepath.Join(homeOf(h.env), StoreFile)
}

// trustReceipts lists the trust chain as `receipts ls joule-grants` shows
// it: each receipt's code and summary.
func trustReceipts(t *testing.T, env []string, session string) []string {
	t.Helper()
	r := joule(t, nil, env, "receipts", "ls", session, "--json")
	var rows []struct {
		Code    string `json:"code"`
		Summary string `json:"summary"`
		Verdict string `json:"verdict"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("receipts ls %s: %v\n%s%s", session, err, r.stdout, r.stderr)
	}
	var out []string
	for _, row := range rows {
		if row.Verdict != "ok" {
			t.Errorf("%s: %s receipt %q: verdict %s", session, row.Code, row.Summary, row.Verdict)
		}
		out = append(out, row.Code+": "+row.Summary)
	}
	return out
}

// TestTrustChangesAreReceipts: every change of trust state, whoever runs
// it (a granted command running `joule grant issue --use` included), is a
// signed receipt in the trust chain before it takes effect, and the gate
// decides as the chain says.
func TestTrustChangesAreReceipts(t *testing.T) {
	env, ws := initHome(t, "--template", "", "--allow", "Bash(go test:*)", "--budget", "1J")
	home := homeOf(env)
	ev := func(cmd, session string) decision { return gateOnce(t, env, bashEvent(ws, session, cmd)) }
	g1 := regexp.MustCompile(`"id": "([^"]+)"`).FindStringSubmatch(mustJoule(t, env, "grant", "show", "active").stdout)[1]
	chain := trustReceipts(t, env, gate.GrantsSession)
	if len(chain) != 3 || chain[0] != "grant-issued: grant "+g1+" issued" || chain[1] != "grant-activated: grant "+g1+" active for every session" || chain[2] != "grant-activated: grant "+g1+" active for workspace "+ws {
		t.Fatalf("joule init's receipts: %q", chain)
	}

	// What code a grant allows can run: it is refused nothing here, but
	// it leaves its receipts, which the log and its witness keep.
	r := mustJoule(t, env, "grant", "issue", "--template", "", "--allow", "Bash", "--budget", "5J", "--workspace", ws, "--use")
	g2 := regexp.MustCompile(`grant +(\S+)`).FindStringSubmatch(r.stdout)[1]
	if d := ev("ls", "s1"); d.Decision != "allow" || len(d.Receipt) == 0 {
		t.Fatalf("the grant issued --use: %+v", d)
	}
	mustJoule(t, env, "grant", "use", g1, "--session", "s2")
	if d := ev("ls", "s2"); d.Code != gate.CodeNotGranted {
		t.Fatalf("s2 decides with g1: %+v", d)
	}
	mustJoule(t, env, "grant", "revoke", g2)
	if d := ev("ls", "s1"); d.Code != gate.CodeGrantRevoked {
		t.Fatalf("after revoke: %+v", d)
	}
	r = mustJoule(t, env, "grant", "renew", g1)
	g3 := strings.Fields(regexp.MustCompile(`grant +\S+`).FindString(r.stdout))[1]
	if d := ev("go test ./...", "s2"); d.Decision != "allow" || !strings.Contains(strings.Join(gateGrants(t, env, "s2", d.Sequence), " "), g3) {
		t.Fatalf("after renew, s2 decides with the renewed grant: %+v", d)
	}
	want := []string{
		"grant-issued: grant " + g1 + " issued",
		"grant-activated: grant " + g1 + " active for every session",
		"grant-activated: grant " + g1 + " active for workspace " + ws,
		"grant-issued: grant " + g2 + " issued",
		"grant-activated: grant " + g2 + " active for every session",
		"grant-activated: grant " + g1 + " active for session s2",
		"grant-revoked: grant " + g2 + " revoked",
		"grant-renewed: grant " + g1 + " renewed as " + g3,
	}
	if got := trustReceipts(t, env, gate.GrantsSession); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the trust chain:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The issuers: added and removed by command, each a receipt in the
	// home's own chain first; a hand edit is refused until accepted.
	other := filepath.Join(t.TempDir(), "b")
	mustJoule(t, []string{"JOULE_HOME=" + other}, "keygen", "--steward", "b.example")
	pub, _ := os.ReadFile(filepath.Join(other, "steward.pub"))
	r = mustJoule(t, env, "trust", "add-issuer", strings.TrimSpace(string(pub)))
	homeSession := regexp.MustCompile(`session (joule-home:\S+)`).FindStringSubmatch(r.stdout)[1]
	if d := ev("go test ./...", "s2"); d.Decision != "allow" {
		t.Fatalf("after add-issuer: %+v", d)
	}
	if b, _ := os.ReadFile(filepath.Join(home, IssuersFile)); !strings.Contains(string(b), strings.TrimSpace(string(pub))) {
		t.Fatalf("add-issuer did not write the issuers file: %q", b)
	}
	mustJoule(t, env, "trust", "remove-issuer", "b.example")
	os.WriteFile(filepath.Join(home, ConfigFile), []byte(`{"witness":{"files":["extra"]}}`), 0o600)
	if d := ev("go test ./...", "s2"); d.Code != gate.CodeConfigUnsigned {
		t.Fatalf("config.json edited by hand: %+v", d)
	}
	if r := joule(t, nil, env, "trust"); r.code != 1 || !strings.Contains(r.stdout, "FAIL") || !strings.Contains(r.stdout, "joule trust accept") {
		t.Fatalf("trust status with config.json edited: %+v", r)
	}
	mustJoule(t, env, "trust", "accept")
	if r := joule(t, nil, env, "trust"); r.code != 0 {
		t.Fatalf("trust status after accept: %+v", r)
	}
	if d := ev("go test ./...", "s2"); d.Decision != "allow" {
		t.Fatalf("after trust accept: %+v", d)
	}
	home3 := trustReceipts(t, env, homeSession)
	if len(home3) != 3 || !strings.HasPrefix(home3[0], "home-recorded: issuers ") {
		t.Fatalf("the home's chain: %q", home3)
	}

	// A grant put in the store without joule: refused until adopted.
	id, _ := identity.Load(home)
	is, _ := grant.NewIssuer(id.Steward, id.Key)
	now := time.Now()
	s, _ := is.Sign(&grant.Grant{Subject: grant.AnySubject, Roots: []string{ws}, Allow: []string{"Bash"}, Tiers: []string{}, BudgetUJ: 1_000_000,
		NotBefore: now.Add(-time.Minute).Unix(), NotAfter: now.Add(time.Hour).Unix()})
	db := openSQL(t, filepath.Join(home, StoreFile))
	if _, err := db.Exec(`INSERT INTO grants (id, signed, budget_uj, created_ns) VALUES (?, ?, ?, ?)`, s.ID.String(), s.Envelope, 1_000_000, now.UnixNano()); err != nil {
		t.Fatal(err)
	}
	r = joule(t, nil, env, "grant", "use", s.ID.String())
	if r.code != 1 || !strings.Contains(r.stderr, "records no issue") {
		t.Fatalf("grant use of an unrecorded grant: %+v", r)
	}
	if r := joule(t, nil, env, "grant", "ls"); !regexp.MustCompile(s.ID.String() + `\s.*unrecorded`).MatchString(r.stdout) {
		t.Fatalf("grant ls does not show it unrecorded:\n%s", r.stdout)
	}
	mustJoule(t, env, "grant", "adopt", s.ID.String(), "--use")
	if d := ev("ls", "s9"); d.Decision != "allow" {
		t.Fatalf("after adopt --use: %+v", d)
	}
	if r := joule(t, nil, env, "store", "check"); r.code != 0 {
		t.Fatalf("store check: %+v", r)
	}
	if r := joule(t, nil, env, "receipts", "verify"); r.code != 0 {
		t.Fatalf("receipts verify: %+v", r)
	}

	// A host cannot write into joule's own sessions.
	d := gateOnce(t, env, bashEvent(ws, gate.GrantsSession, "ls"))
	if d.Code != gate.CodeMalformed || d.Session != gate.MalformedSession {
		t.Fatalf("an event of session joule-grants: %+v", d)
	}
	if got := trustReceipts(t, env, gate.GrantsSession); len(got) != len(want)+2 {
		t.Fatalf("the trust chain grew by a host's event: %q", got)
	}

	// store restore and accept-loss: receipts too.
	bak := filepath.Join(t.TempDir(), "bak.db")
	mustJoule(t, env, "store", "backup", bak)
	ev("go test ./...", "s2")
	mustJoule(t, env, "store", "restore", bak)
	mustJoule(t, env, "store", "accept-loss")
	if got := trustReceipts(t, env, "joule-store"); len(got) != 1 || !strings.HasPrefix(got[0], gate.CodeLossAccepted) {
		t.Fatalf("the store's chain after restore and accept-loss: %q", got)
	}
}

// gateGrants is the grant chain the receipt at session seq was decided
// under.
func gateGrants(t *testing.T, env []string, session string, seq uint64) []string {
	t.Helper()
	var shown struct {
		Receipt struct {
			Grants []string `json:"grants"`
		} `json:"receipt"`
	}
	json.Unmarshal([]byte(mustJoule(t, env, "receipts", "show", session, fmt.Sprint(seq)).stdout), &shown)
	return shown.Receipt.Grants
}

func openSQL(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestReplayedTrustState: the oldest attack on signed state is putting an
// older one back. The revocation, the last receipt of the log, is cut off
// the log's tail and the home's witness files are set back to copies saved
// before it: every file agrees, and with the witness file alone (user
// mode) nothing local can tell; the test pins that limit, which
// docs/receipts.md states. With a witness elsewhere that a quorum
// requires (litewitness, its own process), the witness remembers the
// revocation: the next allow is withdrawn, store-rolled-back, and store
// check fails.
func TestReplayedTrustState(t *testing.T) {
	for _, quorum := range []int{0, 1} {
		t.Run(fmt.Sprintf("quorum %d", quorum), func(t *testing.T) {
			var env []string
			var ws string
			if quorum == 0 {
				env, ws = initHome(t)
			} else {
				env, ws, _ = withLitewitness(t, quorum)
			}
			home := homeOf(env)
			if d := gateOnce(t, env, bashEvent(ws, "s1", "go test ./...")); d.Decision != "allow" {
				t.Fatalf("before: %+v", d)
			}
			saved := map[string][]byte{}
			files, _ := filepath.Glob(filepath.Join(home, WitnessDir, "checkpoint*"))
			for _, f := range files {
				if !strings.HasSuffix(f, ".lock") {
					saved[f], _ = os.ReadFile(f)
				}
			}
			mustJoule(t, env, "grant", "revoke", "active")
			h := &trustHome{tamperHome: &tamperHome{env: env, ws: ws, db: openSQL(t, filepath.Join(home, StoreFile))}, home: home}
			h.dropLastTrust(t, true)
			h.exec(t, `UPDATE grants SET revoked = 0`)
			for f, b := range saved {
				os.WriteFile(f, b, 0o600)
			}
			d := gateOnce(t, env, bashEvent(ws, "s1", "go test ./..."))
			check := joule(t, nil, env, "store", "check")
			if quorum == 0 {
				if d.Decision != "allow" || check.code != 0 {
					t.Fatalf("the documented limit of user mode changed (update docs/receipts.md, \"Threat model\"): %+v; store check %+v", d, check)
				}
				return
			}
			if d.Decision != "deny" || d.Code != gate.CodeRolledBack {
				t.Fatalf("an older state put back, a witness elsewhere required: %+v", d)
			}
			if check.code != 1 || !strings.Contains(check.stdout, "witness FAILED") {
				t.Fatalf("store check: %+v", check)
			}
		})
	}
}

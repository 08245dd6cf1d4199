package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/store/pgtest"
)

// The tamper tests edit a real store the way an agent running as the
// user could (a second process writing the database with SQL, on SQLite
// and on PostgreSQL), then run the real binary: no edit may make `joule
// gate` allow what the signed facts deny, and `joule store check` and
// `joule receipts verify` must report every edit, naming the grant and the
// session and SEQ it concerns, with exit status 1.

// tamperHome is a home whose one grant allows go test and pays for
// exactly three Bash decisions (50 mJ each), and a second connection to
// its store.
type tamperHome struct {
	env []string
	ws  string
	db  *sql.DB
	pg  bool
	id  string // the grant
}

func newTamperHome(t *testing.T, srv *pgtest.Server) *tamperHome {
	t.Helper()
	h := &tamperHome{pg: srv != nil}
	var err error
	if h.pg {
		// A new database on the one server of the test, and a home
		// whose store it is (as teamHome, without a server each).
		url, err := srv.NewDatabase("tamper")
		if err != nil {
			t.Fatal(err)
		}
		dir, _ := filepath.EvalSymlinks(t.TempDir())
		h.ws = filepath.Join(dir, "ws")
		os.MkdirAll(filepath.Join(h.ws, "src"), 0o755)
		h.env = []string{"JOULE_HOME=" + filepath.Join(dir, "home"), "HOME=" + filepath.Join(dir, "userhome"), StoreEnv + "=" + url}
		if r := joule(t, nil, h.env, "init", "--steward", "team.example", "--workspace", h.ws,
			"--template", "", "--allow", "Bash(go test:*)", "--budget", "150mJ"); r.code != 0 {
			t.Fatalf("init: %+v", r)
		}
		h.db, err = sql.Open("pgx", url)
		if err != nil {
			t.Fatal(err)
		}
	} else {
		h.env, h.ws = initHome(t, "--template", "", "--allow", "Bash(go test:*)", "--budget", "150mJ")
		home := strings.TrimPrefix(h.env[0], "JOULE_HOME=")
		h.db, err = sql.Open("sqlite", filepath.Join(home, StoreFile))
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.db.Close() })
	if err := h.db.QueryRow(`SELECT id FROM grants`).Scan(&h.id); err != nil {
		t.Fatal(err)
	}
	return h
}

// exec runs one statement of the attacker's, ? placeholders on both.
func (h *tamperHome) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	if h.pg {
		for i := 1; strings.Contains(query, "?"); i++ {
			query = strings.Replace(query, "?", fmt.Sprintf("$%d", i), 1)
		}
	}
	if _, err := h.db.ExecContext(context.Background(), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func (h *tamperHome) gate(t *testing.T) decision {
	t.Helper()
	return gateOnce(t, h.env, fmt.Sprintf(`{"session_id":"s1","tool":"Bash","input":{"command":"go test ./..."},"cwd":%q}`, h.ws))
}

// flip changes one byte in the middle of a blob column of one row.
func (h *tamperHome) flip(t *testing.T, table, column, where string, args ...any) {
	t.Helper()
	var b []byte
	q := fmt.Sprintf(`SELECT %s FROM %s WHERE %s`, column, table, where)
	if h.pg {
		for i := 1; strings.Contains(q, "?"); i++ {
			q = strings.Replace(q, "?", fmt.Sprintf("$%d", i), 1)
		}
	}
	if err := h.db.QueryRow(q, args...).Scan(&b); err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x01
	h.exec(t, fmt.Sprintf(`UPDATE %s SET %s = ? WHERE %s`, table, column, where), append([]any{b}, args...)...)
}

func TestTamperedStore(t *testing.T) {
	tests := []struct {
		name  string
		spend int // allowed decisions before the edit
		edit  func(t *testing.T, h *tamperHome)
		// gate is the code the next go test gets after the edit: what the
		// signed facts say, or store-corrupt; never an allow they deny.
		gate string
		// found must all be in store check's output.
		found []string
		// show must all be in grant show's output, when set.
		show []string
	}{
		{"budget raised after the signed budget is spent", 3, func(t *testing.T, h *tamperHome) {
			h.exec(t, `UPDATE grants SET budget_uj = 1000000000000 WHERE id = ?`, h.id)
		}, gate.CodeStoreCorrupt, []string{"budget_uj column says 1000000000000 µJ, the signed grant 150000 µJ", "session s1 seq 3"},
			[]string{`"budget_uj": 150000`, `"remaining_uj": 0`, `"store_fault": "budget_uj column says 1000000000000 µJ`}},
		{"budget lowered", 0, func(t *testing.T, h *tamperHome) {
			h.exec(t, `UPDATE grants SET budget_uj = 0 WHERE id = ?`, h.id)
		}, gate.CodeStoreCorrupt, []string{"budget_uj column says 0 µJ"}, nil},
		{"spent lowered after the budget is spent", 3, func(t *testing.T, h *tamperHome) {
			h.exec(t, `UPDATE grants SET spent_uj = 0 WHERE id = ?`, h.id)
		}, gate.CodeStoreCorrupt, []string{"spent_uj says 0 µJ, its ledger adds up to 150000 µJ", "session s1 seq 4"}, nil},
		{"spent raised", 1, func(t *testing.T, h *tamperHome) {
			h.exec(t, `UPDATE grants SET spent_uj = spent_uj + 1 WHERE id = ?`, h.id)
		}, gate.CodeStoreCorrupt, []string{"spent_uj says 50001 µJ"}, nil},
		{"reserved raised", 0, func(t *testing.T, h *tamperHome) {
			h.exec(t, `UPDATE grants SET reserved_uj = 7 WHERE id = ?`, h.id)
		}, gate.CodeStoreCorrupt, []string{"reserved_uj says 7 µJ, its open reservations hold 0 µJ"}, nil},
		{"reservation forged beyond the signed budget", 1, func(t *testing.T, h *tamperHome) {
			h.exec(t, `INSERT INTO reservations (id, amount_uj, created_ns) VALUES (77, 9000000, 0)`)
			h.exec(t, `INSERT INTO reservation_grants (reservation, grant_id) VALUES (77, ?)`, h.id)
			h.exec(t, `UPDATE grants SET reserved_uj = 9000000 WHERE id = ?`, h.id)
		}, gate.CodeBudgetExceeded, []string{"reservation 77 holds 9000000 µJ, more than the signed budget of 150000 µJ"}, nil},
		{"parent column set", 1, func(t *testing.T, h *tamperHome) {
			h.exec(t, `UPDATE grants SET parent = id WHERE id = ?`, h.id)
		}, gate.CodeStoreCorrupt, []string{"parent column says", "session s1 seq 1"}, nil},
		{"envelope byte flipped", 1, func(t *testing.T, h *tamperHome) {
			h.flip(t, "grants", "signed", "id = ?", h.id)
		}, gate.CodeGrantInvalid, []string{"its envelope does not verify", "session s1 seq 1"}, nil},
		{"envelope swapped for a broader, longer grant", 3, func(t *testing.T, h *tamperHome) {
			r := joule(t, nil, h.env, "grant", "issue", "--template", "", "--allow", "Bash", "--budget", "1000J", "--ttl", "1000h", "--workspace", h.ws)
			if r.code != 0 {
				t.Fatalf("grant issue: %+v", r)
			}
			h.exec(t, `UPDATE grants SET signed = (SELECT signed FROM grants WHERE id <> ?), budget_uj = 1000000000 WHERE id = ?`, h.id, h.id)
		}, gate.CodeGrantInvalid, []string{"its envelope is grant"}, nil},
		{"grant row deleted", 1, func(t *testing.T, h *tamperHome) {
			h.exec(t, `DELETE FROM ledger WHERE grant_id = ?`, h.id)
			h.exec(t, `DELETE FROM grants WHERE id = ?`, h.id)
		}, gate.CodeGrantInvalid, []string{"its row is missing from the store", "the signed receipt debited 50000 µJ, which the ledger does not hold"}, nil},
		{"receipt envelope flipped", 3, func(t *testing.T, h *tamperHome) {
			h.flip(t, "entries", "envelope", "session = ? AND seq = ?", "s1", 2)
		}, gate.CodeBudgetExceeded, []string{"session s1 seq 2: receipt row damaged", "session s1 seq 2: the ledger debits 50000 µJ for a receipt that does not verify"}, nil},
		{"receipt and its debit deleted", 3, func(t *testing.T, h *tamperHome) {
			h.exec(t, `DELETE FROM ledger WHERE entry = (SELECT idx FROM entries WHERE session = 's1' AND seq = 2)`)
			h.exec(t, `DELETE FROM entries WHERE session = 's1' AND seq = 2`)
			h.exec(t, `UPDATE grants SET spent_uj = spent_uj - 50000 WHERE id = ?`, h.id)
		}, gate.CodeStoreCorrupt, []string{"session s1 seq 2: receipts 2 to 2 of the session are missing",
			"grant %s session s1 seq 3: a ledger row's running total says 150000 µJ, the grant's rows up to it add up to 100000 µJ"}, nil},
		{"debit duplicated", 1, func(t *testing.T, h *tamperHome) {
			h.exec(t, `INSERT INTO ledger (grant_id, amount_uj, total_uj, entry, created_ns) SELECT grant_id, amount_uj, total_uj + amount_uj, entry, created_ns FROM ledger`)
			h.exec(t, `UPDATE grants SET spent_uj = spent_uj * 2 WHERE id = ?`, h.id)
		}, gate.CodeAllowed, []string{"grant %s session s1 seq 1: the ledger debits this receipt twice"}, nil},
		{"ledger tail rewritten consistently", 3, func(t *testing.T, h *tamperHome) {
			// The last debit row and the cache together: consistent
			// inside the database, below what the witness outside it
			// recorded.
			h.exec(t, `DELETE FROM ledger WHERE entry = (SELECT idx FROM entries WHERE session = 's1' AND seq = 3)`)
			h.exec(t, `UPDATE grants SET spent_uj = spent_uj - 50000 WHERE id = ?`, h.id)
		}, gate.CodeStoreCorrupt, []string{"session s1 seq 3: the signed receipt debited"}, nil},
		{"ledger history rewritten consistently", 3, func(t *testing.T, h *tamperHome) {
			// Every debit row and the cache together: the witness
			// outside the database remembers what was spent; store
			// check recomputes it from the receipts.
			h.exec(t, `DELETE FROM ledger WHERE grant_id = ?`, h.id)
			h.exec(t, `UPDATE grants SET spent_uj = 0 WHERE id = ?`, h.id)
		}, gate.CodeStoreCorrupt, []string{"grant %s session s1 seq 1: the signed receipt debited 50000 µJ, which the ledger does not hold", "session s1 seq 3: the signed receipt debited"}, nil},
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
					h := newTamperHome(t, srv)
					for i := range tt.spend {
						if d := h.gate(t); d.Decision != "allow" {
							t.Fatalf("decision %d before the edit: %+v", i+1, d)
						}
					}
					if r := joule(t, nil, h.env, "store", "check"); r.code != 0 {
						t.Fatalf("store check before the edit: %+v", r)
					}
					if rep := storeCheckJSON(t, h.env, 0); !rep.OK || len(rep.Findings) != 0 || rep.Grants == 0 || !rep.SignaturesChecked {
						t.Fatalf("store check --json before the edit: %+v", rep)
					}
					tt.edit(t, h)
					if tt.gate != "" {
						d := h.gate(t)
						if d.Code != tt.gate {
							t.Errorf("gate after the edit: %+v, want code %s", d, tt.gate)
						}
						if tt.gate == gate.CodeStoreCorrupt && !strings.Contains(d.Reason, h.id) && !strings.Contains(tt.name, "deleted") {
							t.Errorf("store-corrupt does not name grant %s: %s", h.id, d.Reason)
						}
					}
					if tt.show != nil {
						r := joule(t, nil, h.env, "grant", "show", h.id)
						for _, want := range tt.show {
							if !strings.Contains(r.stdout, want) {
								t.Errorf("grant show does not say %s:\n%s%s", want, r.stdout, r.stderr)
							}
						}
					}
					r := joule(t, nil, h.env, "store", "check")
					if r.code != 1 {
						t.Errorf("store check exit %d, want 1:\n%s%s", r.code, r.stdout, r.stderr)
					}
					for _, want := range tt.found {
						if strings.Contains(want, "%s") {
							want = fmt.Sprintf(want, h.id)
						}
						if !strings.Contains(r.stdout, want) {
							t.Errorf("store check does not say %q:\n%s", want, r.stdout)
						}
					}
					if !strings.Contains(r.stdout, "grant "+h.id) {
						t.Errorf("store check names no grant:\n%s", r.stdout)
					}
					if rep := storeCheckJSON(t, h.env, 1); rep.OK || len(rep.Findings) == 0 && rep.Error == "" && !rep.WitnessFailed {
						t.Errorf("store check --json after the edit: %+v", rep)
					} else if len(rep.Findings) > 0 && !strings.Contains(r.stdout, rep.Findings[0].Text) {
						t.Errorf("store check --json finds %q, which the text report does not say:\n%s", rep.Findings[0].Text, r.stdout)
					}
					v := joule(t, nil, h.env, "receipts", "verify")
					if v.code != 1 || !strings.Contains(v.stdout, "FAIL store: ") {
						t.Errorf("receipts verify exit %d, want 1 with a store failure:\n%s%s", v.code, v.stdout, v.stderr)
					}
				})
			}
		})
	}
}

// storeCheckJSON runs store check --json, which must exit code and print
// one JSON object.
func storeCheckJSON(t *testing.T, env []string, code int) checkReport {
	t.Helper()
	r := joule(t, nil, env, "store", "check", "--json")
	var rep checkReport
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil || r.code != code || dec.More() {
		t.Fatalf("store check --json: exit %d (want %d), %v:\n%s%s", r.code, code, err, r.stdout, r.stderr)
	}
	return rep
}

// TestStoreFileModes: joule init and a decision leave the home 0700 and the
// store (with its -wal and -shm files) and key 0600, whatever the umask;
// doctor fails a home or store others can write, warns on one they can
// read, and its hint is the chmod that fixes it, which then passes.
func TestStoreFileModes(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	env, ws := initHome(t)
	gateOnce(t, env, fmt.Sprintf(`{"session_id":"s1","tool":"Bash","input":{"command":"go test ./..."},"cwd":%q}`, ws))
	home := strings.TrimPrefix(env[0], "JOULE_HOME=")
	db := filepath.Join(home, StoreFile)
	for path, want := range map[string]os.FileMode{home: 0o700, db: 0o600, db + "-wal": 0o600, db + "-shm": 0o600, filepath.Join(home, "steward.key"): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s is mode %04o, want %04o", path, got, want)
		}
	}
	doctorFiles := func() (string, string) {
		r := joule(t, nil, env, "doctor", "--json")
		var fs []finding
		if err := json.Unmarshal([]byte(r.stdout), &fs); err != nil {
			t.Fatalf("doctor --json: %v\n%s", err, r.stdout)
		}
		for _, f := range fs {
			if f.Check == "files" {
				return f.Status, f.Hint
			}
		}
		t.Fatalf("doctor has no files check:\n%s", r.stdout)
		return "", ""
	}
	if status, _ := doctorFiles(); status != statusOK {
		t.Errorf("doctor files on a fresh home: %s", status)
	}
	for _, tc := range []struct {
		path   string
		mode   os.FileMode
		status string
	}{
		{db, 0o666, statusFail},
		{db + "-wal", 0o620, statusFail},
		{home, 0o755, statusWarn},
		{db, 0o640, statusWarn},
	} {
		if strings.HasSuffix(tc.path, "-wal") {
			// Doctor's own store open and close removed it.
			gateOnce(t, env, fmt.Sprintf(`{"session_id":"s1","tool":"Bash","input":{"command":"go test ./..."},"cwd":%q}`, ws))
		}
		if err := os.Chmod(tc.path, tc.mode); err != nil {
			t.Fatal(err)
		}
		status, hint := doctorFiles()
		if status != tc.status || !strings.Contains(hint, "chmod") || !strings.Contains(hint, tc.path) {
			t.Errorf("%s mode %04o: doctor says %s, hint %q", tc.path, tc.mode, status, hint)
			continue
		}
		if out, err := exec.Command("sh", "-c", hint).CombinedOutput(); err != nil {
			t.Fatalf("hint %q: %v\n%s", hint, err, out)
		}
		if status, _ := doctorFiles(); status != statusOK {
			t.Errorf("after %q doctor files says %s", hint, status)
		}
	}
}

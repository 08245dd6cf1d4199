package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulehook/joule/core/store/pgtest"
	"github.com/joulehook/joule/core/witness/litewitnesstest"
)

// litewitnessTeam is two machines on one PostgreSQL store, the
// administrator's (team.example, from teamHome) and a member's
// (member.example), each trusting the other's key, both cosigned by one
// litewitness that knows both logs, with a quorum of 1: the set-up of
// docs/team.md's "every machine detects a rollback".
type litewitnessTeam struct {
	srv        *pgtest.Server
	url        string
	admin, mem []string
	ws         string
	lw         *litewitnesstest.Witness
}

func newLitewitnessTeam(t *testing.T) (*litewitnessTeam, func(string) string) {
	t.Helper()
	srv, url, adminEnv, ws := teamHome(t, 40)
	adminHome := homeOf(adminEnv)
	dir := filepath.Dir(adminHome)
	memHome := filepath.Join(dir, "member")
	memEnv := []string{"JOULE_HOME=" + memHome, "HOME=" + filepath.Join(dir, "userhome"), StoreEnv + "=" + url}
	if err := os.MkdirAll(memHome, 0o700); err != nil {
		t.Fatal(err)
	}
	if r := jouleIn(t, ws, nil, memEnv, "keygen", "--steward", "member.example"); r.code != 0 {
		t.Fatalf("keygen: %+v", r)
	}
	pub := func(home string) string {
		b, err := os.ReadFile(filepath.Join(home, "steward.pub"))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	adminKey, memKey := pub(adminHome), pub(memHome)
	for _, m := range []struct {
		env []string
		key string
	}{{adminEnv, memKey}, {memEnv, adminKey}} {
		if r := jouleIn(t, ws, nil, m.env, "trust", "add-issuer", m.key); r.code != 0 {
			t.Fatalf("add-issuer: %+v", r)
		}
	}
	lw := litewitnesstest.Start(t, "litewitness.test/w1", logOrigin("team.example"), adminKey)
	lw.AddLog(logOrigin("member.example"), memKey)
	cfg, _ := json.Marshal(map[string]any{
		"team":    map[string]any{"admins": []string{adminKey}},
		"witness": map[string]any{"witnesses": []map[string]string{{"url": lw.URL, "vkey": lw.VKey}}, "quorum": 1, "timeout": "2s"},
	})
	for _, home := range []string{adminHome, memHome} {
		if err := os.WriteFile(filepath.Join(home, "config.json"), cfg, 0o600); err != nil {
			t.Fatal(err)
		}
		acceptTrust(t, []string{"JOULE_HOME=" + home, StoreEnv + "=" + url})
	}
	ev := func(session string) string {
		return fmt.Sprintf(`{"session_id":%q,"tool":"Bash","input":{"command":"go test ./..."},"cwd":%q}`, session, ws)
	}
	return &litewitnessTeam{srv: srv, url: url, admin: adminEnv, mem: memEnv, ws: ws, lw: lw}, ev
}

// TestTeamLitewitnessRollback: litewitness serves nothing back, so each
// machine keeps what it cosigned in the team's PostgreSQL (the
// checkpoints table, signed by the machine and cosigned by the witness),
// and every other machine asks the witness, with the protocol itself,
// whether it has cosigned more of that log since. An older dump restored
// by the database's owner, after the administrator's machine appended and
// was cosigned, is then seen by the member's machine, which appended
// nothing since: its store check fails and its gate denies
// store-rolled-back.
func TestTeamLitewitnessRollback(t *testing.T) {
	tm, ev := newLitewitnessTeam(t)
	for _, m := range [][]string{tm.admin, tm.mem, tm.admin, tm.mem} {
		if d := gateOnce(t, m, ev("s")); d.Decision != "allow" {
			t.Fatalf("decision before: %+v\n%s", d, tm.lw.Log())
		}
	}
	for name, env := range map[string][]string{"admin": tm.admin, "member": tm.mem} {
		r := jouleIn(t, tm.ws, nil, env, "store", "check")
		if r.code != 0 || !strings.Contains(r.stdout, "witness litewitness.test/w1: the team's logs: 2 of 2 cosigned, and the store extends each") {
			t.Fatalf("%s's store check before: %+v\n%s", name, r, tm.lw.Log())
		}
	}
	dump := filepath.Join(t.TempDir(), "team.dump")
	srvTool := tm.srv.Tool
	if out, err := exec.Command(srvTool("pg_dump"), "--format=custom", "--file="+dump, "--dbname="+tm.url).CombinedOutput(); err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, out)
	}
	// The administrator's machine decides on; litewitness cosigns it.
	for range 3 {
		if d := gateOnce(t, tm.admin, ev("s")); d.Decision != "allow" {
			t.Fatalf("administrator's decision: %+v", d)
		}
	}
	// The owner restores the older dump over the team's database.
	if out, err := exec.Command(srvTool("pg_restore"), "--clean", "--if-exists", "--no-owner", "--exit-on-error", "--single-transaction", "--dbname="+tm.url, dump).CombinedOutput(); err != nil {
		t.Fatalf("pg_restore: %v\n%s", err, out)
	}
	r := jouleIn(t, tm.ws, nil, tm.mem, "store", "check")
	if r.code != 1 || !strings.Contains(r.stdout, "witness FAILED: litewitness.test/w1: the team's logs: store rolled back") || !strings.Contains(r.stdout, "team.example's log") {
		t.Fatalf("member's store check after the restore: %+v", r)
	}
	d := gateOnce(t, tm.mem, ev("s"))
	if d.Decision != "deny" || d.Code != "store-rolled-back" || !strings.Contains(d.Reason, "team.example") {
		t.Fatalf("member's decision after the restore: %+v", d)
	}
	// The administrator's machine sees it too (its own witness).
	if d := gateOnce(t, tm.admin, ev("s")); d.Decision != "deny" || d.Code != "store-rolled-back" {
		t.Fatalf("administrator's decision after the restore: %+v", d)
	}
}

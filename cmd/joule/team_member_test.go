package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core/store"
)

// TestTeamMemberRole runs the real binary on a team store set up with
// 'joule store migrate --team': the administrator's machine (the database
// owner here) has issued the team's grant; a member's machine, connecting
// as a joule_members role, trusts the administrator (a receipt in its home
// chain, which the role may write), names the administrator in team.admins
// (recorded with 'joule trust accept'), and decides under the team's
// grant. Each attack of #34 it tries with joule itself is refused, and
// neither machine's decision or store check changes.
func TestTeamMemberRole(t *testing.T) {
	srv, owner, adminEnv, ws := teamHome(t, 40)
	u, _ := url.Parse(owner)
	db := strings.TrimPrefix(u.Path, "/")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, stmt := range []string{store.TeamRolesSQL, `CREATE ROLE bob LOGIN PASSWORD 'bob-pw' IN ROLE joule_members`} {
		if err := srv.Exec(ctx, "postgres", stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if r := jouleIn(t, ws, nil, adminEnv, "store", "migrate", "--team"); r.code != 0 || !strings.Contains(r.stdout, "joule_members append only") {
		t.Fatalf("store migrate --team: %+v", r)
	}
	adminHome := strings.TrimPrefix(adminEnv[0], "JOULE_HOME=")
	adminKey, err := os.ReadFile(filepath.Join(adminHome, "steward.pub"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(adminHome)
	memberEnv := []string{"JOULE_HOME=" + filepath.Join(dir, "member"), "HOME=" + filepath.Join(dir, "userhome"), StoreEnv + "=" + srv.URLAs(db, "bob", "bob-pw")}
	if err := os.MkdirAll(filepath.Join(dir, "member"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"keygen", "--steward", "member.example"},
		{"trust", "add-issuer", strings.TrimSpace(string(adminKey))},
	} {
		if r := jouleIn(t, ws, nil, memberEnv, args...); r.code != 0 {
			t.Fatalf("%v on the member's machine: %+v", args, r)
		}
	}
	memberKey, err := os.ReadFile(filepath.Join(dir, "member", "steward.pub"))
	if err != nil {
		t.Fatal(err)
	}
	// The administrator trusts the member's receipts (its home chain, its
	// sessions), as an auditor does; team.admins keeps its grants out.
	if r := jouleIn(t, ws, nil, adminEnv, "trust", "add-issuer", strings.TrimSpace(string(memberKey))); r.code != 0 {
		t.Fatalf("add-issuer on the administrator's machine: %+v", r)
	}
	cfg := fmt.Sprintf(`{"team":{"admins":[%q]}}`, strings.TrimSpace(string(adminKey)))
	for _, m := range []struct {
		home string
		env  []string
	}{{adminHome, adminEnv}, {filepath.Join(dir, "member"), memberEnv}} {
		if err := os.WriteFile(filepath.Join(m.home, "config.json"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		if r := jouleIn(t, ws, nil, m.env, "trust", "accept"); r.code != 0 {
			t.Fatalf("trust accept of team.admins: %+v", r)
		}
	}

	ev := func(session string) string {
		return fmt.Sprintf(`{"session_id":%q,"tool":"Bash","input":{"command":"go test ./..."},"cwd":%q}`, session, ws)
	}
	state := func() string {
		var b strings.Builder
		for _, m := range []struct {
			name string
			env  []string
		}{{"admin", adminEnv}, {"member", memberEnv}} {
			d := gateOnce(t, m.env, ev(m.name))
			check := jouleIn(t, ws, nil, m.env, "store", "check")
			fmt.Fprintf(&b, "%s: %s %s, store check exit %d; ", m.name, d.Decision, d.Code, check.code)
			if check.code != 0 {
				t.Logf("%s's store check:\n%s%s", m.name, check.stdout, check.stderr)
			}
		}
		return b.String()
	}
	want := state()
	if strings.Count(want, ": allow ") != 2 || strings.Count(want, "store check exit 0") != 2 {
		t.Fatalf("before the attacks: %s", want)
	}
	for _, args := range [][]string{
		{"grant", "issue", "--allow", "Bash", "--budget", "1GJ", "--ttl", "1d", "--use"},
		{"grant", "revoke", "active"},
		{"init", "--steward", "member.example", "--workspace", ws, "--template", "", "--allow", "Bash", "--budget", "1GJ"},
	} {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			r := jouleIn(t, ws, nil, memberEnv, args...)
			if r.code == 0 || !strings.Contains(r.stderr, "permission denied") && !strings.Contains(r.stderr, "row-level security") {
				t.Errorf("%v on the member's machine: %+v, want refused by PostgreSQL", args, r)
			}
			if got := state(); got != want {
				t.Errorf("after %v:\nbefore %s\nafter  %s", args, want, got)
			}
		})
	}
}

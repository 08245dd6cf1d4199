package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestTeamRestrictedRole: the database owner migrates (joule init), and
// everyone else uses a role that may only read and write rows, as
// docs/team.md advises: deciding, sealing, issuing a grant and verifying
// the log all work without any privilege to change the schema, and a
// migration as that role is refused by PostgreSQL, not half-done.
func TestTeamRestrictedRole(t *testing.T) {
	srv, owner, env, ws := teamHome(t, 10)
	u, err := url.Parse(owner)
	if err != nil {
		t.Fatal(err)
	}
	db := strings.TrimPrefix(u.Path, "/")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, stmt := range []string{
		`CREATE ROLE joule_user LOGIN PASSWORD 'user-pw'`,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO joule_user`,
		`GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO joule_user`,
	} {
		if err := srv.Exec(ctx, db, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	user := make([]string, 0, len(env))
	for _, kv := range env {
		if strings.HasPrefix(kv, StoreEnv+"=") {
			kv = StoreEnv + "=" + srv.URLAs(db, "joule_user", "user-pw")
		}
		user = append(user, kv)
	}

	ev := fmt.Sprintf(`{"session_id":"restricted","tool":"Bash","input":{"command":"go test ./..."},"cwd":%q}`, ws)
	if d := gateOnce(t, user, ev); d.Decision != "allow" || d.Receipt == "" {
		t.Fatalf("decision as the restricted role: %+v", d)
	}
	deny := fmt.Sprintf(`{"session_id":"restricted","tool":"Bash","input":{"command":"rm -rf /"},"cwd":%q}`, ws)
	if d := gateOnce(t, user, deny); d.Decision != "deny" || d.Receipt == "" {
		t.Fatalf("denial as the restricted role: %+v", d)
	}
	if r := jouleIn(t, ws, nil, user, "grant", "issue", "--allow", "Read(**)", "--budget", "1J", "--ttl", "1h"); r.code != 0 {
		t.Errorf("grant issue as the restricted role: %+v", r)
	}
	for _, args := range [][]string{{"receipts", "verify"}, {"store", "check"}, {"receipts", "ls", "restricted"}} {
		if r := jouleIn(t, ws, nil, user, args...); r.code != 0 {
			t.Errorf("%v as the restricted role: %+v", args, r)
		}
	}
	// A schema needs the owner: on a database the role does not own,
	// migrating is refused by PostgreSQL, and nothing is created.
	fresh, err := srv.NewDatabase("fresh")
	if err != nil {
		t.Fatal(err)
	}
	fu, _ := url.Parse(fresh)
	freshEnv := make([]string, 0, len(user))
	for _, kv := range user {
		if strings.HasPrefix(kv, StoreEnv+"=") {
			kv = StoreEnv + "=" + srv.URLAs(strings.TrimPrefix(fu.Path, "/"), "joule_user", "user-pw")
		}
		freshEnv = append(freshEnv, kv)
	}
	r := jouleIn(t, ws, nil, freshEnv, "store", "migrate")
	if r.code == 0 || !strings.Contains(r.stderr, "permission denied") {
		t.Errorf("store migrate as the restricted role: %+v", r)
	}
}

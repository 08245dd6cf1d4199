package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/store/pgtest"
)

// Each test here edits a real home the way an agent running as the same
// user could (copying files back, truncating, deleting, writing the
// database through database/sql from this process), then runs the real
// binary and checks what it refuses and says.

func homeOf(env []string) string { return strings.TrimPrefix(env[0], "JOULE_HOME=") }

func bashEvent(ws, session, cmd string) string {
	return fmt.Sprintf(`{"session_id":%q,"tool":"Bash","input":{"command":%q},"cwd":%q}`, session, cmd, ws)
}

// snapshot copies a home's store files (no joule process is running, so
// the file and its write-ahead log are one consistent state).
func snapshot(t *testing.T, home string) map[string][]byte {
	t.Helper()
	snap := map[string][]byte{}
	for _, f := range []string{StoreFile, StoreFile + "-wal"} {
		if b, err := os.ReadFile(filepath.Join(home, f)); err == nil {
			snap[f] = b
		}
	}
	if len(snap) == 0 {
		t.Fatal("no store files to copy")
	}
	return snap
}

func restore(t *testing.T, home string, snap map[string][]byte) {
	t.Helper()
	for _, f := range []string{StoreFile, StoreFile + "-wal", StoreFile + "-shm"} {
		os.Remove(filepath.Join(home, f))
	}
	for f, b := range snap {
		if err := os.WriteFile(filepath.Join(home, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func removeStore(t *testing.T, home string) {
	t.Helper()
	for _, f := range []string{StoreFile, StoreFile + "-wal", StoreFile + "-shm"} {
		if err := os.Remove(filepath.Join(home, f)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}

func claudeCall(ws, cmd string) []byte {
	return []byte(fmt.Sprintf(`{"session_id":"s1","transcript_path":"/tmp/t.jsonl","cwd":%q,"permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":%q},"tool_use_id":"toolu_1"}`, ws, cmd))
}

// A store that lost what its witness remembers: every decision is refused
// with a specific code, through `joule gate` and `joule hook claude-code`,
// the read commands say so, init does not start over, and accept-loss
// records the loss as a signed receipt and lets decisions go on.
func TestWitnessStoreAttacks(t *testing.T) {
	for _, attack := range []string{"older copy", "truncated to 0", "deleted", "another home's store"} {
		t.Run(attack, func(t *testing.T) {
			env, ws := initHome(t)
			home := homeOf(env)
			if d := gateOnce(t, env, bashEvent(ws, "s1", "go build ./...")); d.Decision != "allow" {
				t.Fatalf("first decision: %+v", d)
			}
			old := snapshot(t, home)
			for i := range 3 {
				gateOnce(t, env, bashEvent(ws, "s1", fmt.Sprintf("go test ./%d", i)))
			}
			if _, err := os.Stat(filepath.Join(home, WitnessDir, "checkpoint")); err != nil {
				t.Fatalf("no witness after four decisions: %v", err)
			}
			switch attack {
			case "older copy":
				restore(t, home, old)
			case "truncated to 0":
				// The attacker's shell: truncate -s 0 joule.db.
				if err := os.Truncate(filepath.Join(home, StoreFile), 0); err != nil {
					t.Fatal(err)
				}
				os.Remove(filepath.Join(home, StoreFile+"-wal"))
				os.Remove(filepath.Join(home, StoreFile+"-shm"))
			case "deleted":
				removeStore(t, home)
			case "another home's store":
				otherEnv, otherWS := initHome(t)
				for i := range 6 {
					gateOnce(t, otherEnv, bashEvent(otherWS, "o", fmt.Sprintf("go vet ./%d", i)))
				}
				restore(t, home, snapshot(t, homeOf(otherEnv)))
			}

			d := gateOnce(t, env, bashEvent(ws, "s1", "go build ./..."))
			if d.Decision != "deny" || d.Code != "store-rolled-back" || !strings.Contains(d.Reason, "accept-loss") {
				t.Errorf("gate on a %s store: %+v, want deny store-rolled-back", attack, d)
			}
			h := joule(t, claudeCall(ws, "go build ./..."), env, "hook", "claude-code")
			if !hostCases[0].denied(h) || !strings.Contains(h.stdout+h.stderr, "store-rolled-back") && !strings.Contains(h.stdout+h.stderr, "rolled back") {
				t.Errorf("hook claude-code on a %s store: %+v, want a deny saying the store was rolled back", attack, h)
			}
			c := joule(t, nil, env, "store", "check")
			if c.code != 1 || !strings.Contains(c.stdout, "witness FAILED") || !strings.Contains(c.stdout, "store rolled back") {
				t.Errorf("store check: %+v, want exit 1 with the witness finding", c)
			}
			v := joule(t, nil, env, "receipts", "verify")
			if v.code != 1 || !strings.Contains(v.stdout, "FAIL witness") {
				t.Errorf("receipts verify: %+v, want exit 1 with FAIL witness", v)
			}
			if l := joule(t, nil, env, "receipts", "ls"); !strings.Contains(l.stderr, "rolled back") {
				t.Errorf("receipts ls says nothing of the rollback: %+v", l)
			}
			p := joule(t, nil, env, "receipts", "prove", "--from", "witness")
			if p.code == 0 || !strings.Contains(p.stderr, "rolled back") {
				t.Errorf("receipts prove --from witness: %+v, want a failure", p)
			}
			if attack == "truncated to 0" || attack == "deleted" {
				in := joule(t, nil, env, "init", "--steward", "test.example", "--workspace", ws)
				if in.code == 0 || !strings.Contains(in.stderr, "accept-loss") {
					t.Errorf("init on a home whose store is gone: %+v, want a refusal naming accept-loss", in)
				}
			}

			// Recovery: one signed receipt, the old witness kept.
			a := joule(t, nil, env, "store", "accept-loss")
			witnessed := fmt.Sprintf("witnessed log size %d", 4+initReceipts)
			if a.code != 0 || !strings.Contains(a.stdout, witnessed) || !strings.Contains(a.stdout, "kept") {
				t.Fatalf("accept-loss: %+v", a)
			}
			ls := joule(t, nil, env, "receipts", "ls", gate.LossSession)
			if ls.code != 0 || !strings.Contains(ls.stdout, gate.CodeLossAccepted) || !strings.Contains(ls.stdout, witnessed) {
				t.Errorf("the loss receipt: %+v", ls)
			}
			v = joule(t, nil, env, "receipts", "verify")
			if attack == "another home's store" {
				// Accepted, but its receipts are not this key's.
				if v.code != 1 || !strings.Contains(v.stdout, "FAIL session o seq 1") || !strings.Contains(v.stdout, "ok   session "+gate.LossSession) {
					t.Errorf("receipts verify after accepting another store: %+v", v)
				}
			} else if v.code != 0 {
				t.Errorf("receipts verify after recovery: %+v", v)
			}
			c = joule(t, nil, env, "store", "check")
			switch {
			case attack == "another home's store":
				// The witness holds again, but the audit of the signed
				// facts finds receipts and a grant of another key.
				if c.code != 1 || !strings.Contains(c.stdout, "consistency proof checked") || !strings.Contains(c.stdout, "does not verify") {
					t.Errorf("store check after accepting another store: %+v", c)
				}
			case c.code != 0 || !strings.Contains(c.stdout, "consistency proof checked"):
				t.Errorf("store check after recovery: %+v", c)
			}
			if attack != "older copy" && attack != "another home's store" {
				if in := joule(t, nil, env, "init", "--steward", "test.example", "--workspace", ws); in.code != 0 {
					t.Fatalf("init after recovery: %+v", in)
				}
			}
			if d := gateOnce(t, env, bashEvent(ws, "s1", "go build ./...")); d.Decision == "deny" && (d.Code == "store-rolled-back" || d.Code == "witness-invalid") {
				t.Errorf("gate after recovery: %+v", d)
			}
			if p := joule(t, nil, env, "receipts", "prove", "--from", "witness"); p.code != 0 || !strings.Contains(p.stdout, "consistency_proof") {
				t.Errorf("prove --from witness after recovery: %+v", p)
			}
		})
	}
}

// The witness file itself edited: missing beside a store that was
// witnessed, forged, or older than the store.
func TestWitnessFileStates(t *testing.T) {
	env, ws := initHome(t)
	home := homeOf(env)
	wfile := filepath.Join(home, WitnessDir, "checkpoint")
	gateOnce(t, env, bashEvent(ws, "s1", "go build ./..."))
	older, err := os.ReadFile(wfile)
	if err != nil {
		t.Fatal(err)
	}
	gateOnce(t, env, bashEvent(ws, "s1", "go test ./..."))
	gateOnce(t, env, bashEvent(ws, "s1", "go vet ./..."))

	// Older: the store extends it; check says so, decisions go on.
	os.WriteFile(wfile, older, 0o600)
	if c := joule(t, nil, env, "store", "check"); c.code != 0 || !strings.Contains(c.stdout, "2 receipts since") {
		t.Errorf("store check with an older witness: %+v", c)
	}
	if d := gateOnce(t, env, bashEvent(ws, "s1", "go build ./...")); d.Decision != "allow" {
		t.Errorf("gate with an older witness: %+v", d)
	}
	if p := joule(t, nil, env, "receipts", "prove", "--from", wfile); p.code != 0 || !strings.Contains(p.stdout, fmt.Sprintf(`"old_size": %d`, 4+initReceipts)) {
		t.Errorf("prove --from the witness file: %+v", p)
	}

	// Forged: its size edited, so the signature no longer verifies.
	cur, _ := os.ReadFile(wfile)
	os.WriteFile(wfile, bytes.Replace(cur, []byte(fmt.Sprintf("\n%d\n", 4+initReceipts)), []byte("\n2\n"), 1), 0o600)
	if d := gateOnce(t, env, bashEvent(ws, "s1", "go build ./...")); d.Decision != "deny" || d.Code != "witness-invalid" {
		t.Errorf("gate with a forged witness: %+v", d)
	}
	if c := joule(t, nil, env, "store", "check"); c.code != 1 || !strings.Contains(c.stdout, "witness FAILED") {
		t.Errorf("store check with a forged witness: %+v", c)
	}

	// Missing, beside a store that records being witnessed.
	os.Remove(wfile)
	if d := gateOnce(t, env, bashEvent(ws, "s1", "go build ./...")); d.Decision != "deny" || d.Code != "witness-invalid" {
		t.Errorf("gate with the witness deleted: %+v", d)
	}
	if c := joule(t, nil, env, "store", "check"); c.code != 1 || !strings.Contains(c.stdout, "witness file is missing") {
		t.Errorf("store check with the witness deleted: %+v", c)
	}
	if a := joule(t, nil, env, "store", "accept-loss"); a.code != 0 || !strings.Contains(a.stdout, "no readable witness") {
		t.Fatalf("accept-loss: %+v", a)
	}
	if d := gateOnce(t, env, bashEvent(ws, "s1", "go build ./...")); d.Decision != "allow" {
		t.Errorf("gate after accept-loss: %+v", d)
	}

	// A further witness file and a witness command from config.json get
	// every checkpoint.
	extra := filepath.Join(t.TempDir(), "other-disk", "checkpoint")
	posted := filepath.Join(t.TempDir(), "posted")
	cfg := fmt.Sprintf(`{"witness":{"files":[%q],"command":["sh","-c","cat > %s"]}}`, extra, posted)
	os.WriteFile(filepath.Join(home, ConfigFile), []byte(cfg), 0o600)
	acceptTrust(t, env)
	gateOnce(t, env, bashEvent(ws, "s1", "go build ./..."))
	a, _ := os.ReadFile(wfile)
	b, _ := os.ReadFile(extra)
	c, _ := os.ReadFile(posted)
	if len(a) == 0 || !bytes.Equal(a, b) || !bytes.Equal(a, c) {
		t.Errorf("witness %q, further file %q, command got %q: want the same note", a, b, c)
	}
}

// One session damaged row by row: every read command lists the session
// with each receipt's own verdict, names SEQ, and export writes everything
// so the offline verify names the first bad position.
func TestDamagedSession(t *testing.T) {
	attacks := []struct {
		name    string
		sql     []string
		badSeq  string // the first SEQ whose verdict is not ok
		verdict string
		rows    int
	}{
		{"envelope flipped", []string{`UPDATE entries SET envelope = CAST(substr(envelope, 1, 60) || X'00' || substr(envelope, 62) AS BLOB) WHERE session = 'd' AND seq = 3`}, "3", "bad-signature", 5},
		{"receipt deleted", []string{`DELETE FROM ledger WHERE entry = (SELECT idx FROM entries WHERE session = 'd' AND seq = 3)`, `DELETE FROM entries WHERE session = 'd' AND seq = 3`}, "4", "broken-chain", 4},
		{"receipts reordered", []string{
			`UPDATE entries SET seq = 100 WHERE session = 'd' AND seq = 2`,
			`UPDATE entries SET seq = 2 WHERE session = 'd' AND seq = 3`,
			`UPDATE entries SET seq = 3 WHERE session = 'd' AND seq = 100`}, "2", "broken-chain", 5},
		{"receipt duplicated", []string{`INSERT INTO entries (idx, session, seq, prev, hash, envelope, created_ns)
			SELECT 1000, session, 6, prev, randomblob(32), envelope, created_ns FROM entries WHERE session = 'd' AND seq = 2`}, "6", "broken-chain", 6},
	}
	for _, at := range attacks {
		t.Run(at.name, func(t *testing.T) {
			env, ws := initHome(t)
			home := homeOf(env)
			for i := range 5 {
				gateOnce(t, env, bashEvent(ws, "d", fmt.Sprintf("go test ./%d", i)))
			}
			db, err := sql.Open("sqlite", filepath.Join(home, StoreFile))
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range at.sql {
				if _, err := db.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			db.Close()

			ls := joule(t, nil, env, "receipts", "ls", "d")
			if ls.code != 0 {
				t.Fatalf("receipts ls of the damaged session: %+v", ls)
			}
			lines := strings.Split(strings.TrimSpace(ls.stdout), "\n")
			if len(lines) < at.rows+1 {
				t.Fatalf("ls lists %d lines, want %d receipts: %s", len(lines), at.rows, ls.stdout)
			}
			first := ""
			for _, l := range lines[1 : at.rows+1] {
				f := strings.Fields(l)
				if f[2] != "ok" {
					first = f[0] + " " + f[2]
					break
				}
			}
			if first != at.badSeq+" "+at.verdict {
				t.Errorf("first damaged receipt in ls: %q, want SEQ %s %s\n%s", first, at.badSeq, at.verdict, ls.stdout)
			}
			sh := joule(t, nil, env, "receipts", "show", "d", at.badSeq)
			var shown struct {
				Verdict  string `json:"verdict"`
				Sequence uint64 `json:"sequence"`
			}
			if sh.code != 0 || json.Unmarshal([]byte(sh.stdout), &shown) != nil || shown.Verdict != at.verdict {
				t.Errorf("show d %s: %+v", at.badSeq, sh)
			}
			v := joule(t, nil, env, "receipts", "verify", "d")
			if v.code != 1 || !strings.Contains(v.stdout, "FAIL session d seq "+at.badSeq+" ") {
				t.Errorf("receipts verify d: %+v, want FAIL naming seq %s", v, at.badSeq)
			}
			if c := joule(t, nil, env, "store", "check"); c.code != 1 {
				t.Errorf("store check: %+v, want exit 1", c)
			}

			ex := joule(t, nil, env, "receipts", "export", "d")
			if ex.code != 0 {
				t.Fatalf("export: %+v", ex)
			}
			n := 0
			dec := cbor.NewDecoder(strings.NewReader(ex.stdout))
			for {
				var raw cbor.RawMessage
				if err := dec.Decode(&raw); err == io.EOF {
					break
				} else if err != nil {
					t.Fatalf("export item %d: %v", n+1, err)
				}
				n++
			}
			if n != at.rows {
				t.Errorf("export wrote %d receipts, want all %d", n, at.rows)
			}
			pub, _ := os.ReadFile(filepath.Join(home, "steward.pub"))
			off := joule(t, []byte(ex.stdout), nil, "receipts", "verify", "--pubkey", strings.TrimSpace(string(pub)))
			if off.code != 1 || !strings.Contains(off.stdout, "FAIL receipt ") || !strings.Contains(off.stderr, "first bad position is receipt") {
				t.Errorf("offline verify of the export: %+v", off)
			}
		})
	}
}

// On a team's PostgreSQL store the witness is this home's: a database
// dropped and recreated empty (or restored from an older dump) is refused
// by the gate and store check here, and accept-loss recovers.
func TestWitnessPostgres(t *testing.T) {
	srv, dbURL, env, ws := teamHome(t, 10)
	for i := range 3 {
		if d := gateOnce(t, env, bashEvent(ws, "t", fmt.Sprintf("go test ./%d", i))); d.Decision != "allow" {
			t.Fatalf("decision %d: %+v", i, d)
		}
	}
	home := homeOf(env)
	// The home's anchor, wherever its configured store is.
	files, _ := filepath.Glob(filepath.Join(home, WitnessDir, "checkpoint"))
	if len(files) != 1 {
		t.Fatalf("witness files for the PostgreSQL store: %v", files)
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	ctx := context.Background()
	for _, stmt := range []string{"DROP DATABASE " + name, fmt.Sprintf("CREATE DATABASE %s OWNER %s", name, pgtest.Role)} {
		if err := srv.Exec(ctx, "postgres", stmt); err != nil {
			t.Fatal(err)
		}
	}
	if d := gateOnce(t, env, bashEvent(ws, "t", "go test ./x")); d.Decision != "deny" || d.Code != "store-rolled-back" {
		t.Errorf("gate on the recreated database: %+v", d)
	}
	if c := joule(t, nil, env, "store", "check"); c.code != 1 || !strings.Contains(c.stdout, "witness FAILED") {
		t.Errorf("store check on the recreated database: %+v", c)
	}
	if a := joule(t, nil, env, "store", "accept-loss"); a.code != 0 || !strings.Contains(a.stdout, fmt.Sprintf("witnessed log size %d", 3+initReceipts)) {
		t.Fatalf("accept-loss: %+v", a)
	}
	if c := joule(t, nil, env, "store", "check"); c.code != 0 {
		t.Errorf("store check after recovery: %+v", c)
	}
}

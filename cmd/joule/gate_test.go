package main

import (
	"context"
	"database/sql"
	"encoding/json"

	"fmt"
	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/receipts"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// initHome makes a JOULE_HOME and workspace and runs joule init with extra
// grant flags; it returns the env for later calls and the workspace.
// initReceipts is how many receipts joule init seals in a new home: its
// grant's issue and its activations, for every session (the first init's
// grant is the default) and for its workspace, in the trust chain
// (session joule-grants).
const initReceipts = 3

func initHome(t testing.TB, flags ...string) ([]string, string) {
	t.Helper()
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(filepath.Join(ws, "src"), 0o755)
	env := []string{"JOULE_HOME=" + filepath.Join(dir, "home"), "HOME=" + filepath.Join(dir, "userhome")}
	cmd := exec.Command(jouleBin, append([]string{"init", "--steward", "test.example", "--workspace", ws}, flags...)...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	return env, ws
}

type decision struct {
	Decision string `json:"decision"`
	Code     string `json:"code"`
	Reason   string `json:"reason"`
	Session  string `json:"session"`
	Sequence uint64 `json:"sequence"`
	Receipt  string `json:"receipt"`
	DebitUJ  uint64 `json:"debit_uj"`
}

func gateOnce(t testing.TB, env []string, event string) decision {
	t.Helper()
	cmd := exec.Command(jouleBin, "gate")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(event)
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("joule gate: %v", err)
		return decision{}
	}
	var d decision
	if err := json.Unmarshal(out, &d); err != nil {
		t.Errorf("joule gate printed %q: %v", out, err)
	}
	return d
}

func TestGateCommand(t *testing.T) {
	env, ws := initHome(t)
	ev := func(tool, input string) string {
		return fmt.Sprintf(`{"session_id":"s1","tool":%q,"input":%s,"cwd":%q}`, tool, input, ws)
	}
	tests := []struct {
		event, decision, code string
	}{
		{ev("Bash", `{"command":"go test ./..."}`), "allow", "allowed"},
		{ev("Bash", `{"command":"sudo go test"}`), "deny", "deny-rule"},
		{ev("Bash", `{"command":"rm -rf src"}`), "ask", "ask-rule"},
		{ev("Write", `{"file_path":"/etc/passwd","content":"x"}`), "deny", "outside-workspace"},
		{ev("Write", fmt.Sprintf(`{"file_path":%q}`, filepath.Join(ws, ".claude", "settings.json"))), "deny", "self-tamper"},
		{"", "deny", "malformed-event"},
		{"[]", "deny", "malformed-event"},
		{`{"session_id":"s1","input":{},"cwd":"/"}`, "deny", "malformed-event"},
		{"{\"session_id\":\"s1\",\"tool\":\"Bash\",\"input\":{\"command\":\"ls \xff\"},\"cwd\":\"/\"}", "deny", "malformed-event"},
		{ev("Bash", `{"command":"`+strings.Repeat("x", 10<<20)+`"}`), "deny", "unanalyzable-command"},
		{ev("NoSuchTool", `{}`), "deny", "action-not-granted"},
	}
	for _, tt := range tests {
		d := gateOnce(t, env, tt.event)
		if d.Decision != tt.decision || d.Code != tt.code {
			t.Errorf("%.80q: got %s/%s (%s), want %s/%s", tt.event, d.Decision, d.Code, d.Reason, tt.decision, tt.code)
		}
		if d.Receipt == "" {
			t.Errorf("%.80q: no receipt", tt.event)
		}
	}
	r := joule(t, nil, env, "receipts", "verify")
	if r.code != 0 || !strings.Contains(r.stdout, "receipts verified") {
		t.Fatalf("verify: %+v", r)
	}
	// A corrupt store, a locked store, a broken config: a specific deny.
	home := strings.TrimPrefix(env[0], "JOULE_HOME=")
	db := filepath.Join(home, "joule.db")
	os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"lock_timeout":"300ms"}`), 0o600)
	locker, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := locker.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	if d := gateOnce(t, env, ev("Bash", `{"command":"go test ./..."}`)); d.Decision != "deny" || d.Code != "store-unavailable" {
		t.Errorf("locked store: %+v", d)
	}
	conn.ExecContext(context.Background(), "ROLLBACK")
	conn.Close()
	locker.Close()
	os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"lock_timeout":"soon"}`), 0o600)
	if d := gateOnce(t, env, ev("Bash", `{"command":"go test ./..."}`)); d.Decision != "deny" || !strings.Contains(d.Reason, "lock_timeout") {
		t.Errorf("bad config: %+v", d)
	}
	os.Remove(filepath.Join(home, "config.json"))
	os.Remove(db + "-wal")
	os.Remove(db + "-shm")
	os.WriteFile(db, []byte("this is not a database, it is a text file that is long enough to look like one"), 0o600)
	if d := gateOnce(t, env, ev("Bash", `{"command":"go test ./..."}`)); d.Decision != "deny" || d.Code != "store-unavailable" {
		t.Errorf("corrupt store: %+v", d)
	}
	// No key: still a deny, never a crash.
	d := gateOnce(t, []string{"JOULE_HOME=" + t.TempDir()}, ev("Bash", `{"command":"ls"}`))
	if d.Decision != "deny" {
		t.Fatalf("no home: %+v", d)
	}
}

// TestGateConcurrentProcesses runs 64 joule gate processes at once against
// one grant that pays for exactly 40 decisions.
func TestGateConcurrentProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("64 processes")
	}
	env, ws := initHome(t, "--template", "", "--allow", "Bash(go test:*)", "--budget", "2J") // Bash costs 50 mJ: 40 calls
	const n = 64
	var wg sync.WaitGroup
	results := make([]decision, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = gateOnce(t, env, fmt.Sprintf(`{"session_id":"s%d","tool":"Bash","input":{"command":"go test ./..."},"cwd":%q}`, i%4, ws))
		}(i)
	}
	wg.Wait()
	allowed, exceeded := 0, 0
	seen := map[string]bool{}
	for _, d := range results {
		switch {
		case d.Decision == "allow":
			allowed++
		case d.Code == "budget-exceeded":
			exceeded++
		default:
			t.Errorf("unexpected %+v", d)
		}
		key := fmt.Sprintf("%s/%d", d.Session, d.Sequence)
		if seen[key] {
			t.Errorf("duplicate position %s", key)
		}
		seen[key] = true
	}
	if allowed != 40 || exceeded != 24 {
		t.Fatalf("allowed %d, budget-exceeded %d; want 40 and 24", allowed, exceeded)
	}
	r := joule(t, nil, env, "receipts", "verify")
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("%d receipts verified", 64+initReceipts)) {
		t.Fatalf("verify: %+v", r)
	}
	r = joule(t, nil, env, "grant", "ls")
	id := strings.Fields(strings.Split(r.stdout, "\n")[1])[0]
	r = joule(t, nil, env, "grant", "show", id)
	if !strings.Contains(r.stdout, `"spent_uj": 2000000`) || !strings.Contains(r.stdout, `"remaining_uj": 0`) {
		t.Fatalf("ledger:\n%s", r.stdout)
	}
}

func TestReceiptsExportVerifyOffline(t *testing.T) {
	env, ws := initHome(t)
	for i := 0; i < 5; i++ {
		gateOnce(t, env, fmt.Sprintf(`{"session_id":"exp","tool":"Bash","input":{"command":"go test ./%d"},"cwd":%q}`, i, ws))
	}
	home := strings.TrimPrefix(env[0], "JOULE_HOME=")
	pub, _ := os.ReadFile(filepath.Join(home, "steward.pub"))
	for _, format := range []string{"cbor", "jsonl"} {
		r := joule(t, nil, env, "receipts", "export", "exp", "--format", format)
		if r.code != 0 {
			t.Fatalf("export: %+v", r)
		}
		export := []byte(r.stdout)
		ok := joule(t, export, nil, "receipts", "verify", "--pubkey", strings.TrimSpace(string(pub)), "--format", format)
		if ok.code != 0 || !strings.Contains(ok.stdout, "5 receipts, chain intact") {
			t.Fatalf("%s verify: %+v", format, ok)
		}
		if format != "jsonl" {
			continue
		}
		lines := strings.SplitAfter(strings.TrimSpace(r.stdout), "\n")
		mutations := map[string]string{
			"deletion":  lines[0] + lines[1] + lines[3] + lines[4],
			"reorder":   lines[0] + lines[2] + lines[1] + lines[3] + lines[4],
			"insertion": lines[0] + lines[1] + lines[1] + lines[2] + lines[3] + lines[4],
		}
		for name, m := range mutations {
			bad := joule(t, []byte(m), nil, "receipts", "verify", "--pubkey", strings.TrimSpace(string(pub)), "--format", "jsonl")
			if bad.code != 1 || !strings.Contains(bad.stderr, "receipt ") {
				t.Errorf("%s: %+v", name, bad)
			}
		}
	}
	// A flipped byte anywhere in the CBOR export is caught: once through
	// the binary, then at every position in-process.
	r := joule(t, nil, env, "receipts", "export", "exp")
	raw := []byte(r.stdout)
	flipped := append([]byte(nil), raw...)
	flipped[len(raw)/2] ^= 0x04
	if bad := joule(t, flipped, nil, "receipts", "verify", "--pubkey", strings.TrimSpace(string(pub))); bad.code != 1 {
		t.Fatalf("flip accepted: %+v", bad)
	}
	key, name, err := identity.ParsePublicKey(string(pub))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := core.NewVerifier(name, key[:])
	for i := range raw {
		c := append([]byte(nil), raw...)
		c[i] ^= 0x04
		envs, err := receipts.SplitExport(c, receipts.ExportCBOR)
		if err != nil {
			continue
		}
		if got, err := receipts.VerifyChain(v, name, envs); err == nil && len(got) == 5 {
			t.Fatalf("flip at %d accepted", i)
		}
	}
	// Proofs.
	p := joule(t, nil, env, "receipts", "prove", "2")
	if p.code != 0 || !strings.Contains(p.stdout, "inclusion_proof") {
		t.Fatalf("prove: %+v", p)
	}
	p = joule(t, nil, env, "receipts", "prove", "--from", "1")
	if p.code != 0 || !strings.Contains(p.stdout, "consistency_proof") {
		t.Fatalf("prove --from: %+v", p)
	}
}

func TestGrantCommands(t *testing.T) {
	env, ws := initHome(t)
	r := joule(t, nil, env, "grant", "ls")
	if r.code != 0 || !strings.Contains(r.stdout, "ok,active") {
		t.Fatalf("ls: %+v", r)
	}
	id := strings.Fields(strings.Split(r.stdout, "\n")[1])[0]
	// Delegate: narrower is fine, wider is refused.
	r = joule(t, nil, env, "grant", "issue", "--parent", id, "--allow", "Bash(go test:*)", "--budget", "1J", "--tiers", "l0,l1", "--workspace", ws, "--deny", "Bash(sudo:*)", "--deny", "Bash(su:*)", "--deny", "Bash(git push --force:*)", "--deny", "Bash(git push -f:*)")
	if r.code != 0 {
		t.Fatalf("child: %+v", r)
	}
	child := strings.Fields(strings.Split(r.stdout, "\n")[0])[1]
	r = joule(t, nil, env, "grant", "issue", "--parent", id, "--allow", "Bash(curl:*)", "--workspace", ws)
	if r.code != 1 || !strings.Contains(r.stderr, "not covered") {
		t.Fatalf("wider child: %+v", r)
	}
	r = joule(t, nil, env, "grant", "issue", "--parent", id, "--allow", "Read", "--budget", "500MJ", "--workspace", ws, "--deny", "Bash(sudo:*)", "--deny", "Bash(su:*)", "--deny", "Bash(git push --force:*)", "--deny", "Bash(git push -f:*)")
	if r.code != 1 || !strings.Contains(r.stderr, "exceeds") {
		t.Fatalf("budget child: %+v", r)
	}
	// Use the child for one session: it narrows that session only.
	if r := joule(t, nil, env, "grant", "use", child, "--session", "narrow"); r.code != 0 {
		t.Fatalf("use: %+v", r)
	}
	d := gateOnce(t, env, fmt.Sprintf(`{"session_id":"narrow","tool":"Bash","input":{"command":"go build ./..."},"cwd":%q}`, ws))
	if d.Decision != "deny" {
		t.Fatalf("child should not allow go build: %+v", d)
	}
	d = gateOnce(t, env, fmt.Sprintf(`{"session_id":"narrow","tool":"Bash","input":{"command":"go test ./..."},"cwd":%q}`, ws))
	if d.Decision != "allow" {
		t.Fatalf("child should allow go test: %+v", d)
	}
	d = gateOnce(t, env, fmt.Sprintf(`{"session_id":"other","tool":"Bash","input":{"command":"go build ./..."},"cwd":%q}`, ws))
	if d.Decision != "allow" {
		t.Fatalf("other sessions keep the parent: %+v", d)
	}
	// Revoking the parent stops the child too.
	if r := joule(t, nil, env, "grant", "revoke", id); r.code != 0 {
		t.Fatalf("revoke: %+v", r)
	}
	d = gateOnce(t, env, fmt.Sprintf(`{"session_id":"narrow","tool":"Bash","input":{"command":"go test ./..."},"cwd":%q}`, ws))
	if d.Code != "grant-revoked" {
		t.Fatalf("after revoke: %+v", d)
	}
	r = joule(t, nil, env, "grant", "show", child)
	if r.code != 0 || !strings.Contains(r.stdout, `"remaining_uj"`) {
		t.Fatalf("show: %+v", r)
	}
	if r := joule(t, nil, env, "grant", "show", "nope"); r.code != 1 || !strings.Contains(r.stderr, "hint:") {
		t.Fatalf("show missing: %+v", r)
	}
	if r := joule(t, nil, env, "grant", "issue", "--template", "nope"); r.code != 2 {
		t.Fatalf("bad template: %+v", r)
	}
	if r := joule(t, nil, env, "grant", "issue", "--allow", "Bash(go test:*", "--workspace", ws); r.code != 2 || !strings.Contains(r.stderr, "parenthes") {
		t.Fatalf("bad rule: %+v", r)
	}
	_ = time.Now
}

package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/identity"
)

// The audit's tamper table (issue 34, part 1): attacks by the agent's own
// user (same uid, not root) on what the gate reads besides the rows and
// files tamper_test.go and trust_test.go edit: the store's files swapped
// under it (a longer fork, its write-ahead log, a symbolic link), the
// home's files turned into FIFOs or locked so that the gate waits, the key
// and the witness replaced, the clock and the environment, a workspace
// root re-pointed, parsers fed duplicate or confusable input, and events
// aimed at the trust chains. Each runs for real on a SQLite home with the
// real binary, with a deadline (a gate that waits past the host's hook
// timeout is an allow on Claude Code), and checks the effect: the next
// decision on an action the signed state denies, and, where the attack
// changed anything, `joule store check` and `joule receipts verify`.

// auditTimeout bounds every command of the table: far below a host's
// hook timeout, far above a decision's time on a loaded machine.
const auditTimeout = 25 * time.Second

// runT runs joule with a deadline; hung reports a process killed at it.
func runT(t *testing.T, env []string, stdin []byte, args ...string) (r result, hung bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), auditTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, jouleBin, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return result{out.String(), errb.String(), -1}, true
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return result{out.String(), errb.String(), r.code}, false
}

// gateT is gateOnce with the deadline: a hung or unparsable gate is a
// decision with code "hung" or "unparsable".
func gateT(t *testing.T, env []string, event string) decision {
	t.Helper()
	r, hung := runT(t, env, []byte(event), "gate")
	if hung {
		return decision{Code: "hung"}
	}
	var d decision
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		return decision{Code: "unparsable", Reason: r.stdout + r.stderr}
	}
	return d
}

// hookDenies runs joule hook claude-code as the host would and reports
// whether its answer is Claude Code's explicit deny, in time.
func hookDenies(t *testing.T, env []string, ws, cmd string) (bool, string) {
	t.Helper()
	r, hung := runT(t, env, claudeCall(ws, cmd), "hook", "claude-code")
	if hung {
		return false, "hung past " + auditTimeout.String() + " (Claude Code lets a timed-out hook's call through)"
	}
	if r.code == 2 || r.code == 0 && jsonPath(r.stdout, "hookSpecificOutput", "permissionDecision") == "deny" {
		return true, ""
	}
	return false, fmt.Sprintf("exit %d: %s%s", r.code, r.stdout, r.stderr)
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if errors.Is(err, os.ErrNotExist) {
		os.Remove(dst)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// copyStore copies the store's three files from dir to dir2.
func copyStore(t *testing.T, dir, dir2 string) {
	t.Helper()
	os.MkdirAll(dir2, 0o700)
	for _, f := range []string{StoreFile, StoreFile + "-wal", StoreFile + "-shm"} {
		copyFile(t, filepath.Join(dir, f), filepath.Join(dir2, f))
	}
}

// auditHome is a trustHome on SQLite (g1 allows go test, 150 mJ, three
// decisions; g2 allows every command, issued, not active) whose store is
// closed between commands, as an attacker outside joule finds it.
type auditHome struct {
	*trustHome
}

func newAuditHome(t *testing.T) *auditHome {
	h := &auditHome{newTrustHome(t, nil)}
	h.db.Close() // the attacker's connection is opened where an attack needs one
	return h
}

func (h *auditHome) path(name string) string { return filepath.Join(h.home, name) }

// mkfifo replaces name in the home with a FIFO no one writes.
func (h *auditHome) mkfifo(t *testing.T, name string) {
	t.Helper()
	p := h.path(name)
	os.Remove(p)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
}

// otherHome is a second home with a key of steward and a store of its
// own, which has decided once.
func otherHome(t *testing.T, steward string) (env []string, ws string) {
	t.Helper()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	ws = filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	env = []string{"JOULE_HOME=" + filepath.Join(dir, "home"), "HOME=" + filepath.Join(dir, "userhome")}
	mustJoule(t, env, "init", "--steward", steward, "--workspace", ws, "--template", "", "--allow", "Bash", "--budget", "1000J")
	gateOnce(t, env, bashEvent(ws, "s1", "ls"))
	return env, ws
}

// agentKeyLine is the steward.pub line of a key the agent made.
func agentKeyLine(t *testing.T, steward string) string {
	t.Helper()
	other := filepath.Join(t.TempDir(), "agent")
	mustJoule(t, []string{"JOULE_HOME=" + other}, "keygen", "--steward", steward)
	pub, err := os.ReadFile(filepath.Join(other, identity.PubKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(pub))
}

// resignWitness rewrites the home's witness checkpoint: edit changes its
// text, which is then signed again with the home's key read from its
// file, as the agent's user can.
func resignWitness(t *testing.T, home string, edit func(string) string) {
	t.Helper()
	id, err := identity.Load(home)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(home, WitnessDir, "checkpoint")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := note.NewVerifier(id.VerifierKey)
	n, err := note.Open(b, note.VerifierList(v))
	if err != nil {
		t.Fatal(err)
	}
	signed, err := note.Sign(&note.Note{Text: edit(n.Text)}, id.NoteSigner)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, signed, 0o600); err != nil {
		t.Fatal(err)
	}
}

const auditGoTest, auditLs = "go test ./...", "ls"

func TestTamperAudit(t *testing.T) {
	tests := []struct {
		name, class string
		// setup runs through joule before the attack; attack runs
		// without it (or with a copy of it, or of its key).
		setup, attack func(t *testing.T, h *auditHome)
		cmd           string                    // the action the signed state denies
		at            func(h *auditHome) string // its working directory (nil: the workspace)
		// want lists the codes the decision may have after the attack (a
		// deny); empty: any deny.
		want []string
		// detect: store check and receipts verify must exit 1 after it;
		// clean: both must exit 0 (the attack changed nothing).
		detect, clean bool
		// hook: joule hook claude-code must answer Claude Code's deny in
		// time as well.
		hook bool
		// gap, when set, is a limit of user mode that the threat model
		// (docs/receipts.md) states: the attack has its effect (the
		// action is allowed), which the test holds so that the table
		// stays honest.
		gap string
	}{
		// --- the store's files swapped under the gate ---
		{name: "store replaced by a longer fork taken before the revocation", class: "store file",
			setup: func(t *testing.T, h *auditHome) {
				copyHome(t, h.home, h.home+".fork")
				mustJoule(t, h.env, "grant", "revoke", h.id)
				fork := []string{"JOULE_HOME=" + h.home + ".fork", "HOME=" + h.home + ".fork-user"}
				for range 3 {
					gateOnce(t, fork, bashEvent(h.ws, "s1", auditGoTest))
				}
				gateOnce(t, fork, bashEvent(h.ws, "s2", auditLs))
			},
			attack: func(t *testing.T, h *auditHome) { copyStore(t, h.home+".fork", h.home) },
			cmd:    auditGoTest, want: []string{gate.CodeRolledBack}, detect: true, hook: true},
		{name: "store and witness replaced by a longer fork (the whole home put back)", class: "store file",
			setup: func(t *testing.T, h *auditHome) {
				copyHome(t, h.home, h.home+".fork")
				mustJoule(t, h.env, "grant", "revoke", h.id)
			},
			attack: func(t *testing.T, h *auditHome) {
				copyStore(t, h.home+".fork", h.home)
				copyFile(t, filepath.Join(h.home+".fork", WitnessDir, "checkpoint"), h.path(filepath.Join(WitnessDir, "checkpoint")))
			},
			cmd: auditGoTest,
			gap: "an older signed state put back whole: only a witness elsewhere with a quorum refuses it (cosign_test.go)"},
		{name: "write-ahead log deleted after the budget was spent", class: "store file",
			setup: func(t *testing.T, h *auditHome) {
				for range 3 {
					h.event(t, auditGoTest)
				}
			},
			attack: func(t *testing.T, h *auditHome) {
				os.Remove(h.path(StoreFile + "-wal"))
				os.Remove(h.path(StoreFile + "-shm"))
			},
			cmd: auditGoTest, want: []string{gate.CodeRolledBack, gate.CodeBudgetExceeded, gate.CodeStoreCorrupt}, hook: true},
		{name: "write-ahead log swapped for an older one", class: "store file",
			setup: func(t *testing.T, h *auditHome) {
				h.event(t, auditGoTest)
				copyFile(t, h.path(StoreFile+"-wal"), h.path("old-wal"))
				h.event(t, auditGoTest)
				h.event(t, auditGoTest)
			},
			attack: func(t *testing.T, h *auditHome) {
				copyFile(t, h.path("old-wal"), h.path(StoreFile+"-wal"))
				os.Remove(h.path(StoreFile + "-shm"))
			},
			cmd: auditGoTest, want: []string{gate.CodeRolledBack, gate.CodeBudgetExceeded, gate.CodeStoreCorrupt}, hook: true},
		{name: "shared-memory index deleted", class: "store file",
			setup: func(t *testing.T, h *auditHome) {
				for range 3 {
					h.event(t, auditGoTest)
				}
			},
			attack: func(t *testing.T, h *auditHome) { os.Remove(h.path(StoreFile + "-shm")) },
			cmd:    auditGoTest, want: []string{gate.CodeBudgetExceeded}, clean: true},
		{name: "store a symbolic link to another home's store", class: "store file",
			attack: func(t *testing.T, h *auditHome) {
				oenv, _ := otherHome(t, "other.example")
				removeStore(t, h.home)
				os.Symlink(filepath.Join(homeOf(oenv), StoreFile), h.path(StoreFile))
			},
			cmd: auditLs, want: []string{gate.CodeRolledBack, gate.CodeStoreMoved, gate.CodeTrustCorrupt}, detect: true},
		{name: "store a symbolic link to a fork outside the home", class: "store file",
			setup: func(t *testing.T, h *auditHome) {
				copyHome(t, h.home, h.home+".fork")
				mustJoule(t, h.env, "grant", "revoke", h.id)
			},
			attack: func(t *testing.T, h *auditHome) {
				removeStore(t, h.home)
				os.Symlink(filepath.Join(h.home+".fork", StoreFile), h.path(StoreFile))
			},
			cmd: auditGoTest, want: []string{gate.CodeRolledBack, gate.CodeStoreMoved}, detect: true},
		{name: "JOULE_STORE through a directory link to a fork of the same name", class: "store file",
			setup: func(t *testing.T, h *auditHome) {
				copyHome(t, h.home, h.home+".fork")
				mustJoule(t, h.env, "grant", "revoke", h.id)
			},
			attack: func(t *testing.T, h *auditHome) {
				link := filepath.Join(t.TempDir(), "h")
				os.Symlink(h.home+".fork", link)
				h.env = append(h.env, StoreEnv+"="+filepath.Join(link, StoreFile))
			},
			cmd: auditGoTest, want: []string{gate.CodeStoreMoved}, detect: true},
		{name: "JOULE_STORE set to the empty string", class: "environment",
			setup:  func(t *testing.T, h *auditHome) { mustJoule(t, h.env, "grant", "revoke", h.id) },
			attack: func(t *testing.T, h *auditHome) { h.env = append(h.env, StoreEnv+"=") },
			cmd:    auditGoTest, want: []string{gate.CodeGrantRevoked}, clean: true},
		{name: "store a FIFO", class: "hang",
			attack: func(t *testing.T, h *auditHome) { removeStore(t, h.home); h.mkfifo(t, StoreFile) },
			cmd:    auditLs, want: []string{gate.CodeStoreError}, hook: true},

		// --- the home's files: FIFOs, locks, links, modes ---
		{name: "steward.key a FIFO", class: "hang",
			attack: func(t *testing.T, h *auditHome) { h.mkfifo(t, identity.KeyFile) },
			cmd:    auditLs, want: []string{gate.CodeKeyUnusable}, hook: true},
		{name: "config.json a FIFO", class: "hang",
			attack: func(t *testing.T, h *auditHome) { h.mkfifo(t, ConfigFile) },
			cmd:    auditLs, want: []string{gate.CodeStoreError}, hook: true},
		{name: "issuers a FIFO", class: "hang",
			attack: func(t *testing.T, h *auditHome) { h.mkfifo(t, IssuersFile) },
			cmd:    auditLs, want: []string{gate.CodeIssuersUnsigned}, hook: true},
		{name: "witness checkpoint a FIFO", class: "hang",
			attack: func(t *testing.T, h *auditHome) { h.mkfifo(t, filepath.Join(WitnessDir, "checkpoint")) },
			cmd:    auditLs, want: []string{gate.CodeWitnessInvalid}, detect: true, hook: true},
		{name: "witness lock held by the agent", class: "hang",
			attack: func(t *testing.T, h *auditHome) {
				f, err := os.OpenFile(h.path(filepath.Join(WitnessDir, "checkpoint.lock")), os.O_RDWR|os.O_CREATE, 0o600)
				if err != nil {
					t.Fatal(err)
				}
				if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { f.Close() })
			},
			// The decision reads the witness without its lock; the
			// checkpoint written after it gives up on the lock in time.
			cmd: auditLs, want: []string{gate.CodeNotGranted}, hook: true},
		{name: "store's write lock held, lock_timeout raised in config.json", class: "hang",
			attack: func(t *testing.T, h *auditHome) {
				os.WriteFile(h.path(ConfigFile), []byte(`{"lock_timeout":"10m"}`), 0o600)
				db, err := sql.Open("sqlite", h.path(StoreFile))
				if err != nil {
					t.Fatal(err)
				}
				db.SetMaxOpenConns(1)
				if _, err := db.Exec(`BEGIN IMMEDIATE`); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Exec(`ROLLBACK`); db.Close() })
				// A shorter budget than the default, which the test
				// would wait for twice.
				h.env = append(h.env, "JOULE_HOOK_TIMEOUT=4s")
			},
			// lock_timeout is in the signed configuration: the edit alone
			// is refused before any wait.
			cmd: auditLs, want: []string{gate.CodeConfigUnsigned, gate.CodeInternal}, hook: true},
		{name: "lock_timeout raised in config.json", class: "hang",
			attack: func(t *testing.T, h *auditHome) {
				os.WriteFile(h.path(ConfigFile), []byte(`{"lock_timeout":"10m"}`), 0o600)
			},
			cmd: auditLs, want: []string{gate.CodeConfigUnsigned}, detect: true},
		{name: "steward.key replaced by the agent's key of the same name", class: "key",
			attack: func(t *testing.T, h *auditHome) {
				id, _ := identity.Load(h.home)
				other := filepath.Join(t.TempDir(), "agent")
				mustJoule(t, []string{"JOULE_HOME=" + other}, "keygen", "--steward", id.Steward)
				for _, f := range []string{identity.KeyFile, identity.PubKeyFile} {
					os.Remove(h.path(f))
					os.Symlink(filepath.Join(other, f), h.path(f))
				}
			},
			cmd: auditLs, want: []string{gate.CodeTrustCorrupt, gate.CodeWitnessInvalid}, detect: true},
		{name: "steward.key made readable by others", class: "key",
			attack: func(t *testing.T, h *auditHome) { os.Chmod(h.path(identity.KeyFile), 0o644) },
			cmd:    auditLs, want: []string{gate.CodeKeyUnusable}},
		{name: "witness directory replaced, empty, and the store put back before the revocation", class: "witness",
			setup: func(t *testing.T, h *auditHome) {
				copyStore(t, h.home, h.home+".old")
				mustJoule(t, h.env, "grant", "revoke", h.id)
			},
			attack: func(t *testing.T, h *auditHome) {
				empty := filepath.Join(t.TempDir(), "w")
				os.MkdirAll(empty, 0o700)
				os.RemoveAll(h.path(WitnessDir))
				os.Symlink(empty, h.path(WitnessDir))
				copyStore(t, h.home+".old", h.home)
			},
			cmd: auditGoTest, want: []string{gate.CodeWitnessInvalid, gate.CodeRolledBack}, detect: true},
		{name: "witness's spent figure lowered without its signature, ledger tail rewritten", class: "witness",
			setup: func(t *testing.T, h *auditHome) {
				for range 3 {
					h.event(t, auditGoTest)
				}
			},
			attack: func(t *testing.T, h *auditHome) {
				p := h.path(filepath.Join(WitnessDir, "checkpoint"))
				b, _ := os.ReadFile(p)
				os.WriteFile(p, regexp.MustCompile(`(joule-spent \S+ )\d+`).ReplaceAll(b, []byte("${1}0")), 0o600)
				db, _ := sql.Open("sqlite", h.path(StoreFile))
				defer db.Close()
				db.Exec(`DELETE FROM ledger`)
				db.Exec(`UPDATE grants SET spent_uj = 0`)
			},
			cmd: auditGoTest, want: []string{gate.CodeWitnessInvalid, gate.CodeStoreCorrupt, gate.CodeRolledBack}, detect: true},
		{name: "witness re-signed with the copied key, spent lowered, ledger rewritten", class: "witness",
			setup: func(t *testing.T, h *auditHome) {
				for range 3 {
					h.event(t, auditGoTest)
				}
			},
			attack: func(t *testing.T, h *auditHome) {
				resignWitness(t, h.home, func(s string) string {
					return regexp.MustCompile(`(joule-spent \S+ )\d+`).ReplaceAllString(s, "${1}0")
				})
				db, _ := sql.Open("sqlite", h.path(StoreFile))
				defer db.Close()
				db.Exec(`DELETE FROM ledger`)
				db.Exec(`UPDATE grants SET spent_uj = 0`)
			},
			cmd: auditGoTest, detect: true,
			gap: "the witness file re-signed with the key the agent's user can read: detected (store check recomputes every debit from the receipts), not prevented"},
		{name: "witness replaced by another home's signed checkpoint", class: "witness",
			attack: func(t *testing.T, h *auditHome) {
				oenv, _ := otherHome(t, "other.example")
				copyFile(t, filepath.Join(homeOf(oenv), WitnessDir, "checkpoint"), h.path(filepath.Join(WitnessDir, "checkpoint")))
			},
			cmd: auditLs, want: []string{gate.CodeWitnessInvalid}, detect: true},

		// --- parsers: issuers and config.json ---
		{name: "issuers: a second key under a trusted issuer's name", class: "parser",
			setup: func(t *testing.T, h *auditHome) {
				mustJoule(t, h.env, "trust", "add-issuer", agentKeyLine(t, "partner.example"))
			},
			attack: func(t *testing.T, h *auditHome) {
				f, _ := os.OpenFile(h.path(IssuersFile), os.O_APPEND|os.O_WRONLY, 0)
				fmt.Fprintln(f, agentKeyLine(t, "partner.example"))
				f.Close()
			},
			cmd: auditLs, want: []string{gate.CodeIssuersUnsigned}, detect: true},
		{name: "issuers: a confusable of this endpoint's steward", class: "parser",
			attack: func(t *testing.T, h *auditHome) {
				os.WriteFile(h.path(IssuersFile), []byte(agentKeyLine(t, "test.exаmple")+"\n"), 0o600) // Cyrillic а
			},
			cmd: auditLs, want: []string{gate.CodeIssuersUnsigned}, detect: true},
		{name: "issuers: the signed list with CRLF, comments and a BOM-free reorder", class: "parser",
			setup: func(t *testing.T, h *auditHome) {
				mustJoule(t, h.env, "trust", "add-issuer", agentKeyLine(t, "a.example"))
				mustJoule(t, h.env, "trust", "add-issuer", agentKeyLine(t, "b.example"))
			},
			attack: func(t *testing.T, h *auditHome) {
				b, _ := os.ReadFile(h.path(IssuersFile))
				lines := strings.Fields(string(b))
				os.WriteFile(h.path(IssuersFile), []byte("# partners\r\n"+lines[1]+"\r\n\r\n"+lines[0]+"\r\n"), 0o600)
			},
			cmd: auditLs, want: []string{gate.CodeNotGranted}, clean: true},
		{name: "config.json: a duplicate costs key lowers the cost", class: "parser",
			attack: func(t *testing.T, h *auditHome) {
				os.WriteFile(h.path(ConfigFile), []byte(`{"costs":{"Bash":"50mJ"},"costs":{"Bash":"1µJ"}}`), 0o600)
			},
			cmd: auditLs, want: []string{gate.CodeConfigUnsigned}, detect: true},
		{name: "config.json: the key in capitals", class: "parser",
			attack: func(t *testing.T, h *auditHome) {
				os.WriteFile(h.path(ConfigFile), []byte(`{"EXEC_FALLBACK":"unconfined"}`), 0o600)
			},
			cmd: auditLs, want: []string{gate.CodeConfigUnsigned, gate.CodeStoreError}},
		{name: "config.json: a second JSON value after the first", class: "parser",
			attack: func(t *testing.T, h *auditHome) {
				os.WriteFile(h.path(ConfigFile), []byte(`{} {"costs":{"Bash":"1µJ"}}`), 0o600)
			},
			cmd: auditLs},

		// --- a workspace root re-pointed ---
		{name: "grant's workspace a symbolic link, re-pointed at another directory", class: "workspace",
			setup: func(t *testing.T, h *auditHome) {
				dir := filepath.Dir(h.ws)
				os.MkdirAll(filepath.Join(dir, "other"), 0o755)
				os.Symlink(h.ws, filepath.Join(dir, "link"))
				mustJoule(t, h.env, "grant", "issue", "--template", "", "--allow", "Bash", "--budget", "1J", "--workspace", filepath.Join(dir, "link"), "--use")
			},
			attack: func(t *testing.T, h *auditHome) {
				dir := filepath.Dir(h.ws)
				os.Remove(filepath.Join(dir, "link"))
				os.Symlink(filepath.Join(dir, "other"), filepath.Join(dir, "link"))
			},
			at:  func(h *auditHome) string { return filepath.Join(filepath.Dir(h.ws), "other") },
			cmd: auditLs, clean: true},
		{name: "grant's workspace directory replaced by a symbolic link to another", class: "workspace",
			setup: func(t *testing.T, h *auditHome) {
				dir := filepath.Dir(h.ws)
				os.MkdirAll(filepath.Join(dir, "other"), 0o755)
				os.MkdirAll(filepath.Join(dir, "ws2"), 0o755)
				mustJoule(t, h.env, "grant", "issue", "--template", "", "--allow", "Bash", "--budget", "1J", "--workspace", filepath.Join(dir, "ws2"), "--use")
			},
			attack: func(t *testing.T, h *auditHome) {
				dir := filepath.Dir(h.ws)
				os.Rename(filepath.Join(dir, "ws2"), filepath.Join(dir, "ws2.old"))
				os.Symlink(filepath.Join(dir, "other"), filepath.Join(dir, "ws2"))
				if d := gateT(t, h.env, bashEvent(filepath.Join(dir, "ws2"), "s8", auditLs)); d.Decision == "allow" {
					t.Errorf("an action in ws2, now a link to other: %+v", d)
				}
			},
			at:  func(h *auditHome) string { return filepath.Join(filepath.Dir(h.ws), "other") },
			cmd: auditLs, clean: true},

		// --- the clock and the environment ---
		{name: "expired grant, TZ and FAKETIME in the environment", class: "environment",
			setup: func(t *testing.T, h *auditHome) {
				mustJoule(t, h.env, "grant", "issue", "--template", "", "--allow", "Bash", "--budget", "1J", "--ttl", "2s", "--workspace", h.ws, "--use")
				time.Sleep(3 * time.Second)
			},
			attack: func(t *testing.T, h *auditHome) {
				h.env = append(h.env, "TZ=Pacific/Kiritimati", "FAKETIME=-1d", "LD_PRELOAD=/nonexistent/libfaketime.so.1")
			},
			cmd: auditLs, want: []string{gate.CodeGrantExpired}, clean: true},
		{name: "HOME and CODEX_HOME moved to an empty directory", class: "environment",
			setup: func(t *testing.T, h *auditHome) { mustJoule(t, h.env, "grant", "revoke", h.id) },
			attack: func(t *testing.T, h *auditHome) {
				moved := t.TempDir()
				h.env = append(h.env, "HOME="+moved, "CODEX_HOME="+filepath.Join(moved, "codex"))
			},
			cmd: auditGoTest, want: []string{gate.CodeGrantRevoked}, clean: true, hook: true},
		{name: "HOME moved and JOULE_HOME unset: the hook finds no home", class: "environment",
			setup: func(t *testing.T, h *auditHome) { mustJoule(t, h.env, "grant", "revoke", h.id) },
			attack: func(t *testing.T, h *auditHome) {
				moved := t.TempDir()
				var env []string
				for _, kv := range h.env {
					if !strings.HasPrefix(kv, "JOULE_HOME=") && !strings.HasPrefix(kv, "HOME=") {
						env = append(env, kv)
					}
				}
				h.env = append(env, "HOME="+moved, "CODEX_HOME="+filepath.Join(moved, "codex"), "XDG_DATA_HOME=")
			},
			cmd: auditGoTest, hook: true},
		{name: "XDG_DATA_HOME pointed at the agent's home", class: "environment",
			attack: func(t *testing.T, h *auditHome) {
				oenv, _ := otherHome(t, "other.example")
				h.env = append(h.env, "XDG_DATA_HOME="+filepath.Dir(homeOf(oenv)))
			},
			cmd: auditLs, want: []string{gate.CodeNotGranted}, clean: true},

		// --- events aimed at the trust chains ---
		{name: "event in a session that looks like joule-grants", class: "event",
			attack: func(t *testing.T, h *auditHome) {
				for _, s := range []string{"joule-grants\u200b", "JOULE-GRANTS", " joule-grants", "joule‐grants"} {
					gateOnce(t, h.env, bashEvent(h.ws, s, auditGoTest))
				}
			},
			cmd: auditLs, want: []string{gate.CodeNotGranted}, clean: true},
		{name: "event naming the home's own chain", class: "event",
			attack: func(t *testing.T, h *auditHome) {
				id, _ := identity.Load(h.home)
				if d := gateOnce(t, h.env, bashEvent(h.ws, "joule-home:"+strings.Join(strings.SplitN(id.VerifierKey, "+", 3)[:2], "+"), auditGoTest)); d.Code != gate.CodeMalformed {
					t.Errorf("an event in the home's chain: %+v", d)
				}
			},
			cmd: auditLs, want: []string{gate.CodeNotGranted}, clean: true},
		{name: "a 16 MB event", class: "event",
			attack: func(t *testing.T, h *auditHome) {
				d := gateT(t, h.env, bashEvent(h.ws, "s1", "ls "+strings.Repeat("a", 16<<20)))
				if d.Decision == "allow" || d.Code == "hung" {
					t.Errorf("a 16 MB event: %+v", d)
				}
			},
			cmd: auditLs, want: []string{gate.CodeNotGranted}, clean: true},
	}
	for _, tt := range tests {
		t.Run(tt.class+"/"+tt.name, func(t *testing.T) {
			h := newAuditHome(t)
			if d := h.event(t, auditGoTest); d.Code != gate.CodeAllowed {
				t.Fatalf("before: %+v", d)
			}
			if tt.setup != nil {
				tt.setup(t, h)
			}
			cwd := h.ws
			if tt.at != nil {
				cwd = tt.at(h)
			}
			before := gateT(t, h.env, bashEvent(cwd, "s9", tt.cmd))
			if before.Decision != "deny" {
				t.Fatalf("before the attack %q is %+v: the table wants an action the signed state denies", tt.cmd, before)
			}
			if r, _ := runT(t, h.env, nil, "store", "check"); r.code != 0 {
				t.Fatalf("store check before the attack: %+v", r)
			}
			tt.attack(t, h)
			d := gateT(t, h.env, bashEvent(cwd, "s9", tt.cmd))
			if tt.gap != "" {
				if d.Decision != "allow" {
					t.Errorf("the documented gap %q no longer holds: %+v; update the threat model and this case", tt.gap, d)
				}
			} else if d.Decision != "deny" || len(tt.want) > 0 && !slices.Contains(tt.want, d.Code) {
				t.Errorf("after the attack: %+v (%s), want a deny %v (before it: %s)", d, d.Reason, tt.want, before.Code)
			}
			if tt.hook {
				if ok, why := hookDenies(t, h.env, cwd, tt.cmd); !ok {
					t.Errorf("joule hook claude-code after the attack: %s", why)
				}
			}
			if tt.detect || tt.clean {
				want := 1
				if tt.clean {
					want = 0
				}
				if r, hung := runT(t, h.env, nil, "store", "check"); r.code != want || hung {
					t.Errorf("store check exit %d (hung %t), want %d:\n%s%s", r.code, hung, want, r.stdout, r.stderr)
				}
				if r, hung := runT(t, h.env, nil, "receipts", "verify"); r.code != want || hung {
					t.Errorf("receipts verify exit %d (hung %t), want %d:\n%s%s", r.code, hung, want, r.stdout, r.stderr)
				}
			}
		})
	}
}

package gate

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
)

// crashDecisions is how many decisions the child would make if not killed.
const crashDecisions = 1000

// openTestGate opens the gate of a home made by setupCrashHome.
func openTestGate(t testing.TB, dir string) (*Gate, *identity.Identity) {
	id, err := identity.Load(filepath.Join(dir, "home"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(dir, "home", "joule.db"))
	if err != nil {
		t.Fatal(err)
	}
	sealer, _ := id.Sealer()
	return &Gate{Store: st, Sealer: sealer, Trust: grant.Trust{id.Steward: id.Public()}, JouleHome: filepath.Join(dir, "home"), Home: filepath.Join(dir, "userhome")}, id
}

// TestCrashHelper is the child process of TestKillNineMidway.
func TestCrashHelper(t *testing.T) {
	dir := os.Getenv("JOULE_CRASH_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	g, _ := openTestGate(t, dir)
	w := bufio.NewWriter(os.Stdout)
	for i := 0; i < crashDecisions; i++ {
		ev := fmt.Sprintf(`{"session_id":"crash-%d","tool":"Bash","input":{"command":"go test ./pkg%d"},"cwd":%q}`, i%3, i, filepath.Join(dir, "ws"))
		r := g.DecideJSON(context.Background(), []byte(ev))
		if r.Receipt == "" {
			fmt.Fprintf(w, "FAIL %s %s\n", r.Code, r.Reason)
		} else {
			fmt.Fprintf(w, "%s %d %s %s\n", r.Session, r.Sequence, r.Receipt, r.Decision)
		}
		w.Flush() // answered: from here the host may act on it
	}
}

// TestKillNineMidway kills a process with SIGKILL in the middle of 1,000
// decisions; afterwards every chain and the log verify, and every decision
// the process answered is in the store.
func TestKillNineMidway(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	os.MkdirAll(filepath.Join(dir, "ws"), 0o755)
	id, err := identity.Create(filepath.Join(dir, "home"), "crash.example", false)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(dir, "home", "joule.db"))
	if err != nil {
		t.Fatal(err)
	}
	is, _ := grant.NewIssuer(id.Steward, id.Key)
	s, err := is.Sign(&grant.Grant{Subject: grant.AnySubject, Roots: []string{filepath.Join(dir, "ws")}, Allow: []string{"Bash(go test:*)"},
		Tiers: []string{}, BudgetUJ: 1 << 40, NotBefore: time.Now().Add(-time.Hour).Unix(), NotAfter: time.Now().Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := st.PutGrant(ctx, store.GrantRecord{ID: s.ID.String(), Signed: s.Envelope, BudgetUJ: s.Grant.BudgetUJ}); err != nil {
		t.Fatal(err)
	}
	sealer, _ := id.Sealer()
	recordActive(t, &Gate{Store: st, Sealer: sealer}, s.ID.String())
	st.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "JOULE_CRASH_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var answered []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "FAIL") {
			t.Fatalf("child: %s", line)
		}
		if strings.HasPrefix(line, "crash-") {
			answered = append(answered, line)
		}
		if len(answered) == 300 {
			cmd.Process.Signal(syscall.SIGKILL)
			break
		}
	}
	cmd.Wait()
	if len(answered) != 300 {
		t.Fatalf("child answered %d decisions before dying", len(answered))
	}

	g, id2 := openTestGate(t, dir)
	defer g.Store.Close()
	if err := g.Store.Verify(ctx); err != nil {
		t.Fatalf("store after kill -9: %v", err)
	}
	v, _ := core.NewVerifier(id2.Steward, func() []byte { p := id2.Public(); return p[:] }())
	sessions, err := g.Store.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, s := range sessions {
		entries, err := g.Store.Session(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		envs := make([][]byte, len(entries))
		for i, e := range entries {
			envs[i] = e.Envelope
		}
		if _, err := receipts.VerifyChain(v, id2.Steward, envs); err != nil {
			t.Fatalf("session %s: %v", s.ID, err)
		}
		total += len(entries)
	}
	if total < 300 || total > crashDecisions {
		t.Fatalf("%d receipts in the store", total)
	}
	for _, a := range answered {
		f := strings.Fields(a)
		h, err := core.ParseID(f[2])
		if err != nil {
			t.Fatal(err)
		}
		e, err := g.Store.EntryByHash(ctx, h)
		if err != nil {
			t.Fatalf("answered decision %s is missing: %v", a, err)
		}
		if e.Session != f[0] || fmt.Sprint(e.Seq) != f[1] {
			t.Fatalf("answered %s, stored at %s/%d", a, e.Session, e.Seq)
		}
	}
	// The store keeps working after the crash.
	r := g.DecideJSON(ctx, []byte(fmt.Sprintf(`{"session_id":"after","tool":"Bash","input":{"command":"go test"},"cwd":%q}`, filepath.Join(dir, "ws"))))
	if r.Decision != Allow {
		b, _ := json.Marshal(r)
		t.Fatalf("after crash: %s", b)
	}
}

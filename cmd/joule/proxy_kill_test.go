package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/demo"
)

// TestProxyKilledLosesNoReceipt kills `joule proxy` with SIGKILL while the
// receipts of calls it has answered cannot reach the store (another
// connection holds its write lock). The next `joule proxy` seals every one
// of them from the dead proxy's journal, once, and the log verifies.
func TestProxyKilledLosesNoReceipt(t *testing.T) {
	env, _ := initHome(t, "--budget", "20kJ")
	home := strings.TrimPrefix(env[0], "JOULE_HOME=")
	upstream := httptest.NewServer(demo.AnthropicStandIn())
	defer upstream.Close()

	cmd, url, stderr := spawnDaemon(t, env, "proxy", "--listen", "127.0.0.1:0", "--anthropic", upstream.URL)
	defer cmd.Process.Kill()
	call := func() {
		t.Helper()
		req, _ := http.NewRequest("POST", url+"/v1/messages", strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("x-claude-code-session-id", "killed")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("HTTP %d", resp.StatusCode)
		}
	}
	count := func() int {
		t.Helper()
		st, err := store.Open(filepath.Join(home, "joule.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		es, err := st.Session(context.Background(), "killed")
		if errors.Is(err, store.ErrNotFound) {
			return 0 // nothing sealed yet
		}
		if err != nil {
			t.Fatal(err)
		}
		return len(es)
	}

	call() // reserves the lease the next calls are admitted on
	for deadline := time.Now().Add(30 * time.Second); count() < 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the first call was never receipted\n%s", stderr.String())
		}
	}
	db, err := sql.Open("sqlite", filepath.Join(home, "joule.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lock, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	const answered = 5
	for range answered {
		call()
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := lock.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	lock.Close()
	if n := count(); n != 1 {
		t.Fatalf("%d receipts before the restart, want 1: the lock did not hold the others back", n)
	}

	_, stop := startDaemon(t, env, "proxy", "--listen", "127.0.0.1:0", "--anthropic", upstream.URL)
	logs := stop()
	if want := fmt.Sprintf("sealed %d receipt(s)", answered); !strings.Contains(logs, want) {
		t.Errorf("restarted proxy's log does not say %q:\n%s", want, logs)
	}
	if n := count(); n != 1+answered {
		t.Errorf("%d receipts after the restart, want %d", n, 1+answered)
	}
	if r := joule(t, nil, env, "receipts", "verify"); r.code != 0 {
		t.Errorf("receipts verify: %s %s", r.stdout, r.stderr)
	}
	if left, _ := filepath.Glob(filepath.Join(home, "proxy-journal", "*.jsonl")); len(left) != 0 {
		t.Errorf("journals left: %v", left)
	}
}

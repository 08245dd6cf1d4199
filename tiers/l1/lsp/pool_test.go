package lsp_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers/l1/lsp"
)

// usePool makes p the pool requests use for the rest of the test.
func usePool(t *testing.T, p *lsp.Pool) {
	t.Helper()
	old := lsp.Default
	lsp.Default = p
	t.Cleanup(func() { p.Close(); lsp.Default = old })
}

func organize(t *testing.T, root string, files core.Files) *lsp.Result {
	t.Helper()
	res, err := lsp.OrganizeImports(context.Background(), root, files, "stats/stats.go")
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func dead(pid int) bool {
	for i := 0; i < 100; i++ {
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// A second request reuses the server the first started, and sees the
// second snapshot, not the first: the changed file is sent as didChange,
// and a file changed on disk is announced.
func TestPoolReuse(t *testing.T) {
	needGopls(t)
	p := &lsp.Pool{StateDir: t.TempDir()}
	usePool(t, p)
	root, files := goProject(t)
	organize(t, root, files)
	run := p.Running()
	if len(run) != 1 || run[0].Server != lsp.Gopls.Name || run[0].Root != root || run[0].Busy {
		t.Fatalf("running after one request: %+v", run)
	}
	if st := lsp.ReadState(p.StateDir); len(st) != 1 || st[0].PID != run[0].PID {
		t.Errorf("state for joule doctor: %+v, want %+v", st, run)
	}
	// The next snapshot imports strings as well, in the buffer only.
	next := core.Files{}
	for k, v := range files {
		next[k] = v
	}
	next["stats/stats.go"] = bytes.Replace(files["stats/stats.go"], []byte("\t\"fmt\"\n"), []byte("\t\"fmt\"\n\t\"strings\"\n"), 1)
	next["stats/stats.go"] = append(next["stats/stats.go"], []byte("\nvar _ = strings.ToUpper\n")...)
	res := organize(t, root, next)
	if want := "import (\n\t\"fmt\"\n\t\"math\"\n\t\"sort\"\n\t\"strings\"\n)\n"; !strings.Contains(string(res.Next["stats/stats.go"]), want) {
		t.Errorf("the reused server did not see the new snapshot:\n%s", res.Next["stats/stats.go"])
	}
	// And back: the first snapshot again, through the same server.
	res = organize(t, root, files)
	if strings.Contains(string(res.Next["stats/stats.go"]), "strings") {
		t.Errorf("the reused server kept the old buffer:\n%s", res.Next["stats/stats.go"])
	}
	if again := p.Running(); len(again) != 1 || again[0].PID != run[0].PID {
		t.Errorf("not reused: %+v, then %+v", run, again)
	}
	p.Close()
	if !dead(run[0].PID) {
		t.Errorf("gopls %d still runs after Close", run[0].PID)
	}
	if len(p.Running()) != 0 || len(lsp.ReadState(p.StateDir)) != 0 {
		t.Errorf("after Close: %+v, state %+v", p.Running(), lsp.ReadState(p.StateDir))
	}
	// A closed pool still serves, with a server per request.
	organize(t, root, files)
	if len(p.Running()) != 0 {
		t.Errorf("a closed pool keeps %+v", p.Running())
	}
}

// An idle server is shut down after Idle; past Max, the least recently
// used idle one makes room.
func TestPoolBounds(t *testing.T) {
	needGopls(t)
	p := &lsp.Pool{Idle: 300 * time.Millisecond, Max: 1}
	usePool(t, p)
	root, files := goProject(t)
	organize(t, root, files)
	first := p.Running()
	if len(first) != 1 {
		t.Fatalf("running: %+v", first)
	}
	root2, files2 := goProject(t)
	organize(t, root2, files2)
	second := p.Running()
	if len(second) != 1 || second[0].Root != root2 {
		t.Fatalf("past Max: %+v", second)
	}
	if !dead(first[0].PID) {
		t.Errorf("the evicted gopls %d still runs", first[0].PID)
	}
	time.Sleep(600 * time.Millisecond)
	if len(p.Running()) != 0 || !dead(second[0].PID) {
		t.Errorf("idle past Idle and still running: %+v", p.Running())
	}
}

// Requests at once on one workspace take the server in turn; each gets
// its own snapshot's answer.
func TestPoolConcurrent(t *testing.T) {
	needGopls(t)
	p := &lsp.Pool{Max: 2}
	usePool(t, p)
	root, files := goProject(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			snap := files
			if i%2 == 1 {
				snap = core.Files{}
				for k, v := range files {
					snap[k] = v
				}
				snap["stats/stats.go"] = append(bytes.Replace(files["stats/stats.go"], []byte("\t\"fmt\"\n"), []byte("\t\"fmt\"\n\t\"strings\"\n"), 1), []byte("\nvar _ = strings.ToUpper\n")...)
			}
			res, err := lsp.OrganizeImports(context.Background(), root, snap, "stats/stats.go")
			if err != nil {
				errs <- err
				return
			}
			if got := strings.Contains(string(res.Next["stats/stats.go"]), "\"strings\""); got != (i%2 == 1) {
				errs <- os.ErrInvalid
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(p.Running()); n != 1 {
		t.Errorf("%d servers for one workspace", n)
	}
}

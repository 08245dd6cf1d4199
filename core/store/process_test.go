package store

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// The tests below run the test binary again as child processes that open
// the same store, the standard helper-process pattern: the child runs only
// TestHelperProcess, which acts on the environment.
const (
	helperEnv     = "JOULE_STORE_HELPER"
	helperPathEnv = "JOULE_STORE_HELPER_PATH"
	helperProcEnv = "JOULE_STORE_HELPER_PROC"
	helperWALEnv  = "JOULE_STORE_HELPER_WAL" // walTruncateAt in the child
)

// sealReport is one seal a child reports on stdout after Seal returned.
type sealReport struct {
	Proc    int    `json:"proc"`
	Session string `json:"session"`
	Seq     uint64 `json:"seq"`
	Index   int64  `json:"index"`
	Hash    string `json:"hash"`
	Kept    bool   `json:"kept"`
}

func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process for TestMultiProcessSeal and TestCrashDuringSeal")
	}
	proc, _ := strconv.Atoi(os.Getenv(helperProcEnv))
	if v, err := strconv.ParseInt(os.Getenv(helperWALEnv), 10, 64); err == nil {
		walTruncateAt = v
	}
	s, err := Open(os.Getenv(helperPathEnv), WithLockTimeout(time.Minute))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var (
		mu  sync.Mutex
		enc = json.NewEncoder(os.Stdout)
	)
	report := func(r sealReport) {
		mu.Lock()
		defer mu.Unlock()
		if err := enc.Encode(r); err != nil {
			os.Exit(3)
		}
	}
	sealOne := func(session string, amount uint64) {
		var kept bool
		e, err := s.Seal(context.Background(), SealRequest{
			Session: session, Debit: []string{"g"}, AmountUJ: amount,
			Build: func(pos Position, debitErr error) ([]byte, bool, error) {
				var be *BudgetError
				if debitErr != nil && !errors.As(debitErr, &be) {
					return nil, false, fmt.Errorf("unexpected debit error: %w", debitErr)
				}
				kept = debitErr == nil
				return envelopeFor(pos, fmt.Sprintf("proc%d:kept=%t", proc, kept)), kept, nil
			},
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
		report(sealReport{proc, e.Session, e.Seq, e.Index, fmt.Sprintf("%x", e.Hash), kept})
	}
	switch mode {
	case "seal":
		// 20 goroutines seal once each into four sessions shared by
		// every process.
		var wg sync.WaitGroup
		for g := range multiGoroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sealOne(fmt.Sprintf("shared-%d", g%4), multiAmount)
			}()
		}
		wg.Wait()
	case "crash":
		// Seal until killed.
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					sealOne(fmt.Sprintf("crash-%d", g%2), 1)
				}
			}()
		}
		wg.Wait()
	case "one":
		// A hook process: one seal, then exit without closing the store.
		sealOne("one", 1)
		os.Exit(0)
	default:
		fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
		os.Exit(5)
	}
	s.Close()
	os.Exit(0)
}

// TestWALBoundedAcrossProcesses runs one-shot processes one after another,
// each sealing once and exiting without closing the store, as hooks do.
// SQLite alone would let the log grow by every seal and make each process
// read all of it; the store keeps it under walTruncateAt plus one write.
func TestWALBoundedAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns 10 processes")
	}
	// A small bound, so that a few processes (race-instrumented under
	// make test) cross it several times.
	const bound = 64 << 10
	path := filepath.Join(t.TempDir(), "joule.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	const procs = 10
	putGrant(t, s, "g", "", procs)
	s.Close()
	var largest int64
	truncated := false
	for p := range procs {
		cmd := helperCmd(t, "one", path, p)
		cmd.Env = append(cmd.Env, helperWALEnv+"="+strconv.FormatInt(bound, 10))
		if out, err := cmd.Output(); err != nil {
			t.Fatalf("child %d: %v %s", p, err, out)
		}
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		largest = max(largest, fi.Size())
		truncated = truncated || fi.Size() < largest
	}
	// One seal writes a few pages; 64 KiB is ample headroom for it.
	if limit := int64(bound + 64<<10); largest > limit {
		t.Errorf("write-ahead log reached %d bytes, want at most %d", largest, limit)
	}
	if !truncated {
		t.Errorf("write-ahead log never truncated in %d processes (largest %d bytes)", procs, largest)
	}
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Verify(context.Background()); err != nil {
		t.Fatal(err)
	}
	entries, err := s.Session(context.Background(), "one")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != procs {
		t.Errorf("session has %d receipts, want %d", len(entries), procs)
	}
}

func helperCmd(t *testing.T, mode, path string, proc int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		helperEnv+"="+mode, helperPathEnv+"="+path, helperProcEnv+"="+strconv.Itoa(proc))
	cmd.Stderr = os.Stderr
	return cmd
}

func readReports(t *testing.T, out []byte) []sealReport {
	t.Helper()
	var rs []sealReport
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" || !strings.HasPrefix(line, "{") {
			continue // test framework chatter
		}
		var r sealReport
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("child output %q: %v", line, err)
		}
		rs = append(rs, r)
	}
	return rs
}

const (
	multiProcs      = 16
	multiGoroutines = 20
	multiAmount     = 1000
	multiPaid       = 100 // the grant's budget pays for exactly this many seals
	parentSeals     = 5
)

func TestMultiProcessSeal(t *testing.T) { forBackends(t, testMultiProcessSeal) }

func testMultiProcessSeal(t *testing.T, be backend) {
	if testing.Short() {
		t.Skip("spawns 16 processes")
	}
	path := be.fresh(t)
	s, err := Open(path, WithLockTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	putGrant(t, s, "g", "", multiPaid*multiAmount)
	for range parentSeals {
		seal(t, s, "parent", nil, 0, "before")
	}
	signer, verifier := testSigner(t), testVerifier(t)
	cpA, err := s.Checkpoint(ctx, "joule.test/multi", signer)
	if err != nil {
		t.Fatal(err)
	}

	outs := make([][]byte, multiProcs)
	errs := make([]error, multiProcs)
	var wg sync.WaitGroup
	for p := range multiProcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[p], errs[p] = helperCmd(t, "seal", path, p).Output()
		}()
	}
	// Contend with the children from the parent too.
	for range 3 {
		if _, err := s.Checkpoint(ctx, "joule.test/multi", signer); err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
	var reports []sealReport
	for p := range multiProcs {
		if errs[p] != nil {
			t.Fatalf("child %d: %v", p, errs[p])
		}
		rs := readReports(t, outs[p])
		if len(rs) != multiGoroutines {
			t.Fatalf("child %d reported %d seals, want %d", p, len(rs), multiGoroutines)
		}
		reports = append(reports, rs...)
	}
	cpB, err := s.Checkpoint(ctx, "joule.test/multi", signer)
	if err != nil {
		t.Fatal(err)
	}

	// Exactly the paid-for debits were kept, and the grant agrees.
	kept := 0
	for _, r := range reports {
		if r.Kept {
			kept++
		}
	}
	if kept != multiPaid {
		t.Errorf("%d debits kept, the budget pays for exactly %d", kept, multiPaid)
	}
	g, err := s.Grant(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if g.SpentUJ != multiPaid*multiAmount || g.RemainingUJ() != 0 {
		t.Errorf("grant spent %d remaining %d, want %d and 0", g.SpentUJ, g.RemainingUJ(), multiPaid*multiAmount)
	}
	ledger, err := s.Ledger(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if len(ledger) != multiPaid {
		t.Errorf("ledger has %d debits, want %d", len(ledger), multiPaid)
	}

	// Every reported seal is stored where the child was told it went;
	// chains, indexes and the tree are consistent.
	entries := checkConsistent(t, s)
	total := parentSeals + multiProcs*multiGoroutines
	if len(entries) != total {
		t.Fatalf("log has %d entries, want %d", len(entries), total)
	}
	for _, r := range reports {
		e := entries[r.Index]
		if e.Session != r.Session || e.Seq != r.Seq || fmt.Sprintf("%x", e.Hash) != r.Hash {
			t.Errorf("child %d reported %s/%d at %d, store has %s/%d", r.Proc, r.Session, r.Seq, r.Index, e.Session, e.Seq)
		}
		_, tag, err := parseEnvelope(e.Envelope)
		if err != nil || tag != fmt.Sprintf("proc%d:kept=%t", r.Proc, r.Kept) {
			t.Errorf("entry %d tag %q, %v", r.Index, tag, err)
		}
	}
	for i := range 4 {
		es, err := s.Session(ctx, fmt.Sprintf("shared-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if want := multiProcs * multiGoroutines / 4; len(es) != want {
			t.Errorf("session shared-%d has %d entries, want %d", i, len(es), want)
		}
	}

	// Both checkpoints verify, and the log between them is provably
	// append-only.
	a := openCheckpoint(t, cpA, verifier)
	b := openCheckpoint(t, cpB, verifier)
	if a.Size != parentSeals || b.Size != int64(total) {
		t.Fatalf("checkpoint sizes %d and %d, want %d and %d", a.Size, b.Size, parentSeals, total)
	}
	tp, err := s.ProveTree(ctx, a.Size, b.Size)
	if err != nil {
		t.Fatal(err)
	}
	if err := tlog.CheckTree(tp, b.Size, b.Root, a.Size, a.Root); err != nil {
		t.Errorf("tree proof between checkpoints: %v", err)
	}
	for _, e := range entries {
		for _, c := range []Checkpoint{a, b} {
			if e.Index >= c.Size {
				continue
			}
			rp, err := s.ProveRecord(ctx, e.Index, c.Size)
			if err != nil {
				t.Fatal(err)
			}
			if err := tlog.CheckRecord(rp, c.Size, c.Root, e.Index, tlog.RecordHash(e.Envelope)); err != nil {
				t.Fatalf("record %d in checkpoint of size %d: %v", e.Index, c.Size, err)
			}
		}
	}
}

func openCheckpoint(t *testing.T, msg []byte, v note.Verifier) Checkpoint {
	t.Helper()
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		t.Fatalf("checkpoint does not verify: %v", err)
	}
	c, err := ParseCheckpoint([]byte(n.Text))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCrashDuringSeal kills a sealing child with SIGKILL and checks that
// every seal it reported survived and the store is consistent.
func TestCrashDuringSeal(t *testing.T) { forBackends(t, testCrashDuringSeal) }

func testCrashDuringSeal(t *testing.T, b backend) {
	path := b.fresh(t)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	putGrant(t, s, "g", "", 1<<40)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	cmd := helperCmd(t, "crash", path, 0)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var reports []sealReport
	sc := bufio.NewScanner(stdout)
	killed := false
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var r sealReport
		if err := json.Unmarshal(line, &r); err != nil {
			// The kill can cut a line short; nothing after it counts.
			if killed {
				break
			}
			t.Fatalf("child output %q: %v", line, err)
		}
		reports = append(reports, r)
		if len(reports) == 150 && !killed {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v", err)
	}

	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	entries := checkConsistent(t, s)
	if len(entries) < len(reports) {
		t.Fatalf("store has %d entries, child reported %d sealed", len(entries), len(reports))
	}
	for _, r := range reports {
		e := entries[r.Index]
		if e.Session != r.Session || e.Seq != r.Seq || fmt.Sprintf("%x", e.Hash) != r.Hash {
			t.Errorf("reported seal %s/%d at %d lost or changed: store has %s/%d", r.Session, r.Seq, r.Index, e.Session, e.Seq)
		}
	}
	// Every receipt paid exactly its debit: no debit without a receipt.
	g, err := s.Grant(context.Background(), "g")
	if err != nil {
		t.Fatal(err)
	}
	if g.SpentUJ != uint64(len(entries)) {
		t.Errorf("spent %d µJ for %d receipts of 1 µJ each", g.SpentUJ, len(entries))
	}
	t.Logf("child reported %d seals before SIGKILL; store holds %d", len(reports), len(entries))
	// The store keeps going where the child stopped.
	e := seal(t, s, "crash-0", []string{"g"}, 1, "after")
	if e.Index != int64(len(entries)) {
		t.Errorf("next seal at index %d, want %d", e.Index, len(entries))
	}
	checkConsistent(t, s)
}

package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/energy"
)

func journals(t *testing.T, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// TestRecoverDeadJournal: a proxy that died had journaled three receipts
// drawing on its lease (one first as the worst case it was admitted at),
// sealed one of them and marked none done, had admitted a fourth call whose
// usage it never journaled, and its last line was torn. Recover seals the
// others, once each, charges each call's last journaled draw, gives the
// lease back, removes the journal, and leaves a live proxy's journal alone.
func TestRecoverDeadJournal(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no journal without flock")
	}
	t.Run("mapped", recoverDeadJournal)
	t.Run("written", func(t *testing.T) {
		defer func(m func(*os.File, int64) ([]byte, error)) { mapJournal = m }(mapJournal)
		mapJournal = func(*os.File, int64) ([]byte, error) { return nil, errors.ErrUnsupported }
		recoverDeadJournal(t)
	})
}

func recoverDeadJournal(t *testing.T) {
	dir := t.TempDir()
	jdir := filepath.Join(dir, JournalDir)
	r := newRigIn(t, dir, big, func(c *Config) { c.Journal = jdir })
	r.do("POST", "/v1/messages", benchBody) // the live proxy's own journal and lease
	r.proxy.Wait()
	ctx := context.Background()
	before, err := r.st.Grant(ctx, r.grantID)
	if err != nil {
		t.Fatal(err)
	}
	recorder := r.proxy.cfg.Recorder

	dead, err := openJournal(jdir)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := r.st.Reserve(ctx, []string{r.grantID}, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	var nonces []string
	var together []energy.Record // sealed, in one receipt, then killed before marked done
	for i := range 4 {
		nonce, err := core.NewNonce()
		if err != nil {
			t.Fatal(err)
		}
		nonces = append(nonces, nonce)
		rec := energy.Record{
			Session: "dead", Unit: "model-call", Model: "claude-test", Usage: energy.Usage{Input: 10, Output: uint64(i + 1)},
			Estimate: energy.Estimate{UJ: 100, Provenance: core.Estimator}, Coverage: receipts.CoverageEnforced,
			Complete: true, Grants: []string{r.grantID}, Time: time.Now(),
			Draw: &store.Draw{Reservation: lease, ReleaseUJ: 300, ChargeUJ: 100}, Nonce: nonce,
		}
		if i == 1 { // admitted: the worst case, which the usage below replaces
			worst := rec
			worst.Draw = &store.Draw{Reservation: lease, ReleaseUJ: 300, ChargeUJ: 300}
			if err := dead.begin(worst); err != nil {
				t.Fatal(err)
			}
		}
		if err := dead.begin(rec); err != nil {
			t.Fatal(err)
		}
		if i == 0 || i == 3 {
			together = append(together, rec)
		}
	}
	_, sealed, errs := recorder.SealBatch(ctx, together)
	if errs[0] != nil || errs[1] != nil || sealed[0] != sealed[1] || sealed[0].CallCount() != 2 {
		t.Fatalf("two calls were not sealed in one receipt: %v", errs)
	}
	// Admitted and answered, killed before its usage was journaled: sealed
	// incomplete, charged its whole estimate.
	worstNonce, _ := core.NewNonce()
	nonces = append(nonces, worstNonce)
	if err := dead.begin(energy.Record{Session: "dead", Unit: "model-call", Model: "claude-test",
		Estimate: energy.Estimate{UJ: 50, Provenance: core.Estimator}, Coverage: receipts.CoverageEnforced,
		Note: "the proxy stopped before this call ended", Grants: []string{r.grantID}, Time: time.Now(),
		Draw: &store.Draw{Reservation: lease, ReleaseUJ: 50, ChargeUJ: 50}, Nonce: worstNonce}); err != nil {
		t.Fatal(err)
	}
	dead.held = append(dead.held, `{"seal":{"written":"2026-`...) // torn by a power loss
	dead.flushLocked(nil)
	dead.closeLocked() // the process dies: its mapping and its lock go with it

	got, err := Recover(ctx, jdir, recorder, r.st)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Recovered{Journals: 1, Sealed: 3, Already: 2, Leases: 1}); got != want {
		t.Errorf("Recover = %+v, want %+v", got, want)
	}
	if left := journals(t, jdir); len(left) != 1 || left[0] != r.proxy.journal.path {
		t.Errorf("journals left %v, want only the live proxy's %s", left, r.proxy.journal.path)
	}
	seen := map[string]int{}
	for _, e := range r.receipts("dead") {
		seen[e.Nonce]++
	}
	for _, n := range nonces {
		if seen[n] != 1 {
			t.Errorf("receipt with nonce %s sealed %d times, want once", n, seen[n])
		}
	}
	if len(seen) != len(nonces) {
		t.Errorf("session has %d receipts, want %d", len(seen), len(nonces))
	}
	after, err := r.st.Grant(ctx, r.grantID)
	if err != nil {
		t.Fatal(err)
	}
	if after.SpentUJ-before.SpentUJ != 450 {
		t.Errorf("spent %d µJ more, want 450 (four calls' usage of 100, and 50 for one whose usage never came)", after.SpentUJ-before.SpentUJ)
	}
	if after.ReservedUJ != before.ReservedUJ {
		t.Errorf("reserved %d µJ after recovery, %d before the dead lease: it was not given back", after.ReservedUJ, before.ReservedUJ)
	}
	again, err := Recover(ctx, jdir, recorder, r.st)
	if err != nil || again != (Recovered{}) {
		t.Errorf("second Recover = %+v, %v; want nothing to do", again, err)
	}
}

// TestRecoverLeaseGone: the dead proxy's lease was already released (found
// stale): the receipt is still sealed, saying its lease could not be
// charged.
func TestRecoverLeaseGone(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no journal without flock")
	}
	dir := t.TempDir()
	jdir := filepath.Join(dir, JournalDir)
	r := newRigIn(t, dir, big)
	ctx := context.Background()
	dead, err := openJournal(jdir)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := r.st.Reserve(ctx, []string{r.grantID}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	nonce, _ := core.NewNonce()
	rec := energy.Record{Session: "gone", Unit: "model-call", Model: "m", Estimate: energy.Estimate{UJ: 5, Provenance: core.Estimator},
		Coverage: receipts.CoverageEnforced, Grants: []string{r.grantID}, Time: time.Now(),
		Draw: &store.Draw{Reservation: lease, ReleaseUJ: 10, ChargeUJ: 5}, Nonce: nonce}
	if err := dead.begin(rec); err != nil {
		t.Fatal(err)
	}
	dead.closeLocked()
	if err := r.st.Release(ctx, lease); err != nil {
		t.Fatal(err)
	}
	got, err := Recover(ctx, jdir, r.proxy.cfg.Recorder, r.st)
	if err != nil {
		t.Fatal(err)
	}
	if got.Sealed != 1 {
		t.Fatalf("Recover = %+v, want one sealed", got)
	}
	rs := r.receipts("gone")
	if len(rs) != 1 || rs[0].Nonce != nonce || !strings.Contains(rs[0].Note, "charging the call's lease failed") {
		t.Errorf("receipts %+v, want one with nonce %s saying its lease could not be charged", rs, nonce)
	}
}

// TestJournalRemovedOnClose: a proxy that shuts down with every receipt
// sealed leaves no journal behind, and one that marks receipts done keeps
// its journal from growing without bound.
func TestJournalRemovedOnClose(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no journal without flock")
	}
	jdir := filepath.Join(t.TempDir(), JournalDir)
	r := newRig(t, big, func(c *Config) { c.Journal = jdir })
	for range 5 {
		r.do("POST", "/v1/messages", benchBody)
	}
	r.proxy.Wait()
	b, err := os.ReadFile(r.proxy.journal.path)
	if err != nil {
		t.Fatal(err)
	}
	// Done lines go out with the next line written; those not yet written
	// are held.
	n, held := strings.Count(string(b), "\n"), bytes.Count(r.proxy.journal.held, []byte("\n"))
	if n+held != 15 || n < 10 {
		t.Errorf("journal has %d lines and holds %d, want 15 in all, 10 written (per call: admitted, used, done)", n, held)
	}
	if p := len(r.proxy.journal.pending); p != 0 {
		t.Errorf("%d receipts pending after every call was sealed", p)
	}
	r.proxy.Close()
	if left := journals(t, jdir); len(left) != 0 {
		t.Errorf("journals left after Close: %v", left)
	}
}

// TestJournalCompacts: with nothing pending, a journal past its size bound
// is emptied; it never holds much more than the bound.
func TestJournalCompacts(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no journal without flock")
	}
	j, err := openJournal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	rec := energy.Record{Session: "s", Note: strings.Repeat("x", 4096)}
	emptied, written := 0, 0
	for written < 3*journalCompactAt {
		rec.Nonce, _ = core.NewNonce()
		before := j.size
		if err := j.begin(rec); err != nil {
			t.Fatal(err)
		}
		written += int(j.size - before)
		if err := j.done(rec.Nonce); err != nil {
			t.Fatal(err)
		}
		if j.size == 0 {
			emptied++
		}
		if held := j.size + int64(len(j.held)); held > journalCompactAt+8<<10 {
			t.Fatalf("journal holds %d bytes with nothing pending, bound %d", held, journalCompactAt)
		}
	}
	if emptied < 2 || j.spare != nil {
		t.Errorf("emptied %d times (spare %v) in %d bytes written, want at least twice, in place", emptied, j.spare != nil, written)
	}
	b, err := os.ReadFile(j.path)
	if err != nil {
		t.Fatal(err)
	}
	if lines := bytes.TrimRight(b, "\x00"); int64(len(lines)) != j.size {
		t.Errorf("file holds %d bytes of lines, journal tracks %d", len(lines), j.size)
	}
}

// TestJournalRotates: under a load that always leaves calls pending, the
// journal moves what is pending to its other file past the bound and
// empties the first, so it stays bounded; a proxy killed then, or killed in
// the middle of a move (pending lines in both files), has each pending
// receipt sealed once, at its latest line, and both files removed.
func TestJournalRotates(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no journal without flock")
	}
	for _, mapped := range []bool{true, false} {
		for _, midMove := range []bool{false, true} {
			name := fmt.Sprintf("mapped=%v/killed-mid-move=%v", mapped, midMove)
			t.Run(name, func(t *testing.T) {
				if !mapped {
					defer func(m func(*os.File, int64) ([]byte, error)) { mapJournal = m }(mapJournal)
					mapJournal = func(*os.File, int64) ([]byte, error) { return nil, errors.ErrUnsupported }
				}
				journalRotates(t, midMove)
			})
		}
	}
}

func journalRotates(t *testing.T, midMove bool) {
	dir := t.TempDir()
	jdir := filepath.Join(dir, JournalDir)
	r := newRigIn(t, dir, big)
	ctx := context.Background()
	before, err := r.st.Grant(ctx, r.grantID)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := r.st.Reserve(ctx, []string{r.grantID}, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	j, err := openJournal(jdir)
	if err != nil {
		t.Fatal(err)
	}
	pending := map[string]bool{}
	rotations, lastPath := 0, j.path
	note := strings.Repeat("z", 2048)
	for i := 0; rotations < 3; i++ {
		rec := energy.Record{
			Session: "busy", Unit: "model-call", Model: "claude-test", Usage: energy.Usage{Input: 10, Output: 1},
			Estimate: energy.Estimate{UJ: 100, Provenance: core.Estimator}, Coverage: receipts.CoverageEnforced,
			Complete: true, Grants: []string{r.grantID}, Time: time.Now(), Note: note,
		}
		rec.Nonce, _ = core.NewNonce()
		worst := rec
		worst.Draw = &store.Draw{Reservation: lease, ReleaseUJ: 300, ChargeUJ: 300}
		if err := j.begin(worst); err != nil { // admitted
			t.Fatal(err)
		}
		rec.Draw = &store.Draw{Reservation: lease, ReleaseUJ: 300, ChargeUJ: 100}
		if err := j.beginAll([]energy.Record{rec}); err != nil { // what it used
			t.Fatal(err)
		}
		if i%9 == 0 { // never sealed: pending when the proxy dies
			pending[rec.Nonce] = true
			continue
		}
		if err := j.done(rec.Nonce); err != nil {
			t.Fatal(err)
		}
		if j.path != lastPath {
			rotations, lastPath = rotations+1, j.path
		}
		if held := j.size + int64(len(j.held)); held > journalCompactAt+16<<10 {
			t.Fatalf("journal holds %d bytes, bound %d", held, journalCompactAt)
		}
	}
	if len(j.pending) != len(pending) {
		t.Fatalf("journal has %d pending, want %d", len(j.pending), len(pending))
	}
	if midMove {
		// Killed with the pending lines copied to the other file and the
		// current one not yet emptied.
		for _, at := range j.pending {
			line, err := j.segment.line(at)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := j.spare.write(line, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	j.mu.Lock()
	j.closeLocked() // killed
	j.mu.Unlock()
	base := strings.TrimSuffix(filepath.Base(j.path), ".1.jsonl")
	base = strings.TrimSuffix(base, ".jsonl")
	ours := func() (paths []string) {
		for _, p := range journals(t, jdir) {
			if strings.HasPrefix(filepath.Base(p), base) {
				paths = append(paths, p)
			}
		}
		return paths
	}
	if len(ours()) != 2 {
		t.Fatalf("journals %v, want two files of %s", journals(t, jdir), base)
	}

	got, err := Recover(ctx, jdir, r.proxy.cfg.Recorder, r.st)
	if err != nil {
		t.Fatal(err)
	}
	want := Recovered{Journals: 2, Sealed: len(pending), Leases: 1}
	if midMove {
		want.Already, want.Leases = len(pending), 2 // the same lease, named in both files
	}
	if got != want {
		t.Errorf("Recover = %+v, want %+v", got, want)
	}
	if left := ours(); len(left) != 0 {
		t.Errorf("journals left after recovery: %v", left)
	}
	seen := map[string]int{}
	for _, e := range r.receipts("busy") {
		seen[e.Nonce]++
	}
	for n := range pending {
		if seen[n] != 1 {
			t.Errorf("pending receipt %s sealed %d times, want once", n, seen[n])
		}
	}
	if len(seen) != len(pending) {
		t.Errorf("%d receipts sealed, want the %d pending", len(seen), len(pending))
	}
	after, err := r.st.Grant(ctx, r.grantID)
	if err != nil {
		t.Fatal(err)
	}
	if spent := after.SpentUJ - before.SpentUJ; spent != uint64(100*len(pending)) {
		t.Errorf("spent %d µJ, want %d: each pending call at its used draw, not its worst case", spent, 100*len(pending))
	}
}

// TestJournalMapped: lines go into the mapped file as they would be
// written, outlive the journal's close as they outlive its process, grow
// the mapping past its first length, and are read back up to the NULs.
func TestJournalMapped(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no journal without flock")
	}
	dir := t.TempDir()
	j, err := openJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if j.m == nil {
		t.Fatal("the journal is not mapped")
	}
	rec := energy.Record{Session: "s", Note: strings.Repeat("y", 64<<10)}
	var nonces []string
	for range 2 * journalMapSize / (64 << 10) { // twice the first mapping, all pending
		rec.Nonce, _ = core.NewNonce()
		nonces = append(nonces, rec.Nonce)
		if err := j.begin(rec); err != nil {
			t.Fatal(err)
		}
	}
	if len(j.m) <= journalMapSize {
		t.Fatalf("mapping is %d bytes after %d written", len(j.m), j.size)
	}
	size := j.size
	j.mu.Lock()
	j.closeLocked() // killed: nothing flushed, nothing removed
	j.mu.Unlock()
	b, err := os.ReadFile(j.path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.TrimRight(b, "\x00")
	if int64(len(lines)) != size || bytes.IndexByte(lines, 0) >= 0 {
		t.Fatalf("file holds %d bytes of lines, %d were journaled", len(lines), size)
	}
	sc := bufio.NewScanner(untilNUL{bytes.NewReader(b)})
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var l journalLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.Seal == nil || l.Seal.Record.Nonce != nonces[n] {
			t.Fatalf("line %d: %v", n, err)
		}
		n++
	}
	if sc.Err() != nil || n != len(nonces) {
		t.Fatalf("read %d lines back (%v), want %d", n, sc.Err(), len(nonces))
	}
}

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

var lookPath = exec.LookPath

type tokenCounter interface {
	tokens() (calls int, in, out uint64)
}

// checkSealed checks the session's receipts: one L4 coding op whose efficiency
// receipt names the files, carries the tokens the fake endpoint reported
// (metered by joule proxy, in this session) and names the proxy's receipts.
func checkSealed(t testing.TB, h *home, s *acpSession, api tokenCounter, files []string) {
	t.Helper()
	rs := h.receipts(t, string(s.id))
	var l4 []map[string]any
	for _, r := range rs {
		if r["jc_receipt"] == "efficiency/1" && r["unit"] != "model-call" && r["tier"] == "L4" {
			l4 = append(l4, r)
		}
	}
	fin, fout := metered(t, rs, api)
	if len(l4) != 1 {
		t.Fatalf("%d L4 efficiency receipts, want 1:\n%v", len(l4), rs)
	}
	r := l4[0]
	note, _ := r["note"].(string)
	t.Logf("L4 receipt: %v", r)
	if r["unit"] != "coding-op" || r["op_id"] == nil || r["op_id"] == "" {
		t.Errorf("the L4 receipt is not a coding op: %v", r)
	}
	if got := num(r["input_tokens"]) + num(r["cached_input_tokens"]) + num(r["cache_write_tokens"]); got != fin || num(r["output_tokens"]) != fout {
		t.Errorf("the L4 receipt carries %d in, %v out; the session's model calls hold %d in, %d out", got, r["output_tokens"], fin, fout)
	}
	if !strings.Contains(note, "metered by joule proxy") || !strings.Contains(note, "receipts #") {
		t.Errorf("the L4 receipt's note does not name the proxy's receipts: %s", note)
	}
	sort.Strings(files)
	if !strings.Contains(note, "changed "+itoa(len(files))+" file(s)") {
		t.Errorf("the op does not hold the %d changed files %v: %s", len(files), files, note)
	}
}

func num(v any) uint64 {
	switch n := v.(type) {
	case uint64:
		return n
	case int64:
		return uint64(n)
	case float64:
		return uint64(n)
	}
	return 0
}

func itoa(n int) string { return strconv.Itoa(n) }

// metered checks that every model call the endpoint answered is a
// model-call receipt of the session (joule proxy metered it there), and
// returns the tokens they hold. A call still in flight when L4 ended the
// remote's turn (Claude Code titles a session in the background) is sealed
// incomplete, its input estimated by the proxy; at most one may be, and
// the complete ones carry exactly what the endpoint reported.
func metered(t testing.TB, rs []map[string]any, api tokenCounter) (in, out uint64) {
	t.Helper()
	calls, incomplete := 0, 0
	cin, cout := uint64(0), uint64(0)
	for _, r := range rs {
		if r["jc_receipt"] != "efficiency/1" || r["unit"] != "model-call" {
			continue
		}
		calls++
		rin, rout := num(r["input_tokens"])+num(r["cached_input_tokens"])+num(r["cache_write_tokens"]), num(r["output_tokens"])
		in, out = in+rin, out+rout
		if r["status"] != "complete" {
			incomplete++
			t.Logf("an incomplete model-call receipt (a call the remote's end cut off): %v", r)
			continue
		}
		cin, cout = cin+rin, cout+rout
	}
	fc, fin, fout := api.tokens()
	switch {
	case calls == 0 || calls != fc:
		t.Errorf("the session holds %d model-call receipts; the endpoint answered %d calls", calls, fc)
	case incomplete == 0 && (cin != fin || cout != fout):
		t.Errorf("the session's model calls hold %d in, %d out; the endpoint reported %d in, %d out", cin, cout, fin, fout)
	case incomplete > 1 || cin > fin || cout > fout:
		t.Errorf("%d incomplete model-call receipts; the complete ones hold %d in, %d out of the endpoint's %d in, %d out", incomplete, cin, cout, fin, fout)
	}
	return in, out
}

// resultLog is a fake model endpoint that records the tool results the
// agent sent back to the model.
type resultLog interface {
	resultCount() int
	resultsFrom(n int) []string
}

func (f *fakeAnthropic) resultCount() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.results) }
func (f *fakeAnthropic) resultsFrom(n int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.results[n:]...)
}
func (f *fakeGeminiAPI) resultCount() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.results) }
func (f *fakeGeminiAPI) resultsFrom(n int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.results[n:]...)
}

// checkDeniedTurn puts p to the session under a denying grant: the turn
// ends, nothing had to be undone, and every tool result the model got
// reports a failure (refused says which do); with needResult the model
// got at least one.
func checkDeniedTurn(t *testing.T, s *acpSession, api resultLog, p string, needResult bool, refused func(string) bool) {
	t.Helper()
	seen := api.resultCount()
	stop, said := s.prompt(t, p)
	results := api.resultsFrom(seen)
	t.Logf("%q: the editor saw:\n%s\ntool results: %v", p, said, results)
	if stop != acp.StopReasonEndTurn {
		t.Errorf("%q: stop %s", p, stop)
	}
	if strings.Contains(said, "undid") {
		t.Errorf("%q: joule had to undo a change: the kernel should have refused it: %s", p, said)
	}
	if needResult && len(results) == 0 {
		t.Errorf("%q: the model got no tool result", p)
	}
	for _, r := range results {
		if !refused(r) {
			t.Errorf("%q: the agent's tool did not report a failure to the model: %s", p, r)
		}
	}
}

// checkNothingWritten: none of the files the denied prompts try to make
// exists, in the workspace or next to it.
func checkNothingWritten(t *testing.T, h *home) {
	t.Helper()
	for _, f := range []string{filepath.Join(h.ws, "out.txt"), filepath.Join(h.ws, "ran.txt"), filepath.Join(h.dir, "outside.txt")} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s exists: the grant denied it", f)
		}
	}
}

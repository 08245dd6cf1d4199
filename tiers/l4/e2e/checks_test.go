package e2e

import (
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
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
	calls, in, out := 0, uint64(0), uint64(0)
	for _, r := range rs {
		if r["jc_receipt"] != "efficiency/1" {
			continue
		}
		switch {
		case r["unit"] == "model-call":
			calls++
			in += num(r["input_tokens"]) + num(r["cached_input_tokens"]) + num(r["cache_write_tokens"])
			out += num(r["output_tokens"])
		case r["tier"] == "L4":
			l4 = append(l4, r)
		}
	}
	fc, fin, fout := api.tokens()
	if calls == 0 || calls != fc || in != fin || out != fout {
		t.Errorf("the session holds %d model-call receipts (%d in, %d out); the endpoint answered %d calls (%d in, %d out)", calls, in, out, fc, fin, fout)
	}
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
		t.Errorf("the L4 receipt carries %d in, %v out; the endpoint reported %d in, %d out", got, r["output_tokens"], fin, fout)
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

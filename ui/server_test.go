package ui

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/core/store/pgtest"
	"github.com/joulehook/joule/energy"
)

type fixture struct {
	t    *testing.T
	st   *store.Store
	id   *identity.Identity
	rec  *energy.Recorder
	srv  *Server
	http *httptest.Server
	db   string
}

func newFixture(t *testing.T) *fixture { return newFixtureAt(t, "") }

// newFixtureAt serves the store at loc (a postgres:// URL), or a new
// SQLite file when loc is empty.
func newFixtureAt(t *testing.T, loc string) *fixture {
	t.Helper()
	home := t.TempDir()
	id, err := identity.Create(home, "ui.joule.test", false)
	if err != nil {
		t.Fatal(err)
	}
	db := loc
	if db == "" {
		db = filepath.Join(home, "joule.db")
	}
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sealer, _ := id.Sealer()
	trust := grant.Trust{id.Steward: id.Public()}
	keys, err := receipts.NewKeys(trust)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Store: st, Keys: keys, Trust: trust, VerifierKey: id.VerifierKey, Steward: id.Steward, Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	srv.idx.fresh = 0 // every request re-reads: the tests edit the store under it
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &fixture{t: t, st: st, id: id, rec: &energy.Recorder{Store: st, Sealer: sealer}, srv: srv, http: hs, db: db}
}

func (f *fixture) seal(session string, n int, cov string) {
	f.t.Helper()
	for i := 0; i < n; i++ {
		if _, _, err := f.rec.Seal(context.Background(), energy.Record{Session: session, Unit: "model-call", Model: "m", Coverage: cov, Complete: true,
			Usage: energy.Usage{Input: 10, Output: 5}, Estimate: energy.Estimate{UJ: 1000, Provenance: core.Estimator}}); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *fixture) get(path string, v any) int {
	f.t.Helper()
	req, _ := http.NewRequest("GET", f.http.URL+path, nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			f.t.Fatalf("%s: %v: %s", path, err, b)
		}
	}
	return resp.StatusCode
}

func TestCheckAddr(t *testing.T) {
	for _, c := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:0", true}, {"127.0.0.1:8080", true}, {"[::1]:9", true}, {"localhost:80", true}, {"127.9.9.9:1", true},
		{"0.0.0.0:8080", false}, {":8080", false}, {"192.168.1.2:80", false}, {"[::]:80", false}, {"example.com:80", false},
		{"127.0.0.1", false}, {"127.0.0.1:99999", false}, {"127.0.0.1:http", false}, {"", false},
	} {
		if err := CheckAddr(c.addr); (err == nil) != c.ok {
			t.Errorf("CheckAddr(%q) = %v, want ok %v", c.addr, err, c.ok)
		}
	}
}

func TestGuard(t *testing.T) {
	f := newFixture(t)
	f.seal("s1", 1, receipts.CoverageEnforced)
	for _, c := range []struct {
		name, method, path, host, origin, auth string
		code                                   int
	}{
		{"page", "GET", "/?token=tok", "", "", "", 200},
		{"api by header", "GET", "/api/sessions", "", "", "Bearer tok", 200},
		{"api by query", "GET", "/api/sessions?token=tok", "", "", "", 200},
		{"no token", "GET", "/", "", "", "", 401},
		{"no token api", "GET", "/api/sessions", "", "", "", 401},
		{"wrong token", "GET", "/?token=tik", "", "", "", 401},
		{"prefix of the token", "GET", "/?token=to", "", "", "", 401},
		{"wrong bearer", "GET", "/api/sessions", "", "", "Bearer nope", 401},
		{"events without token", "GET", "/api/events", "", "", "", 401},
		{"dns rebinding", "GET", "/?token=tok", "attacker.example:80", "", "", 403},
		{"cross origin", "GET", "/api/sessions?token=tok", "", "http://attacker.example", "", 403},
		{"post", "POST", "/api/sessions?token=tok", "", "", "", 405},
		{"delete", "DELETE", "/api/grants?token=tok", "", "", "", 405},
		{"unknown page", "GET", "/etc/passwd?token=tok", "", "", "", 404},
	} {
		req, _ := http.NewRequest(c.method, f.http.URL+c.path, nil)
		if c.host != "" {
			req.Host = c.host
		}
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("%s: %d, want %d (%s)", c.name, resp.StatusCode, c.code, b)
		}
		if c.code >= 400 && (strings.Contains(string(b), "s1") || strings.Contains(string(b), "<script")) {
			t.Errorf("%s: served data with a %d: %s", c.name, c.code, b)
		}
	}
}

func TestBadInput(t *testing.T) {
	f := newFixture(t)
	f.seal("s1", 3, receipts.CoverageEnforced)
	for _, c := range []struct {
		path string
		code int
		want string
	}{
		{"/api/chain?id=s1&offset=banana", 400, "offset"},
		{"/api/chain?id=s1&limit=0", 400, "limit"},
		{"/api/chain?id=s1&limit=100000", 400, "limit"},
		{"/api/chain?id=s1&offset=-1", 400, "offset"},
		{"/api/chain", 400, "session id"},
		{"/api/session?id=nope", 404, "no such session"},
		{"/api/receipt?id=s1&seq=0", 400, "seq"},
		{"/api/receipt?id=s1&seq=99", 404, "no receipt with seq 99"},
		{"/api/receipt?id=s1", 400, "sequence number"},
		{"/api/sessions?limit=x", 400, "limit"},
		{"/api/session?id=" + strings.Repeat("x", 300), 400, "not a session id"},
	} {
		var body map[string]string
		if code := f.get(c.path, &body); code != c.code || !strings.Contains(body["error"], c.want) {
			t.Errorf("%s: %d %q, want %d with %q", c.path, code, body["error"], c.code, c.want)
		}
	}
	// A store that is down: a clear message, never a trace.
	f.st.Close()
	var body map[string]string
	if code := f.get("/api/sessions", &body); code != 503 || !strings.Contains(body["error"], "the store cannot be read") {
		t.Errorf("closed store: %d %q", code, body["error"])
	}
}

// TestChainFollowsTheStore: the index extends a chain as it grows and
// judges it again when its bytes change; its verdicts are always those of
// receipts.Keys.Verdicts over the whole chain as stored.
func TestChainFollowsTheStore(t *testing.T) {
	f := newFixture(t)
	keys, _ := receipts.NewKeys(grant.Trust{f.id.Steward: f.id.Public()})
	type chainResp struct {
		Total    int    `json:"total"`
		Rows     []Row  `json:"rows"`
		Damaged  int    `json:"damaged"`
		FirstBad uint64 `json:"first_bad"`
	}
	check := func(step string) chainResp {
		t.Helper()
		var got chainResp
		if code := f.get("/api/chain?id=s&limit=1000", &got); code != 200 {
			t.Fatalf("%s: %d", step, code)
		}
		rows, err := f.st.SessionRows(context.Background(), "s")
		if err != nil {
			t.Fatal(err)
		}
		envs := make([][]byte, len(rows))
		for i, r := range rows {
			envs[i] = r.Envelope
		}
		want := keys.Verdicts(envs)
		if len(got.Rows) != len(want) {
			t.Fatalf("%s: %d rows, want %d", step, len(got.Rows), len(want))
		}
		for i := range want {
			if got.Rows[i].Verdict != want[i].Verdict && !(got.Rows[i].Verdict == VerdictBadRow && want[i].Verdict == receipts.VerdictOK) {
				t.Errorf("%s: row %d: %s (%s), want %s (%s)", step, i, got.Rows[i].Verdict, got.Rows[i].Reason, want[i].Verdict, want[i].Reason)
			}
		}
		return got
	}
	f.seal("s", 3, receipts.CoverageEnforced)
	if got := check("3 sealed"); got.Damaged != 0 || got.Total != 3 {
		t.Fatalf("3 sealed: %+v", got)
	}
	f.seal("s", 4, receipts.CoverageObserved)
	if got := check("7 sealed"); got.Damaged != 0 || got.Total != 7 {
		t.Fatalf("7 sealed: %+v", got)
	}
	db, err := sql.Open("sqlite", f.db)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	flip := func(seq int) {
		var env []byte
		if err := db.QueryRow(`SELECT envelope FROM entries WHERE session = 's' AND seq = ?`, seq).Scan(&env); err != nil {
			t.Fatal(err)
		}
		env[len(env)-70] ^= 1
		if _, err := db.Exec(`UPDATE entries SET envelope = ? WHERE session = 's' AND seq = ?`, env, seq); err != nil {
			t.Fatal(err)
		}
	}
	flip(3)
	got := check("seq 3 flipped")
	if got.FirstBad != 3 || got.Rows[2].Verdict != receipts.VerdictBadSignature || got.Rows[3].Verdict != receipts.VerdictBrokenChain || got.Damaged != 2 {
		t.Fatalf("seq 3 flipped: first bad %d, damaged %d, rows %v %v", got.FirstBad, got.Damaged, got.Rows[2].Verdict, got.Rows[3].Verdict)
	}
	// A chain that grows after a damaged receipt is judged whole again.
	f.seal("s", 2, receipts.CoverageEnforced)
	if got := check("grown after damage"); got.FirstBad != 3 || got.Total != 9 {
		t.Fatalf("grown after damage: %+v", got)
	}
	flip(3) // put it back
	if got := check("restored"); got.Damaged != 0 {
		t.Fatalf("restored: %+v", got)
	}
	if _, err := db.Exec(`DELETE FROM entries WHERE session = 's' AND seq = 5`); err != nil {
		t.Fatal(err)
	}
	if got := check("seq 5 deleted"); got.FirstBad != 6 || got.Total != 8 {
		t.Fatalf("seq 5 deleted: first bad %d, total %d", got.FirstBad, got.Total)
	}
}

func TestSessionFigures(t *testing.T) {
	f := newFixture(t)
	f.seal("s", 3, receipts.CoverageEnforced)
	f.seal("s", 2, receipts.CoverageObserved)
	var got struct {
		Stats      Stats             `json:"stats"`
		StatusLine map[string]string `json:"status_line"`
		Chart      Chart             `json:"chart"`
		BudgetLeft string            `json:"budget_left"`
	}
	if code := f.get("/api/session?id=s", &got); code != 200 {
		t.Fatal(code)
	}
	st := got.Stats
	if st.Calls != 5 || st.TotalUJ != 5000 || st.Observed != 2000 || st.Enforced != 3000 || st.Estimated != 5000 || st.Tokens != [4]uint64{50, 0, 0, 25} {
		t.Errorf("stats %+v", st)
	}
	if got.StatusLine["energy"] != "5 mJ (5 mJ estimated)" || got.StatusLine["decisions"] != "0 allowed · 0 denied" {
		t.Errorf("status line %v", got.StatusLine)
	}
	var sum uint64
	for _, ser := range got.Chart.Series {
		for _, v := range ser {
			sum += v
		}
	}
	if sum != 5000 {
		t.Errorf("the chart holds %d µJ, the session %d", sum, st.TotalUJ)
	}
	// The sessions list carries the figures once the session is indexed.
	var list struct {
		Total    int              `json:"total"`
		Sessions []SessionSummary `json:"sessions"`
	}
	f.get("/api/sessions", &list)
	if list.Total != 1 || list.Sessions[0].Stats == nil || list.Sessions[0].Stats.TotalUJ != 5000 {
		t.Errorf("sessions %+v", list)
	}
}

func TestReceiptProof(t *testing.T) {
	f := newFixture(t)
	f.seal("s", 4, receipts.CoverageEnforced)
	var got struct {
		Row      Row            `json:"row"`
		Envelope Envelope       `json:"envelope"`
		Receipt  map[string]any `json:"receipt"`
		Proof    Proof          `json:"proof"`
	}
	f.get("/api/receipt?id=s&seq=2", &got)
	if got.Proof.Verified || !strings.Contains(got.Proof.Note, "no signed checkpoint") {
		t.Errorf("before any checkpoint: %+v", got.Proof)
	}
	if _, err := f.st.Checkpoint(context.Background(), "joule receipts log "+f.id.Steward, f.id.NoteSigner); err != nil {
		t.Fatal(err)
	}
	f.get("/api/receipt?id=s&seq=2", &got)
	if !got.Proof.Verified || got.Proof.TreeSize != 4 || len(got.Proof.Hashes) != 2 {
		t.Errorf("proof %+v", got.Proof)
	}
	if got.Envelope.Alg != -8 || got.Envelope.Kid != f.id.Steward || len(got.Envelope.Signature) != 128 {
		t.Errorf("envelope %+v", got.Envelope)
	}
	if got.Receipt["sequence"] != float64(2) || got.Receipt["jc_receipt"] != receipts.KindEfficiency {
		t.Errorf("receipt %v", got.Receipt)
	}
	// A receipt sealed after the checkpoint is not in it yet.
	f.seal("s", 1, receipts.CoverageEnforced)
	f.get("/api/receipt?id=s&seq=5", &got)
	if got.Proof.Verified || !strings.Contains(got.Proof.Note, "after the latest signed checkpoint") {
		t.Errorf("after the checkpoint: %+v", got.Proof)
	}
}

func TestEnvelopeOfGarbage(t *testing.T) {
	for _, b := range [][]byte{nil, {0xff}, {0xd2, 0x80}, []byte("not cbor at all")} {
		if e := envelopeOf(b); e.Error == "" {
			t.Errorf("%x: no error", b)
		}
	}
}

func FuzzEnvelopeOf(f *testing.F) {
	f.Add([]byte{0xd2, 0x84, 0x40, 0xa0, 0x40, 0x40})
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = envelopeOf(b) // never panics
	})
}

func ExampleCheckAddr() {
	fmt.Println(CheckAddr("0.0.0.0:8080") != nil, CheckAddr("127.0.0.1:0") == nil)
	// Output: true true
}

// TestConcurrentReaders: pages read while receipts are sealed (run under
// -race: the index is shared by every request and the warmer).
func TestConcurrentReaders(t *testing.T) {
	f := newFixture(t)
	f.seal("a", 1, receipts.CoverageEnforced)
	done := make(chan struct{})
	errs := make(chan string, 64)
	go func() {
		defer close(done)
		for i := 0; i < 30; i++ {
			f.seal("a", 1, receipts.CoverageEnforced)
			f.seal("b", 1, receipts.CoverageObserved)
		}
	}()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				for _, p := range []string{"/api/session?id=a", "/api/sessions", "/api/chain?id=a", "/api/overview"} {
					req, _ := http.NewRequest("GET", f.http.URL+p, nil)
					req.Header.Set("Authorization", "Bearer tok")
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						errs <- err.Error()
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						errs <- fmt.Sprintf("%s: %d", p, resp.StatusCode)
						return
					}
				}
			}
		}()
	}
	ctx, cancel := context.WithCancel(context.Background())
	go f.srv.Warm(ctx)
	wg.Wait()
	cancel()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	var got struct {
		Stats Stats `json:"stats"`
	}
	f.get("/api/session?id=a", &got)
	if got.Stats.Receipts != 31 || got.Stats.Damaged != 0 {
		t.Errorf("after the race: %+v", got.Stats)
	}
}

// TestPostgres: the same dashboard over a team's PostgreSQL store: the
// figures, the chain, a flipped byte shown where it is, the proof.
func TestPostgres(t *testing.T) {
	bin := pgtest.Require(t)
	srv, err := pgtest.Start(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	url, err := srv.NewDatabase("ui")
	if err != nil {
		t.Fatal(err)
	}
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	f := newFixtureAt(t, url)
	f.seal("s", 4, receipts.CoverageEnforced)
	f.seal("s", 2, receipts.CoverageObserved)
	var got struct {
		Stats Stats `json:"stats"`
	}
	if code := f.get("/api/session?id=s", &got); code != 200 || got.Stats.Receipts != 6 || got.Stats.Observed != 2000 || got.Stats.Enforced != 4000 || got.Stats.Damaged != 0 {
		t.Fatalf("%d %+v", code, got.Stats)
	}
	if _, err := f.st.Checkpoint(context.Background(), "joule receipts log "+f.id.Steward, f.id.NoteSigner); err != nil {
		t.Fatal(err)
	}
	var rc struct {
		Proof Proof `json:"proof"`
	}
	if f.get("/api/receipt?id=s&seq=3", &rc); !rc.Proof.Verified {
		t.Errorf("proof %+v", rc.Proof)
	}
	if err := srv.Exec(context.Background(), name, `UPDATE entries SET envelope = set_byte(envelope, length(envelope) - 70, get_byte(envelope, length(envelope) - 70) # 1) WHERE session = 's' AND seq = 3`); err != nil {
		t.Fatal(err)
	}
	var ch struct {
		FirstBad uint64 `json:"first_bad"`
		Rows     []Row  `json:"rows"`
	}
	f.get("/api/chain?id=s", &ch)
	if ch.FirstBad != 3 || ch.Rows[2].Verdict != receipts.VerdictBadSignature || ch.Rows[3].Verdict != receipts.VerdictBrokenChain {
		t.Errorf("after the flip: first bad %d, rows %+v", ch.FirstBad, ch.Rows)
	}
}

// The event stream says no-transform (a compressing proxy in front, such
// as code-server's port proxy for VS Code's webview, would otherwise hold
// it), and the page asks its API relative to its own URL, so it works
// under a path prefix.
func TestBehindAPathProxy(t *testing.T) {
	f := newFixture(t)
	f.seal("s", 1, receipts.CoverageEnforced)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.http.URL+"/api/events?token=tok", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "no-transform") {
		t.Errorf("event stream Cache-Control %q: a compressing proxy may buffer it", cc)
	}
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	if line != "event: log\n" {
		t.Errorf("the stream begins %q", line)
	}
	for _, abs := range []string{`fetch("/`, `EventSource("/`} {
		if strings.Contains(string(f.srv.page), abs) {
			t.Errorf("the page calls %s…: absolute, it misses a path prefix", abs)
		}
	}
}

// decide seals one decision receipt in session, as the gate does.
func (f *fixture) decide(session, decision, code, summary, reason string) {
	f.t.Helper()
	sealer, _ := f.id.Sealer()
	_, err := f.st.Seal(context.Background(), store.SealRequest{Session: session, Build: func(pos store.Position, _ error) ([]byte, bool, error) {
		env, err := receipts.SealDecision(sealer, receipts.Link{Session: session, Sequence: pos.Seq, Prev: pos.Prev},
			receipts.Act{Time: time.Now(), Tool: "Bash", Summary: summary, Decision: decision, Code: code, Reason: reason})
		return env, false, err
	}})
	if err != nil {
		f.t.Fatal(err)
	}
}

// TestSessionDenials: the session view's first section is what did not
// run and why: every deny and ask, newest first, with the reason the
// receipt signed; allows are not in it, and at most MaxDenials are listed
// of the total it gives.
func TestSessionDenials(t *testing.T) {
	f := newFixture(t)
	f.decide("s", receipts.Allow, "allowed", "Bash: go test ./...", "")
	f.decide("s", receipts.Deny, "action-not-granted", "Bash: npm install", "not granted: Bash(npm install) matches no allow rule")
	f.decide("s", receipts.Ask, "ask", "Bash: rm -rf build", "held for a human: Bash(rm:*)")
	f.seal("s", 1, receipts.CoverageEnforced)
	var got struct {
		Denials []Denial `json:"denials"`
		Total   int      `json:"denials_total"`
	}
	if code := f.get("/api/session?id=s", &got); code != 200 {
		t.Fatal(code)
	}
	want := []Denial{
		{Seq: 3, Decision: receipts.Ask, Code: "ask", Tool: "Bash", Summary: "Bash: rm -rf build", Reason: "held for a human: Bash(rm:*)"},
		{Seq: 2, Decision: receipts.Deny, Code: "action-not-granted", Tool: "Bash", Summary: "Bash: npm install", Reason: "not granted: Bash(npm install) matches no allow rule"},
	}
	for i := range got.Denials {
		got.Denials[i].TimeMS = 0
	}
	if got.Total != 2 || fmt.Sprint(got.Denials) != fmt.Sprint(want) {
		t.Fatalf("denials %d %+v, want %+v", got.Total, got.Denials, want)
	}
	for i := 0; i < MaxDenials+5; i++ {
		f.decide("many", receipts.Deny, "action-not-granted", fmt.Sprintf("Bash: x%d", i), "no")
	}
	f.get("/api/session?id=many", &got)
	if got.Total != MaxDenials+5 || len(got.Denials) != MaxDenials || got.Denials[0].Summary != fmt.Sprintf("Bash: x%d", MaxDenials+4) {
		t.Fatalf("many: %d listed of %d, first %+v", len(got.Denials), got.Total, got.Denials[0])
	}
	if code := f.get("/api/session?id=none", &got); code == 200 && (got.Total != 0 || len(got.Denials) != 0) {
		t.Fatalf("a session with no denials: %+v", got)
	}
}

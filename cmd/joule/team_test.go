package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/core/store/pgtest"
	"github.com/joulehook/joule/core/trust"
	"github.com/joulehook/joule/demo"
	"github.com/joulehook/joule/tiers/config"
	"github.com/mark3labs/mcp-go/mcp"
)

// The team tests run the real binary against a throwaway PostgreSQL server
// (core/store/pgtest): several joule serve and joule gate processes share
// one team grant and one receipt log through JOULE_STORE.

const (
	teamClients = 8  // joule serve processes
	teamEach    = 64 // concurrent decisions sent to each
	teamPaid    = 300
	bashCostMJ  = 50 // gate.DefaultCosts for Bash
)

// teamHome starts a PostgreSQL server and runs joule init with
// JOULE_STORE pointing at a new database on it, with a grant that allows
// go test and pays for exactly paid Bash decisions.
func teamHome(t *testing.T, paid int) (srv *pgtest.Server, url string, env []string, ws string) {
	t.Helper()
	bin := pgtest.Require(t)
	srv, err := pgtest.Start(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	if url, err = srv.NewDatabase("team"); err != nil {
		t.Fatal(err)
	}
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	ws = filepath.Join(dir, "ws")
	os.MkdirAll(filepath.Join(ws, "src"), 0o755)
	env = []string{"JOULE_HOME=" + filepath.Join(dir, "home"), "HOME=" + filepath.Join(dir, "userhome"), StoreEnv + "=" + url}
	r := jouleIn(t, ws, nil, env, "init", "--steward", "team.example", "--workspace", ws,
		"--template", "", "--allow", "Bash(go test:*)", "--budget", fmt.Sprintf("%dmJ", paid*bashCostMJ))
	if r.code != 0 {
		t.Fatalf("init: %+v", r)
	}
	if !strings.Contains(r.stdout, "xxxxx") && strings.Contains(r.stdout, "postgres://") {
		t.Errorf("init printed the store URL with its password:\n%s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, "home", StoreFile)); err == nil {
		t.Errorf("init created a SQLite store although JOULE_STORE names PostgreSQL")
	}
	return srv, url, env, ws
}

// startServeAt runs joule serve on addr until the test ends.
func startServeAt(t *testing.T, env []string, addr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, jouleBin, "serve", "--addr", addr)
	cmd.Env = append(os.Environ(), env...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	buf := make([]byte, 512)
	n, err := stderr.Read(buf)
	if err != nil || !strings.Contains(string(buf[:n]), "serving http://") {
		t.Fatalf("joule serve: %q %v", buf[:n], err)
	}
	go io.Copy(io.Discard, stderr)
}

// openTeamStore opens the team database from the test process, as another
// machine would.
func openTeamStore(t *testing.T, url string) *store.Store {
	t.Helper()
	st, err := store.Open(url, store.WithLockTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// teamDecisions opens every receipt in the log with the team key and
// counts decisions by decision and code.
func teamDecisions(t *testing.T, st *store.Store, env []string) map[string]int {
	t.Helper()
	ctx := context.Background()
	id, err := identity.Load(strings.TrimPrefix(env[0], "JOULE_HOME="))
	if err != nil {
		t.Fatal(err)
	}
	pub := id.Public()
	v, err := core.NewVerifier(id.Steward, pub[:])
	if err != nil {
		t.Fatal(err)
	}
	size, err := st.LogSize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for i := range size {
		e, err := st.EntryAt(ctx, i)
		if err != nil {
			t.Fatal(err)
		}
		a, err := receipts.Open(v, id.Steward, e.Envelope)
		if err != nil {
			t.Fatalf("receipt %d: %v", i, err)
		}
		if a.Decision != nil && e.Session != trust.GrantsSession { // the gate's, not the trust chain's
			counts[a.Decision.Decision+"/"+a.Decision.Code]++
		}
	}
	return counts
}

// TestTeamPostgres is the load test and shared gateway: eight joule
// serve processes on one PostgreSQL database answer 64 concurrent hook
// requests each against one team grant that pays for exactly 300; then the
// log is read through another process's MCP resources, checked with joule
// store check, dumped with pg_dump and restored into a fresh database that
// still verifies.
func TestTeamPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and 8 joule serve processes")
	}
	srv, url, env, ws := teamHome(t, teamPaid)
	if r := jouleIn(t, ws, nil, env, "install", "claude-code", "--project", "--resident", "--addr", freeAddr(t)); r.code != 0 {
		t.Fatalf("install --resident: %+v", r)
	}
	tok := readServeToken(t, env)
	// 512 decisions arrive at once and queue for the team grant's row
	// lock: on a loaded two-core CI machine the last waits longer than
	// the 10 s default, which is for one developer's machine.
	home := strings.TrimPrefix(env[0], "JOULE_HOME=")
	if err := os.WriteFile(filepath.Join(home, ConfigFile), []byte(`{"lock_timeout":"2m"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// lock_timeout is a trust setting (in the signed config digest): the
	// person records the change, as after any edit of it.
	if r := jouleIn(t, ws, nil, env, "trust", "accept"); r.code != 0 {
		t.Fatalf("trust accept: %+v", r)
	}

	addrs := make([]string, teamClients)
	for i := range addrs {
		addrs[i] = freeAddr(t)
		startServeAt(t, env, addrs[i])
	}
	type answer struct {
		status int
		body   string
	}
	answers := make([]answer, teamClients*teamEach)
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 2 * time.Minute}
	for p := range teamClients {
		for i := range teamEach {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := fmt.Sprintf(`{"session_id":"team-%d-%d","cwd":%q,"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"go test ./..."},"tool_use_id":"t%d"}`, p, i%4, ws, i)
				req, _ := http.NewRequest("POST", "http://"+addrs[p]+"/hooks/claude-code", strings.NewReader(body))
				req.Header.Set("Authorization", tok)
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				defer resp.Body.Close()
				out, _ := io.ReadAll(resp.Body)
				answers[p*teamEach+i] = answer{resp.StatusCode, string(out)}
			}()
		}
	}
	wg.Wait()
	allowed, budgetDenied := 0, 0
	for _, a := range answers {
		decision := jsonPath(a.body, "hookSpecificOutput", "permissionDecision")
		reason := jsonPath(a.body, "hookSpecificOutput", "permissionDecisionReason")
		switch {
		case a.status != 200:
			t.Errorf("status %d: %s", a.status, a.body)
		case decision == "":
			allowed++ // Claude Code's allow: joule prints no decision
		case decision == "deny" && strings.Contains(reason, "left; this action costs"):
			budgetDenied++
		default:
			t.Errorf("unexpected answer: %s", a.body)
		}
	}
	total := teamClients * teamEach
	if allowed != teamPaid || budgetDenied != total-teamPaid {
		t.Errorf("%d allowed and %d denied over budget, want exactly %d and %d", allowed, budgetDenied, teamPaid, total-teamPaid)
	}

	// The log, read from this process: every decision once, exactly the
	// paid ones allowed, the rest budget-exceeded, the grant spent out.
	st := openTeamStore(t, url)
	ctx := context.Background()
	if err := st.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	counts := teamDecisions(t, st, env)
	recorded := counts["allow/home-recorded"] // the trust accept above
	if counts["allow/allowed"] != teamPaid || counts["deny/"+gate.CodeBudgetExceeded] != total-teamPaid || recorded != 1 || len(counts) != 3 {
		t.Errorf("receipts by decision/code: %v, want %d allow, %d deny/%s and the configuration's record", counts, teamPaid, total-teamPaid, gate.CodeBudgetExceeded)
	}
	sessions, err := st.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, si := range sessions {
		es, err := st.Session(ctx, si.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			pos := fmt.Sprintf("%s/%d", e.Session, e.Seq)
			if seen[pos] || seen[fmt.Sprint(e.Index)] {
				t.Fatalf("position %s or index %d used twice", pos, e.Index)
			}
			seen[pos], seen[fmt.Sprint(e.Index)] = true, true
		}
	}
	grants, err := st.Grants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(grants) != 1 || grants[0].RemainingUJ() != 0 || grants[0].SpentUJ != teamPaid*bashCostMJ*1000 {
		t.Errorf("team grant after the load: %+v", grants)
	}
	// The log holds the decisions, the trust chain's receipts (the team
	// grant's issue and activation) and the configuration's record.
	trustChain, err := st.Session(ctx, trust.GrantsSession)
	if err != nil || len(trustChain) == 0 {
		t.Fatalf("the trust chain: %d receipts, %v", len(trustChain), err)
	}
	if r := jouleIn(t, ws, nil, env, "store", "check"); r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("log     %d receipts", total+len(trustChain)+recorded)) || strings.Contains(r.stdout+r.stderr, "@127.0.0.1") && !strings.Contains(r.stdout, "xxxxx") {
		t.Fatalf("store check: %+v", r)
	}

	t.Run("mcp resources of another instance", func(t *testing.T) {
		p := startMCP(t, env, "--workspace", ws, "--session", "watch")
		var sum struct {
			Receipts int `json:"receipts"`
		}
		json.Unmarshal([]byte(p.read(t, "joule://sessions/team-3-1")), &sum)
		if sum.Receipts != teamEach/4 {
			t.Errorf("joule://sessions/team-3-1 shows %d receipts, want %d", sum.Receipts, teamEach/4)
		}
		sub := mcp.SubscribeRequest{}
		sub.Params.URI = "joule://sessions/team-7-2"
		if err := p.c.Subscribe(context.Background(), sub); err != nil {
			t.Fatal(err)
		}
		d := gateOnce(t, env, fmt.Sprintf(`{"session_id":"team-7-2","tool":"Bash","input":{"command":"go test ./..."},"cwd":%q}`, ws))
		if d.Decision != "deny" || d.Code != gate.CodeBudgetExceeded || d.Sequence != teamEach/4+1 {
			t.Fatalf("joule gate after the budget ran out: %+v", d)
		}
		select {
		case n := <-p.notes:
			if n.Params.AdditionalFields["uri"] != "joule://sessions/team-7-2" {
				t.Errorf("notification: %+v", n)
			}
		case <-time.After(3 * time.Second):
			t.Fatal("joule mcp was not told of a receipt another process sealed into PostgreSQL")
		}
	})

	t.Run("pg_dump and pg_restore", func(t *testing.T) {
		dump := filepath.Join(t.TempDir(), "team.dump")
		if out, err := exec.Command(srv.Tool("pg_dump"), "--format=custom", "--file="+dump, "--dbname="+url).CombinedOutput(); err != nil {
			t.Fatalf("pg_dump: %v\n%s", err, out)
		}
		restored, err := srv.NewDatabase("restored")
		if err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(srv.Tool("pg_restore"), "--no-owner", "--exit-on-error", "--dbname="+restored, dump).CombinedOutput(); err != nil {
			t.Fatalf("pg_restore: %v\n%s", err, out)
		}
		r := jouleIn(t, ws, nil, env, "store", "check", "--store", restored)
		if r.code != 0 || !strings.Contains(r.stdout, "check   ok") || !strings.Contains(r.stdout, fmt.Sprintf("log     %d receipts", total+len(trustChain)+recorded+1)) {
			t.Fatalf("store check of the restored database: %+v", r)
		}
		rs := openTeamStore(t, restored)
		if err := rs.Verify(ctx); err != nil {
			t.Fatal(err)
		}
		a, _ := st.LogSize(ctx)
		ra, _ := rs.TreeHash(ctx, a)
		oa, _ := st.TreeHash(ctx, a)
		if ra != oa {
			t.Errorf("restored log root %v, original %v", ra, oa)
		}
		// The restored database takes new decisions where the log left off.
		e, err := rs.Seal(ctx, store.SealRequest{Session: "after-restore", Build: func(pos store.Position, _ error) ([]byte, bool, error) {
			return fmt.Appendf(nil, "restored|%d", pos.Index), false, nil
		}})
		if err != nil || e.Index != a {
			t.Errorf("seal after restore: index %d, %v; want %d", e.Index, err, a)
		}
	})
}

func readServeToken(t *testing.T, env []string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(strings.TrimPrefix(env[0], "JOULE_HOME="), config.ServeFile))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil || cfg.Token == "" {
		t.Fatalf("%s: %s %v", config.ServeFile, b, err)
	}
	return "Bearer " + cfg.Token
}

// TestTeamPostgresRestart is the fault test: PostgreSQL stops in the middle
// of a load of joule gate processes and a resident joule serve. While it is
// down every client denies (store-unavailable, nothing sealed); after it
// comes back they allow again (the serve pool reconnects), and every
// receipt a client was told of is in the log, which verifies.
func TestTeamPostgresRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and restarts PostgreSQL")
	}
	srv, url, env, ws := teamHome(t, 1_000_000)
	if r := jouleIn(t, ws, nil, env, "install", "claude-code", "--project", "--resident", "--addr", freeAddr(t)); r.code != 0 {
		t.Fatalf("install --resident: %+v", r)
	}
	tok := readServeToken(t, env)
	addr := freeAddr(t)
	startServeAt(t, env, addr)

	type answer struct {
		d     decision
		phase int // 0 before the stop, 1 while down, 2 after the restart
	}
	var (
		mu      sync.Mutex
		answers []answer
		phase   int
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	record := func(d decision) {
		mu.Lock()
		answers = append(answers, answer{d, phase})
		mu.Unlock()
	}
	count := func(ph int, decision string) (n int) {
		mu.Lock()
		defer mu.Unlock()
		for _, a := range answers {
			if a.phase == ph && a.d.Decision == decision {
				n++
			}
		}
		return n
	}
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				cmd := exec.Command(jouleBin, "gate")
				cmd.Env = append(os.Environ(), env...)
				cmd.Stdin = strings.NewReader(fmt.Sprintf(`{"session_id":"fault-%d","tool":"Bash","input":{"command":"go test ./..."},"cwd":%q}`, p, ws))
				out, _ := cmd.Output() // a deny exits 1
				var d decision
				if err := json.Unmarshal(out, &d); err != nil {
					t.Errorf("joule gate printed %q: %v", out, err)
					return
				}
				record(d)
			}
		}()
	}
	// The resident server, whose pooled connections die with the server.
	var serveAllowsAfter, serveDeniesDown int
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			body := fmt.Sprintf(`{"session_id":"fault-serve","cwd":%q,"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"go test ./..."},"tool_use_id":"s%d"}`, ws, i)
			req, _ := http.NewRequest("POST", "http://"+addr+"/hooks/claude-code", strings.NewReader(body))
			req.Header.Set("Authorization", tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			mu.Lock()
			switch dec := jsonPath(string(out), "hookSpecificOutput", "permissionDecision"); {
			case phase == 2 && dec == "":
				serveAllowsAfter++
			case phase == 1 && dec == "deny":
				serveDeniesDown++
			}
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for !cond() {
			if time.Now().After(deadline) {
				close(stop)
				wg.Wait()
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("allows before the stop", func() bool { return count(0, "allow") >= 20 })
	if err := srv.StopServer("fast"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	phase = 1
	mu.Unlock()
	waitFor("denies while PostgreSQL is down", func() bool { return count(1, "deny") >= 8 })
	mu.Lock()
	down := serveDeniesDown
	mu.Unlock()
	time.Sleep(500 * time.Millisecond)
	if err := srv.StartServer(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	phase = 2
	mu.Unlock()
	waitFor("allows after the restart", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return serveAllowsAfter >= 5
	})
	waitFor("joule gate allows after the restart", func() bool { return count(2, "allow") >= 20 })
	close(stop)
	wg.Wait()
	if down == 0 && serveDeniesDown == 0 {
		t.Error("joule serve never denied while PostgreSQL was down")
	}

	st := openTeamStore(t, url)
	ctx := context.Background()
	if err := st.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	chains := map[string][]store.Entry{}
	for p := range 4 {
		session := fmt.Sprintf("fault-%d", p)
		es, err := st.Session(ctx, session)
		if err != nil {
			t.Fatal(err)
		}
		chains[session] = es
	}
	var sealed, unavailable int
	for _, a := range answers {
		d := a.d
		if d.Receipt == "" {
			// Unsealed: only a deny because the store was unreachable.
			if d.Decision != "deny" || d.Code != gate.CodeStoreError {
				t.Errorf("unsealed answer that is not a store-unavailable deny: %+v", d)
			}
			unavailable++
			continue
		}
		sealed++
		es := chains[d.Session]
		if d.Sequence < 1 || d.Sequence > uint64(len(es)) || core.ID(es[d.Sequence-1].Hash).String() != d.Receipt {
			t.Errorf("answered receipt %s/%d %s is missing from the log", d.Session, d.Sequence, d.Receipt)
		}
		if a.phase != 1 && d.Decision != "allow" {
			t.Errorf("sealed answer while PostgreSQL was up is not an allow: %+v", d)
		}
	}
	if unavailable == 0 {
		t.Error("no client saw store-unavailable while PostgreSQL was down")
	}
	t.Logf("%d answers sealed and found in the log, %d store-unavailable denies", sealed, unavailable)
	if r := jouleIn(t, ws, nil, env, "store", "check"); r.code != 0 {
		t.Fatalf("store check after the restart: %+v", r)
	}
}

// TestTeamProxies runs two joule proxy instances, as behind a team's load
// balancer, on one PostgreSQL store and one team grant: concurrent model
// calls through both are metered against the one budget (never overspent,
// nothing left reserved), and every call's receipt is in the one log.
func TestTeamProxies(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and two joule proxy processes")
	}
	// 2 kJ (in Bash decisions of 50 mJ): less than the 40 calls cost, so
	// the two proxies compete for the last of it.
	_, url, env, _ := teamHome(t, 40_000)
	upstream := httptest.NewServer(demo.AnthropicStandIn())
	defer upstream.Close()
	proxies := make([]string, 2)
	stops := make([]func() string, 2)
	for i := range proxies {
		proxies[i], stops[i] = startDaemon(t, env, "proxy", "--listen", "127.0.0.1:0", "--anthropic", upstream.URL)
	}
	const calls = 40
	codes := make([]int, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := `{"model":"claude-sonnet-4-5","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
			code, _, _, err := postMessage(proxies[i%2], "/v1/messages", fmt.Sprintf("proxy%d-%d", i%2, i%3), body)
			if err != nil {
				t.Error(err)
				return
			}
			codes[i] = code
		}()
	}
	wg.Wait()
	for _, stop := range stops {
		if logs := stop(); strings.Contains(logs, "SECRET") || strings.Contains(logs, "s3cret") {
			t.Errorf("a credential reached the proxy log:\n%s", logs)
		}
	}
	served := 0
	for i, c := range codes {
		switch c {
		case 200:
			served++
		case 402:
		default:
			t.Errorf("call %d: status %d", i, c)
		}
	}
	st := openTeamStore(t, url)
	ctx := context.Background()
	if err := st.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	grants, err := st.Grants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(grants) != 1 || grants[0].SpentUJ > grants[0].BudgetUJ || grants[0].ReservedUJ != 0 || grants[0].SpentUJ == 0 {
		t.Errorf("team grant after both proxies: %+v", grants)
	}
	sessions, err := st.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var receipts uint64
	from := map[string]bool{}
	for _, si := range sessions {
		receipts += si.Count
		from[si.ID[:6]] = true
	}
	if served == 0 || served == calls {
		t.Errorf("%d of %d calls served: want the budget to run out part way", served, calls)
	}
	if int(receipts) < served || !from["proxy0"] || !from["proxy1"] {
		t.Errorf("%d receipts in sessions %v for %d served calls through both proxies", receipts, sessions, served)
	}
	t.Logf("%d of %d calls served, %d receipts, spent %d of %d µJ", served, calls, receipts, grants[0].SpentUJ, grants[0].BudgetUJ)
}

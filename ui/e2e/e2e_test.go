// Package e2e drives joule ui in a real browser: Debian's chromium under
// playwright-core (testdata/browser, installed by .ci/setup.d/60-ui-browser.sh),
// against stores the real joule binary filled.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

var jouleBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "joule-ui-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	jouleBin = filepath.Join(dir, "joule")
	build := exec.Command("go", "build", "-trimpath", "-o", jouleBin, "../../cmd/joule")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build joule: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// needBrowser fails under CI, and skips elsewhere, when chromium or
// playwright-core is missing.
func needBrowser(t *testing.T) {
	t.Helper()
	var missing []string
	if _, err := exec.LookPath(chromium()); err != nil {
		missing = append(missing, "chromium")
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing = append(missing, "node")
	}
	if _, err := os.Stat("testdata/browser/node_modules/playwright-core/package.json"); err != nil {
		missing = append(missing, "playwright-core (npm ci --prefix ui/e2e/testdata/browser)")
	}
	if len(missing) == 0 {
		return
	}
	msg := "missing " + strings.Join(missing, ", ") + ": run .ci/setup.d/60-ui-browser.sh"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func chromium() string {
	if c := os.Getenv("CHROMIUM"); c != "" {
		return c
	}
	return "/usr/bin/chromium"
}

// joule runs the real binary with JOULE_HOME=home.
func joule(t *testing.T, home, stdin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(jouleBin, args...)
	cmd.Env = append(os.Environ(), "JOULE_HOME="+home)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("joule %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return out.String(), code
}

// daemon starts the real binary in its own process group, returns the
// first line of its stdout, and kills the group at cleanup.
func daemon(t *testing.T, home string, args ...string) string {
	t.Helper()
	cmd := exec.Command(jouleBin, args...)
	cmd.Env = append(os.Environ(), "JOULE_HOME="+home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}
	t.Cleanup(stop)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		t.Fatalf("joule %v: %v\n%s", args, err, errb.String())
	}
	go io.Copy(io.Discard, out)
	return strings.TrimSpace(line)
}

var urlRE = regexp.MustCompile(`http://127\.0\.0\.1:\d+/\?token=[0-9a-f]+`)

func startUI(t *testing.T, home string) string {
	t.Helper()
	line := daemon(t, home, "ui", "--addr", "127.0.0.1:0")
	u := urlRE.FindString(line)
	if u == "" {
		t.Fatalf("joule ui printed %q", line)
	}
	return u
}

// drive runs testdata/browser/drive.mjs and decodes what it saw.
func drive(t *testing.T, args ...string) map[string]any {
	t.Helper()
	got := driveNoFatal(t, args...)
	if e, ok := got["error"]; ok {
		t.Fatalf("drive %v: the page did not show what was expected: %v", args[0], e)
	}
	if pe, ok := got["pageErrors"]; ok {
		t.Errorf("drive %v: page errors: %v", args[0], pe)
	}
	return got
}

// driveNoFatal is drive for a goroutine: a failure to run is an "error".
func driveNoFatal(t *testing.T, args ...string) map[string]any {
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"drive.mjs"}, args...)...)
	cmd.Dir = "testdata/browser"
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // chromium's leftovers, if any
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var got map[string]any
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &got); jerr != nil {
		return map[string]any{"error": fmt.Sprintf("drive %v: %v %v\nstdout %s\nstderr %s", args[0], err, jerr, out.String(), errb.String())}
	}
	return got
}

// shotsDir is where screenshots go: $JOULE_UI_SHOTS (docs/ when the docs'
// screenshots are made), else a temp dir.
func shotsDir(t *testing.T) string {
	if d := os.Getenv("JOULE_UI_SHOTS"); d != "" {
		return d
	}
	return t.TempDir()
}

// statusLine is what `joule statusline` prints for session, split.
type statusLine struct{ energy, decisions, left string }

func statusOf(t *testing.T, home, session string) statusLine {
	t.Helper()
	out, _ := joule(t, home, fmt.Sprintf(`{"session_id":%q}`, session), "statusline")
	out = strings.TrimSpace(out)
	body, ok := strings.CutPrefix(out, "joule ⚡ ")
	if !ok {
		t.Fatalf("statusline printed %q", out)
	}
	// energy │ [the meter's coverage │] decisions │ … │ budget left
	parts := strings.Split(body, " │ ")
	sl := statusLine{energy: parts[0], left: parts[len(parts)-1]}
	for _, p := range parts[1:] {
		if strings.Contains(p, " allowed · ") {
			sl.decisions = p
		}
	}
	return sl
}

// lsRow is one row of `joule receipts ls SESSION`, read from its --json
// form: decision and code are a decision's, and for an efficiency receipt
// its status and coverage (the page's columns for it).
type lsRow struct{ seq, index, verdict, kind, decision, code string }

func receiptsLs(t *testing.T, home, session string) []lsRow {
	t.Helper()
	out, code := joule(t, home, "", "receipts", "ls", session, "--json")
	if code != 0 {
		t.Fatalf("receipts ls %s --json: exit %d\n%s", session, code, out)
	}
	var rs []struct {
		Seq      uint64 `json:"sequence"`
		Index    int64  `json:"index"`
		Verdict  string `json:"verdict"`
		Kind     string `json:"kind"`
		Decision string `json:"decision"`
		Code     string `json:"code"`
		Summary  string `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("receipts ls %s --json: %v\n%s", session, err, out)
	}
	status := regexp.MustCompile(`\((\S+), (\S+)\)$`)
	var rows []lsRow
	for _, r := range rs {
		row := lsRow{seq: strconv.FormatUint(r.Seq, 10), index: strconv.FormatInt(r.Index, 10), verdict: r.Verdict,
			kind: r.Kind, decision: r.Decision, code: r.Code}
		if r.Kind == "efficiency" {
			if m := status.FindStringSubmatch(r.Summary); m != nil {
				row.decision, row.code = m[1], m[2]
			}
		}
		rows = append(rows, row)
	}
	return rows
}

func sessionsOf(t *testing.T, home string) map[string]string {
	out, _ := joule(t, home, "", "receipts", "ls")
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n")[1:] {
		if f := strings.Fields(line); len(f) >= 2 {
			m[f[0]] = f[1]
		}
	}
	return m
}

func TestDashboard(t *testing.T) {
	needBrowser(t)
	// The store, filled through the real binary: gate decisions, metered
	// proxy calls and a cascade run (joule demo), and OTel telemetry.
	tmp := t.TempDir()
	cmd := exec.Command(jouleBin, "demo", "--keep")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("joule demo: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`kept (\S+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("joule demo did not say where it kept its home:\n%s", out)
	}
	home, ws := filepath.Join(string(m[1]), "home"), filepath.Join(string(m[1]), "workspace")
	// make run ends with the command that opens the demo's store in joule
	// ui: it names this home and this binary, and is what runs below.
	printed := regexp.MustCompile(`JOULE_HOME=(\S+) (\S+) ui `).FindSubmatch(out)
	if printed == nil || string(printed[1]) != home || string(printed[2]) != jouleBin {
		t.Fatalf("joule demo --keep does not end with the joule ui command for its store (%s ui):\n%s", jouleBin, out)
	}
	otel := daemon(t, home, "otel", "--listen", "127.0.0.1:0", "--quiet")
	_, otelURL, ok := strings.Cut(otel, "listening on ")
	if !ok {
		t.Fatalf("joule otel printed %q", otel)
	}
	logs, err := os.ReadFile("../../energy/otlp/testdata/claude_code_logs.json")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(otelURL+"/v1/logs", "application/json", bytes.NewReader(logs))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("otel export: %d", resp.StatusCode)
	}
	sessions := sessionsOf(t, home)
	var acp string
	for id := range sessions {
		if strings.HasPrefix(id, "acp-") {
			acp = id
		}
	}
	for _, want := range []string{"demo", "demo-proxy", "cc-session-1"} {
		if sessions[want] == "" {
			t.Fatalf("the store has no session %s: %v", want, sessions)
		}
	}
	if acp == "" {
		t.Fatalf("the demo ran no cascade (no acp- session): %v", sessions)
	}
	url := startUI(t, home)
	shots := shotsDir(t)

	t.Run("token", func(t *testing.T) {
		base, _, _ := strings.Cut(url, "?")
		for _, c := range []struct {
			name, url, host, origin, method string
			code                            int
		}{
			{"no token", base, "", "", "GET", 401},
			{"wrong token", base + "?token=0000", "", "", "GET", 401},
			{"no token, api", base + "api/sessions", "", "", "GET", 401},
			{"token", url, "", "", "GET", 200},
			{"rebinding host", url, "evil.example", "", "GET", 403},
			{"cross origin", url, "", "http://evil.example", "GET", 403},
			{"write", url, "", "", "POST", 405},
		} {
			req, _ := http.NewRequest(c.method, c.url, nil)
			if c.host != "" {
				req.Host = c.host
			}
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.code {
				t.Errorf("%s: %d, want %d: %s", c.name, resp.StatusCode, c.code, body)
			}
			if c.code != 200 && (bytes.Contains(body, []byte("<html")) || bytes.Contains(body, []byte("demo"))) {
				t.Errorf("%s: served content without the token: %s", c.name, body)
			}
		}
	})

	// One browser walks every view (a chromium start is slow on a busy
	// machine); each step's result is checked as it arrives, and the test
	// acts between steps: seals a receipt while the page is live, then
	// tampers with one.
	stepDir := t.TempDir()
	liveMarker, tamperMarker := filepath.Join(stepDir, "live-ready"), filepath.Join(stepDir, "tampered-ready")
	views := []struct{ id, name string }{{"demo", "gate"}, {"demo-proxy", "proxy"}, {acp, "cascade"}, {"cc-session-1", "otel"}}
	spec := map[string]any{"url": url, "shots": shots, "out": stepDir, "live": map[string]string{"id": "demo", "marker": liveMarker},
		"tamper": map[string]string{"id": "demo", "wait": tamperMarker}}
	var specSessions []map[string]string
	for _, v := range views {
		specSessions = append(specSessions, map[string]string{"id": v.id, "name": v.name})
	}
	spec["sessions"] = specSessions
	specFile := filepath.Join(stepDir, "spec.json")
	b, _ := json.Marshal(spec)
	os.WriteFile(specFile, b, 0o600)
	done := make(chan map[string]any, 1)
	go func() { done <- driveNoFatal(t, "suite", specFile) }()
	var final map[string]any
	step := func(t *testing.T, name string) map[string]any {
		t.Helper()
		file := filepath.Join(stepDir, name+".json")
		for {
			if b, err := os.ReadFile(file); err == nil {
				var got map[string]any
				if json.Unmarshal(b, &got) == nil {
					return got
				}
			}
			select {
			case final = <-done:
				if b, err := os.ReadFile(file); err == nil {
					var got map[string]any
					if json.Unmarshal(b, &got) == nil {
						return got
					}
				}
				t.Fatalf("the browser stopped before step %s: %v", name, final["error"])
			case <-time.After(100 * time.Millisecond):
			}
		}
	}

	t.Run("sessions equal receipts ls and statusline", func(t *testing.T) {
		got := step(t, "sessions")
		t.Logf("sessions view: %v; table drawn after %v ms, every figure after %v ms", got["nav"], got["tableMs"], got["figuresMs"])
		rows := got["sessions"].([]any)
		if len(rows) != len(sessions) {
			t.Errorf("the page lists %d sessions, receipts ls %d", len(rows), len(sessions))
		}
		for _, r := range rows {
			row := r.(map[string]any)
			id := row["id"].(string)
			if row["receipts"] != sessions[id] {
				t.Errorf("%s: %v receipts on the page, %s in receipts ls", id, row["receipts"], sessions[id])
			}
			sl := statusOf(t, home, id)
			if row["energy"] != sl.energy || row["decisions"] != sl.decisions {
				t.Errorf("%s: page %q / %q, statusline %q / %q", id, row["energy"], row["decisions"], sl.energy, sl.decisions)
			}
			if row["verdict"] != "verified" {
				t.Errorf("%s: %v", id, row["verdict"])
			}
		}
	})

	checkSession := func(t *testing.T, got map[string]any, id string) {
		t.Helper()
		sl := statusOf(t, home, id)
		if got["energy"] != sl.energy || got["decisions"] != sl.decisions || got["budget-left"] != sl.left {
			t.Errorf("%s: page %q · %q · %q, statusline %q · %q · %q", id, got["energy"], got["decisions"], got["budget-left"], sl.energy, sl.decisions, sl.left)
		}
		ls := receiptsLs(t, home, id)
		chain := got["chain"].([]any)
		if len(chain) != len(ls) {
			t.Fatalf("%s: %d rows drawn, receipts ls has %d", id, len(chain), len(ls))
		}
		for i, c := range chain {
			cells := c.([]any)
			want := ls[i]
			if cells[0] != want.seq || cells[1] != want.index || cells[2] != want.verdict {
				t.Errorf("%s row %d: page %v, receipts ls %+v", id, i, cells[:3], want)
			}
			if want.kind != "" && (cells[3] != want.kind || cells[4] != want.decision || cells[5] != want.code) {
				t.Errorf("%s row %d: page %v, receipts ls %+v", id, i, cells[3:6], want)
			}
		}
	}
	t.Run("session views equal receipts ls and statusline", func(t *testing.T) {
		for _, c := range views {
			got := step(t, "session-"+c.name)
			checkSession(t, got, c.id)
			if got["receiptVerdict"] != "ok" || !strings.HasPrefix(got["proof"].(string), "yes") {
				t.Errorf("%s: receipt %v, proof %v", c.id, got["receiptVerdict"], got["proof"])
			}
			switch c.name {
			case "cascade":
				if !strings.Contains(got["cascade"].(string), "all-L4") {
					t.Errorf("cascade: %q", got["cascade"])
				}
			case "otel":
				if got["observed"] == "0 µJ" {
					t.Errorf("otel: observed %q: OTel figures not shown apart", got["observed"])
				}
			case "proxy":
				if got["calls"] != "2 (1 fitted to the budget)" {
					t.Errorf("proxy: calls %q", got["calls"])
				}
			}
			if n, _ := got["timeChart"].(float64); n == 0 {
				t.Errorf("%s: the joules-over-time chart has no bars", c.id)
			}
		}
	})

	t.Run("grants", func(t *testing.T) {
		got := step(t, "grants")
		out, _ := joule(t, home, "", "grant", "ls")
		ids := regexp.MustCompile(`[A-Za-z0-9_-]{43}`).FindAllString(out, -1)
		page := fmt.Sprint(got["grants"])
		if len(ids) == 0 {
			t.Fatalf("grant ls: %s", out)
		}
		for _, id := range ids {
			if !strings.Contains(page, id) {
				t.Errorf("grant %s not shown: %s", id, page)
			}
		}
		if !strings.Contains(page, "active") {
			t.Errorf("no active grant shown: %s", page)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		got := step(t, "bad")
		if !strings.Contains(got["unknown"].(string), "no such session") {
			t.Errorf("unknown session: %q", got["unknown"])
		}
		g := got["garbage"].(map[string]any)
		if g["status"] != float64(400) || !strings.Contains(g["body"].(string), "offset") || strings.Contains(g["body"].(string), "goroutine") {
			t.Errorf("garbage parameters: %v", g)
		}
		if nt := got["noToken"].(map[string]any); nt["status"] != float64(401) {
			t.Errorf("no token: %v", nt)
		}
	})

	t.Run("live", func(t *testing.T) {
		deadline := time.Now().Add(120 * time.Second)
		for {
			if _, err := os.Stat(liveMarker); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the page never came up live")
			}
			time.Sleep(100 * time.Millisecond)
		}
		ev := fmt.Sprintf(`{"session_id":"demo","tool":"Bash","input":{"command":"go vet ./..."},"cwd":%q}`, ws)
		joule(t, home, ev, "gate")
		got := step(t, "live")
		want := len(receiptsLs(t, home, "demo"))
		if got["after"] != fmt.Sprintf("%d (chain verified)", want) {
			t.Errorf("live: before %v, after %v; receipts ls has %d", got["before"], got["after"], want)
		}
		if sl := statusOf(t, home, "demo"); got["decisions"] != sl.decisions {
			t.Errorf("live: page %q, statusline %q", got["decisions"], sl.decisions)
		}
	})

	t.Run("tampered receipt shows broken", func(t *testing.T) {
		db, err := sql.Open("sqlite", filepath.Join(home, "joule.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var env []byte
		if err := db.QueryRow(`SELECT envelope FROM entries WHERE session = 'demo' AND seq = 2`).Scan(&env); err != nil {
			t.Fatal(err)
		}
		env[len(env)-70] ^= 1 // a byte of the payload, before the 64-byte signature
		if _, err := db.Exec(`UPDATE entries SET envelope = ? WHERE session = 'demo' AND seq = 2`, env); err != nil {
			t.Fatal(err)
		}
		ls := receiptsLs(t, home, "demo")
		if ls[1].verdict == "ok" {
			t.Fatalf("receipts ls does not see the tamper: %+v", ls)
		}
		time.Sleep(2100 * time.Millisecond) // the page's index re-reads a chain at most every 2s when the log did not grow
		os.WriteFile(tamperMarker, []byte("go"), 0o600)
		got := step(t, "tampered")
		if !strings.Contains(got["broken"].(string), "first bad position is seq 2") {
			t.Errorf("broken banner: %q", got["broken"])
		}
		if !strings.HasPrefix(got["receiptVerdict"].(string), ls[1].verdict) {
			t.Errorf("the tampered receipt shows %q, receipts ls says %s", got["receiptVerdict"], ls[1].verdict)
		}
		for i, c := range got["chain"].([]any) {
			if v := c.([]any)[2]; v != ls[i].verdict {
				t.Errorf("row %d: page %v, receipts ls %s", i, v, ls[i].verdict)
			}
		}
	})
	if final == nil {
		final = <-done
	}
	if e, ok := final["error"]; ok {
		t.Errorf("browser: %v", e)
	}
	if pe, ok := final["pageErrors"]; ok {
		t.Errorf("page errors: %v", pe)
	}
}

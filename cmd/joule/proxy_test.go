package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/demo"
)

// startDaemon runs `joule ARGS` with env and returns its base URL, read
// from the "listening on" line; the process is stopped with SIGINT at
// cleanup, and its stderr is returned by the stop function.
func startDaemon(t *testing.T, env []string, args ...string) (string, func() string) {
	t.Helper()
	cmd, url, stderr := spawnDaemon(t, env, args...)
	stopped := false
	stop := func() string {
		if !stopped {
			stopped = true
			cmd.Process.Signal(syscall.SIGINT)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("joule %v exited: %v\n%s", args, err, stderr.String())
				}
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Errorf("joule %v did not stop on SIGINT", args)
			}
		}
		return stderr.String()
	}
	t.Cleanup(func() { stop() })
	return url, stop
}

// spawnDaemon starts `joule ARGS` with env and waits for its "listening
// on" line: the process, its base URL and its stderr so far and to come.
func spawnDaemon(t *testing.T, env []string, args ...string) (*exec.Cmd, string, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(jouleBin, args...)
	cmd.Env = append(os.Environ(), env...)
	stderr := new(bytes.Buffer)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("joule %v: %v\n%s", args, err, stderr.String())
	}
	_, url, ok := strings.Cut(strings.TrimSpace(line), "listening on ")
	if !ok {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("joule %v printed %q", args, line)
	}
	return cmd, url, stderr
}

// postMessage sends an Anthropic Messages request for session through a
// proxy at base, as Claude Code does (an API key the proxy must never log),
// and reads the whole answer.
func postMessage(base, path, session, body string) (int, []byte, http.Header, error) {
	req, err := http.NewRequest("POST", base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("x-api-key", "sk-ant-api03-SECRETSECRET")
	req.Header.Set("x-claude-code-session-id", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header, err
}

func TestProxyCommand(t *testing.T) {
	env, _ := initHome(t, "--budget", "20kJ")
	upstream := httptest.NewServer(demo.AnthropicStandIn())
	defer upstream.Close()
	url, stop := startDaemon(t, env, "proxy", "--listen", "127.0.0.1:0", "--anthropic", upstream.URL)

	request := func(maxTokens int) string {
		return fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":%d,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, maxTokens)
	}
	call := func(maxTokens int, session string) (int, []byte, http.Header) {
		code, b, h, err := postMessage(url, "/v1/messages?beta=true", session, request(maxTokens))
		if err != nil {
			t.Fatal(err)
		}
		return code, b, h
	}
	// What the upstream sends directly is what the client gets through the proxy.
	direct, err := http.Post(upstream.URL+"/v1/messages", "application/json", strings.NewReader(request(256)))
	if err != nil {
		t.Fatal(err)
	}
	directBody, _ := io.ReadAll(direct.Body)
	direct.Body.Close()

	code, got, h := call(256, "cc-1")
	if code != 200 || h.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d %s", code, got)
	}
	normalize := func(b []byte) string { // message ids carry a timestamp
		s := string(b)
		i := strings.Index(s, `"id":"msg_demo_`)
		j := strings.Index(s[i+15:], `"`)
		return s[:i] + s[i+15+j:]
	}
	if normalize(got) != normalize(directBody) {
		t.Errorf("proxied stream differs from the direct one:\n%s\n---\n%s", got, directBody)
	}
	// 32000 × 3 J is over 20 kJ: the call is fitted to what the budget pays.
	code, got, h = call(32000, "cc-1")
	if code != 200 || !strings.HasPrefix(h.Get("X-Joule-Fitted"), "max_tokens 32000 -> ") {
		t.Errorf("fitted: %d %q %s", code, h.Get("X-Joule-Fitted"), got)
	}
	// 200 kB of input is 50,000 tokens, 25 kJ: not even the input fits.
	big := `{"model":"claude-sonnet-4-5","max_tokens":256,"messages":[{"role":"user","content":"` + strings.Repeat("x", 200_000) + `"}]}`
	req, _ := http.NewRequest("POST", url+"/v1/messages", strings.NewReader(big))
	req.Header.Set("x-claude-code-session-id", "cc-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 402 || !bytes.Contains(got, []byte(`"billing_error"`)) || !bytes.Contains(got, []byte("joule grant issue --template dev --budget 30MJ --use")) {
		t.Errorf("over budget: %d %s", resp.StatusCode, got)
	}
	logs := stop()
	if strings.Contains(logs, "SECRET") {
		t.Errorf("a credential reached the log:\n%s", logs)
	}
	if !strings.Contains(logs, "sealed anthropic messages session=cc-1 seq=1") {
		t.Errorf("log:\n%s", logs)
	}
	if r := joule(t, []byte(`{"session_id":"cc-1"}`), env, "statusline"); !strings.Contains(r.stdout, "1 of 2 calls fitted to the budget") || strings.Contains(r.stdout, "model tokens") {
		t.Errorf("statusline: %q", r.stdout)
	}
	if r := joule(t, nil, env, "receipts", "show", "cc-1", "2"); !strings.Contains(r.stdout, "max_output_fitted") || !strings.Contains(r.stdout, "max_tokens 32000 -") {
		t.Errorf("the fitted call's receipt: %s %s", r.stdout, r.stderr)
	}
	r := joule(t, nil, env, "receipts", "show", "cc-1", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "efficiency/1") || !strings.Contains(r.stdout, "enforced") || strings.Contains(r.stdout, "SECRET") {
		t.Errorf("receipts show: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := joule(t, nil, env, "receipts", "verify"); r.code != 0 {
		t.Errorf("receipts verify: %s %s", r.stdout, r.stderr)
	}
}

func TestProxyCommandErrors(t *testing.T) {
	env, _ := initHome(t)
	if r := joule(t, nil, env, "proxy", "--anthropic", "ftp://x"); r.code != 2 || !strings.Contains(r.stderr, "not an http(s) URL") {
		t.Errorf("bad upstream: %d %s", r.code, r.stderr)
	}
	home := strings.TrimPrefix(env[0], "JOULE_HOME=")
	os.WriteFile(filepath.Join(home, MeterFile), []byte(`{"classes":[{"pattern":"x*","class":"nope"}]}`), 0o600)
	if r := joule(t, nil, env, "proxy"); r.code != 1 || !strings.Contains(r.stderr, "has no rates") {
		t.Errorf("bad meter.json: %d %s", r.code, r.stderr)
	}
	os.WriteFile(filepath.Join(home, MeterFile), []byte(`{"rates":{"mine":{"input":"1mJ","output":"5mJ"}},"classes":[{"pattern":"mine-*","class":"mine"}]}`), 0o600)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","model":"mine-1","choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":100}}`)
	}))
	defer upstream.Close()
	url, stop := startDaemon(t, env, "proxy", "--listen", "127.0.0.1:0", "--openai", upstream.URL+"/v1", "--session", "configured")
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"mine-1","max_tokens":100,"messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	stop()
	r := joule(t, nil, env, "receipts", "show", "configured", "1")
	if r.code != 0 || !strings.Contains(r.stdout, `1.5 J`) && !strings.Contains(r.stdout, "1500000") {
		t.Errorf("configured rates: 1000 in × 1 mJ + 100 out × 5 mJ = 1.5 J; got %s %s", r.stdout, r.stderr)
	}
}

func TestOtelCommand(t *testing.T) {
	env, _ := initHome(t)
	url, stop := startDaemon(t, env, "otel", "--listen", "127.0.0.1:0")
	body, err := os.ReadFile("../../energy/otlp/testdata/claude_code_logs.json")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url+"/v1/logs", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(got) != "{}" {
		t.Fatalf("%d %s", resp.StatusCode, got)
	}
	stop()
	r := joule(t, nil, env, "receipts", "show", "cc-session-1", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "observed, not enforced") {
		t.Errorf("receipts show: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := joule(t, []byte(`{"session_id":"cc-session-1"}`), env, "statusline"); !strings.Contains(r.stdout, "model tokens observed, not enforced (OTel)") {
		t.Errorf("statusline with telemetry alone: %q", r.stdout)
	}
}

func TestDemoProxy(t *testing.T) {
	home := t.TempDir()
	if _, err := identity.Create(home, "demo.example", false); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	say := func(f string, a ...any) { fmt.Fprintf(&out, f+"\n", a...) }
	if err := demo.Proxy(context.Background(), home, say); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"fitted    max_tokens 32000 -> ", "efficiency/1 #2", "claude-sonnet-4-5-20250929", "coverage enforced, status complete", "nothing reserved"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
	t.Log("\n" + out.String())
}

// TestReadmeMeteredExample runs the README's metered-session example as
// printed: joule init, the grant command it gives, then a Claude Code–like
// session through joule proxy (Opus, max_tokens 128000, a 60 kB context,
// four calls at a time). Every call is forwarded and receipted.
func TestReadmeMeteredExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	if i := strings.Index(section, "## Metering model calls"); i >= 0 {
		section = section[i:]
	}
	m := regexp.MustCompile("`(joule grant issue [^`]*--use)`").FindStringSubmatch(section)
	if m == nil {
		t.Fatal("the README's metering section names no grant command")
	}
	env, _ := initHome(t)
	if r := joule(t, nil, env, strings.Fields(m[1])[1:]...); r.code != 0 {
		t.Fatalf("%s: %d %s", m[1], r.code, r.stderr)
	}
	upstream := httptest.NewServer(demo.AnthropicStandIn())
	defer upstream.Close()
	url, stop := startDaemon(t, env, "proxy", "--listen", "127.0.0.1:0", "--anthropic", upstream.URL, "--quiet")
	body := `{"model":"claude-opus-4-5","max_tokens":128000,"stream":true,"messages":[{"role":"user","content":"` + strings.Repeat("context ", 7500) + `"}]}`
	const calls = 20
	codes := make(chan int, calls)
	sem := make(chan struct{}, 4)
	for i := 0; i < calls; i++ {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			req, _ := http.NewRequest("POST", url+"/v1/messages", strings.NewReader(body))
			req.Header.Set("x-claude-code-session-id", "readme")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				codes <- 0
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !bytes.Contains(b, []byte("message_stop")) {
				t.Errorf("%s: status %d %.300s", m[1], resp.StatusCode, b)
			}
			codes <- resp.StatusCode
		}()
	}
	for i := 0; i < calls; i++ {
		<-codes
	}
	stop()
	r := joule(t, nil, env, "receipts", "ls", "readme")
	if r.code != 0 || strings.Count(r.stdout, "model-call claude-opus") != calls {
		t.Errorf("receipts ls: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := joule(t, nil, env, "receipts", "verify"); r.code != 0 {
		t.Errorf("receipts verify: %s %s", r.stdout, r.stderr)
	}
}

// TestOtelToken: with a token file, joule otel (and joule proxy --otlp)
// refuse exports without the bearer token and record nothing from them.
func TestOtelToken(t *testing.T) {
	env, _ := initHome(t)
	tokenFile := filepath.Join(t.TempDir(), "otlp.token")
	if err := os.WriteFile(tokenFile, []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile("../../energy/otlp/testdata/claude_code_logs.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"otel", "--token-file", tokenFile}, {"proxy", "--otlp", "--otlp-token-file", tokenFile}} {
		url, stop := startDaemon(t, env, append(args, "--listen", "127.0.0.1:0")...)
		post := func(auth string) int {
			req, _ := http.NewRequest("POST", url+"/v1/logs", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode
		}
		before := strings.Count(joule(t, nil, env, "receipts", "ls", "cc-session-1").stdout, "observed")
		for _, bad := range []string{"", "Bearer wrong", "Basic czNjcmV0LXRva2Vu", "Bearer s3cret-token-and-more", "Bearer%20wrong", "Bearer%2s3cret-token"} {
			if code := post(bad); code != http.StatusUnauthorized {
				t.Errorf("%v with %q: %d, want 401", args, bad, code)
			}
		}
		if r := joule(t, nil, env, "receipts", "ls", "cc-session-1"); strings.Count(r.stdout, "observed") != before {
			t.Errorf("%v: an unauthorized export was recorded: %s", args, r.stdout)
		}
		// As the OTel variable is written, and as Claude Code sends the
		// specification's URL-encoded form: as written, %20 included.
		for _, good := range []string{"Bearer s3cret-token", "Bearer%20s3cret-token"} {
			if code := post(good); code != 200 {
				t.Errorf("%v with %q: %d", args, good, code)
			}
		}
		stop()
	}
	if r := joule(t, nil, env, "receipts", "show", "cc-session-1", "1"); r.code != 0 || !strings.Contains(r.stdout, "observed, not enforced") {
		t.Errorf("receipts show: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := joule(t, nil, env, "proxy", "--otlp-token-file", tokenFile); r.code != 2 {
		t.Errorf("--otlp-token-file without --otlp: %+v", r)
	}
}

// TestProxyCoveringReceipt: calls of one session that end together are
// sealed under one receipt; everything that counts calls counts the calls
// it covers, and it verifies like any other.
func TestProxyCoveringReceipt(t *testing.T) {
	env, _ := initHome(t, "--budget", "30MJ")
	upstream := httptest.NewServer(demo.AnthropicStandIn())
	defer upstream.Close()
	url, stop := startDaemon(t, env, "proxy", "--listen", "127.0.0.1:0", "--anthropic", upstream.URL)
	post := func(maxTokens int) {
		body := fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":%d,"messages":[{"role":"user","content":"hi"}]}`, maxTokens)
		if code, b, _, err := postMessage(url, "/v1/messages", "burst", body); err != nil || code != 200 {
			t.Errorf("HTTP %d %s %v", code, b, err)
		}
	}
	// Bursts of 24 concurrent calls until one receipt covers several: the
	// first call of a burst is sealed at once, and those that end while
	// it is being sealed go together.
	calls, covering := 0, ""
	for burst := 0; burst < 5 && covering == ""; burst++ {
		var wg sync.WaitGroup
		for range 24 {
			wg.Add(1)
			go func() { defer wg.Done(); post(256) }()
		}
		wg.Wait()
		calls += 24
		time.Sleep(100 * time.Millisecond) // the sealing loop's linger
		r := joule(t, nil, env, "receipts", "ls", "burst")
		for _, line := range strings.Split(r.stdout, "\n") {
			if strings.Contains(line, " × model-call") {
				covering = line
			}
		}
	}
	stop()
	if covering == "" {
		t.Fatal("no receipt covers several calls after 5 bursts of 24")
	}
	// The list shows a covering receipt as "N × model-call …": the calls
	// it shows add up to those made.
	listed := 0
	many := regexp.MustCompile(`  (\d+) × model-call `)
	for _, line := range strings.Split(joule(t, nil, env, "receipts", "ls", "burst").stdout, "\n")[1:] {
		if m := many.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			listed += n
		} else if strings.Contains(line, "  model-call claude") {
			listed++
		}
	}
	if listed != calls {
		t.Errorf("receipts ls shows %d calls, %d were made", listed, calls)
	}
	seq := strings.Fields(covering)[0]
	r := joule(t, nil, env, "receipts", "show", "burst", seq)
	if r.code != 0 || !strings.Contains(r.stdout, `"calls"`) || strings.Count(r.stdout, `"nonce"`) < 3 {
		t.Errorf("receipts show of the covering receipt %s: %s %s", seq, r.stdout, r.stderr)
	}
	if r := joule(t, nil, env, "receipts", "verify"); r.code != 0 {
		t.Errorf("receipts verify: %s %s", r.stdout, r.stderr)
	}
}

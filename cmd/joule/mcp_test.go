package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/joulehook/joule/internal/testdeps"
)

// mcpProc is a real `joule mcp` process and an mcp-go client on its stdio,
// pinned to the protocol version the editors' SDKs speak.
type mcpProc struct {
	cmd   *exec.Cmd
	c     *client.Client
	notes chan mcp.JSONRPCNotification
}

func startMCP(t testing.TB, env []string, args ...string) *mcpProc {
	t.Helper()
	cmd := exec.Command(jouleBin, append([]string{"mcp"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &mcpProc{cmd: cmd, notes: make(chan mcp.JSONRPCNotification, 100)}
	p.c = client.NewClient(transport.NewIO(stdout, stdin, io.NopCloser(strings.NewReader(""))), client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	t.Cleanup(func() {
		p.c.Close()
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("joule mcp exited with %v: %s", err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Errorf("joule mcp did not exit when its stdin closed")
		}
	})
	p.c.OnNotification(func(n mcp.JSONRPCNotification) {
		select {
		case p.notes <- n:
		default:
		}
	})
	ctx := context.Background()
	if err := p.c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	init.Params.ClientInfo = mcp.Implementation{Name: "joule-test", Version: "1"}
	res, err := p.c.Initialize(ctx, init)
	if err != nil {
		t.Fatalf("initialize: %v (%s)", err, stderr.String())
	}
	if res.ProtocolVersion != mcp.ProtocolVersion20251125 {
		t.Fatalf("negotiated %s", res.ProtocolVersion)
	}
	return p
}

func (p *mcpProc) call(t testing.TB, name string, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	r, err := p.c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text + "\n")
		}
	}
	return r, b.String()
}

func (p *mcpProc) read(t testing.TB, uri string) string {
	t.Helper()
	req := mcp.ReadResourceRequest{}
	req.Params.URI = uri
	r, err := p.c.ReadResource(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", uri, err)
	}
	return r.Contents[0].(mcp.TextResourceContents).Text
}

// TestMCPStdioSeesHookProcess: a subscriber of the server's session is told
// of a decision a separate `joule gate` process seals, within a second.
func TestMCPStdioSeesHookProcess(t *testing.T) {
	env, ws := initHome(t)
	p := startMCP(t, env, "--workspace", ws, "--session", "shared")
	os.WriteFile(filepath.Join(ws, "src", "x.go"), []byte("package x\n"), 0o644)
	if r, out := p.call(t, "read_file", map[string]any{"path": "src/x.go"}); r.IsError || !strings.Contains(out, "joule://sessions/shared/receipts/1") {
		t.Fatalf("read_file: %s", out)
	}
	sub := mcp.SubscribeRequest{}
	sub.Params.URI = "joule://sessions/shared"
	if err := p.c.Subscribe(context.Background(), sub); err != nil {
		t.Fatal(err)
	}
	d := gateOnce(t, env, fmt.Sprintf(`{"session_id":"shared","tool":"Bash","input":{"command":"sudo ls"},"cwd":%q}`, ws))
	if d.Decision != "deny" || d.Sequence != 2 {
		t.Fatalf("joule gate: %+v", d)
	}
	t0 := time.Now() // the receipt is sealed once joule gate has answered
	select {
	case n := <-p.notes:
		if n.Method != mcp.MethodNotificationResourceUpdated || n.Params.AdditionalFields["uri"] != "joule://sessions/shared" {
			t.Errorf("notification: %+v", n)
		}
		t.Logf("notified %s after the receipt was sealed", time.Since(t0))
	case <-time.After(time.Second + 250*time.Millisecond): // a scheduling margin on a loaded machine
		t.Fatal("no notifications/resources/updated within a second of the hook's receipt")
	}
	var sum struct {
		Receipts  int            `json:"receipts"`
		Decisions map[string]any `json:"decisions"`
	}
	json.Unmarshal([]byte(p.read(t, "joule://sessions/shared")), &sum)
	if sum.Receipts != 2 || sum.Decisions["denied"].(float64) != 1 {
		t.Errorf("summary after the hook: %+v", sum)
	}
}

// TestMCPTypeScriptClient drives `joule mcp` with the official TypeScript
// SDK's stdio client (mcpserver/testdata/tsclient/client.mjs).
func TestMCPTypeScriptClient(t *testing.T) {
	const pkg = "../../mcpserver/testdata/tsclient"
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(filepath.Join(testdeps.NodeModules(pkg), "@modelcontextprotocol", "sdk", "package.json")); err != nil || serr != nil {
		msg := "node or @modelcontextprotocol/sdk is missing: run .ci/setup.d/20-mcp.sh"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	env, ws := initHome(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs")
	cmd.Dir = t.TempDir()
	if err := testdeps.Stage(cmd.Dir, pkg); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), env...)
	cmd.Env = append(cmd.Env, "JOULE_BIN="+jouleBin, "MCP_WORKSPACE="+ws, "MCP_SESSION=ts-1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var report struct {
		Notification *struct {
			URI string `json:"uri"`
			MS  int    `json:"ms"`
		} `json:"notification"`
		Tools    map[string]any `json:"tools"`
		Failures []string       `json:"failures"`
	}
	if jerr := json.Unmarshal(out, &report); jerr != nil {
		t.Fatalf("client.mjs: %v %v\nstdout: %s\nstderr: %s", err, jerr, out, stderr.String())
	}
	for _, f := range report.Failures {
		t.Error(f)
	}
	if err != nil {
		t.Fatalf("client.mjs: %v\n%s", err, stderr.String())
	}
	if report.Notification == nil || report.Notification.URI != "joule://sessions/ts-1" {
		t.Fatalf("no update notification: %s", out)
	}
	t.Logf("TypeScript client: %d tool calls checked; update %d ms after joule gate started", len(report.Tools), report.Notification.MS)
}

// TestMCPHTTP: the HTTP transport refuses non-loopback binds, wants the
// bearer token from its token file, and serves a real client.
func TestMCPHTTP(t *testing.T) {
	env, ws := initHome(t)
	r := joule(t, nil, env, "mcp", "--http", "0.0.0.0:0")
	if r.code != 2 || !strings.Contains(r.stderr, "not a loopback address") {
		t.Errorf("non-loopback bind: %d %s", r.code, r.stderr)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(jouleBin, "mcp", "--http", addr, "--workspace", ws, "--session", "web")
	cmd.Env = append(os.Environ(), env...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	line, _ := bufio.NewReader(stderr).ReadString('\n')
	if !strings.Contains(line, "serving http://"+addr+"/mcp") {
		t.Fatalf("banner: %q", line)
	}
	home := strings.TrimPrefix(env[0], "JOULE_HOME=")
	tok, err := os.ReadFile(filepath.Join(home, MCPTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(home, MCPTokenFile)); fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v", fi.Mode())
	}
	if strings.Contains(line, strings.TrimSpace(string(tok))) {
		t.Error("the token was printed")
	}
	resp, err := http.Post("http://"+addr+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("no token: %d", resp.StatusCode)
	}
	c, err := client.NewStreamableHttpClient("http://"+addr+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + strings.TrimSpace(string(tok))}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	c.Start(ctx)
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	init.Params.ClientInfo = mcp.Implementation{Name: "t", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "run_command", map[string]any{"command": "sudo id"}
	res, err := c.CallTool(ctx, req)
	if err != nil || !res.IsError {
		t.Errorf("denied call over HTTP: %+v %v", res, err)
	}
}

// BenchmarkMCPStdio measures, over a real `joule mcp` process's stdio, a
// read_file tools/call (gate decision, sealed receipt, file read) and a
// resources/read of a receipt, each beside a ping round trip measured in the
// same run (the transport's own floor). Targets: read_file p50 ≤ 2 ms,
// ≥ 2,000 receipt reads/s.
func BenchmarkMCPStdio(b *testing.B) {
	env, ws := initHome(b)
	os.WriteFile(filepath.Join(ws, "src", "a.go"), bytes.Repeat([]byte("package a // some text\n"), 100), 0o644)
	p := startMCP(b, env, "--workspace", ws, "--session", "bench")
	ctx := context.Background()
	lat := func(n int, f func()) []time.Duration {
		d := make([]time.Duration, n)
		for i := range d {
			t0 := time.Now()
			f()
			d[i] = time.Since(t0)
		}
		return d
	}
	pid := p.cmd.Process.Pid
	ping := lat(max(b.N, 200), func() { p.c.Ping(ctx) })
	cpu0 := cpuMS(b, pid)
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "read_file", map[string]any{"path": "src/a.go"}
	b.ResetTimer()
	calls := lat(b.N, func() {
		if r, err := p.c.CallTool(ctx, req); err != nil || r.IsError {
			b.Fatalf("read_file: %v %+v", err, r)
		}
	})
	b.StopTimer()
	cpu1 := cpuMS(b, pid)
	rr := mcp.ReadResourceRequest{}
	rr.Params.URI = "joule://sessions/bench/receipts/1"
	reads := lat(max(b.N, 200), func() {
		if _, err := p.c.ReadResource(ctx, rr); err != nil {
			b.Fatal(err)
		}
	})
	report := func(name string, d []time.Duration) (p50 float64) {
		s := append([]time.Duration(nil), d...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		var sum time.Duration
		for _, x := range s {
			sum += x
		}
		p50 = float64(s[len(s)/2].Microseconds()) / 1000
		b.ReportMetric(p50, name+"-p50-ms")
		b.ReportMetric(float64(s[len(s)*99/100].Microseconds())/1000, name+"-p99-ms")
		b.ReportMetric(float64(len(s))/sum.Seconds(), name+"/s")
		return p50
	}
	cpu2 := cpuMS(b, pid)
	// The server's own CPU time per operation: what the figures would be on
	// an idle machine, less the wait for the disk's fsync.
	b.ReportMetric((cpu1-cpu0)/float64(len(calls)), "read_file-server-cpu-ms")
	b.ReportMetric((cpu2-cpu1)/float64(len(reads)), "receipt-read-server-cpu-ms")
	pp := report("ping", ping)
	cp := report("read_file", calls)
	rp := report("receipt-read", reads)
	b.ReportMetric(cp/pp, "x-ping-read_file")
	b.ReportMetric(rp/pp, "x-ping-receipt-read")
}

// BenchmarkMCPResidentMemory reports the server's resident memory after it
// has sealed 10,000 receipts through its tools and summarized them (target
// ≤ 40 MB), beside the resident memory of a freshly started server.
func BenchmarkMCPResidentMemory(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("needs /proc")
	}
	for i := 0; i < b.N; i++ {
		env, ws := initHome(b)
		p := startMCP(b, env, "--workspace", ws, "--session", "rss")
		fresh := rssKB(b, p.cmd.Process.Pid)
		for j := 0; j < 10000; j++ {
			if r, out := p.call(b, "list_directory", map[string]any{"path": "src"}); r.IsError {
				b.Fatal(out)
			}
		}
		p.read(b, "joule://sessions/rss")
		p.read(b, "joule://sessions/rss/receipts?after=9900")
		after := rssKB(b, p.cmd.Process.Pid)
		b.ReportMetric(float64(fresh)/1024, "fresh-MB")
		b.ReportMetric(float64(after)/1024, "after-10k-MB")
		b.ReportMetric(float64(after)/float64(fresh), "x-fresh")
	}
}

// cpuMS is the user and system CPU time process pid has used, in ms.
func cpuMS(t testing.TB, pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Skip("needs /proc")
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64) // fields 14 and 15 of stat, in clock ticks
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) * 1000 / 100 // USER_HZ is 100 on Linux
}

func rssKB(t testing.TB, pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			n, _ := strconv.Atoi(strings.Fields(line)[1])
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/fxamacker/cbor/v2"
)

var jouleBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "joule-l4-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	jouleBin = filepath.Join(dir, "joule")
	build := exec.Command("go", "build", "-trimpath", "-o", jouleBin, "../../../cmd/joule")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building joule: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	// joule-exec beside joule, as make build puts it: joule acp runs the
	// remote agent's process tree under it (l4.Containment).
	build = exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "joule-exec"), "../../../cmd/joule-exec")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building joule-exec: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// need fails under CI (where .ci/setup.d installs the adapters) and skips
// elsewhere when a tool is missing.
func need(t testing.TB, path, what string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (%v): run .ci/setup.d/60-l4-remotes.sh", what, err)
		}
		t.Skipf("%s is not installed: npm ci --prefix tiers/l4/e2e/testdata", what)
	}
	abs, _ := filepath.Abs(path)
	return abs
}

// home is a joule home and a workspace, initialised.
type home struct {
	dir, ws, joule, user string
	env                  []string
	mark                 string // an environment variable every process the test starts inherits
	daemons              []*exec.Cmd
}

func newHome(t testing.TB) *home {
	t.Helper()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	h := &home{dir: dir, ws: filepath.Join(dir, "ws"), joule: filepath.Join(dir, "home"), user: filepath.Join(dir, "userhome")}
	os.MkdirAll(h.ws, 0o755)
	os.MkdirAll(h.user, 0o755)
	os.WriteFile(filepath.Join(h.ws, "README.md"), []byte("# a workspace\n"), 0o644)
	h.mark = fmt.Sprintf("JOULE_E2E_MARK=%d-%d", os.Getpid(), time.Now().UnixNano())
	h.env = []string{"JOULE_HOME=" + h.joule, "HOME=" + h.user, "XDG_CONFIG_HOME=" + filepath.Join(h.user, ".config"), h.mark,
		"PATH=" + filepath.Dir(jouleBin) + ":/usr/local/bin:/usr/bin:/bin"}
	h.run(t, "init", "--steward", "test.example", "--workspace", h.ws)
	return h
}

func (h *home) run(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command(jouleBin, args...)
	cmd.Env = append(os.Environ(), h.env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("joule %v: %v\n%s%s", args, err, out.String(), errb.String())
	}
	return out.String()
}

// proxy starts joule proxy in front of upstream, until the test ends.
func (h *home) proxy(t testing.TB, flag, upstream string) string {
	t.Helper()
	cmd := exec.Command(jouleBin, "proxy", "--listen", "127.0.0.1:0", flag, upstream)
	cmd.Env = append(os.Environ(), h.env...)
	h.daemons = append(h.daemons, cmd)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		t.Logf("proxy log:\n%s", stderr.String())
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	_, url, ok := strings.Cut(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		t.Fatalf("joule proxy printed %q (%v)\n%s", line, err, stderr.String())
	}
	return url
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// editor is the test as the editor joule acp serves: it offers no file
// system and no terminals (joule reads the disk and runs commands itself),
// and rejects every permission request it is asked (none should come).
type editor struct {
	mu      sync.Mutex
	text    strings.Builder
	asked   []string
	updates int
}

func (e *editor) RequestPermission(ctx context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	e.mu.Lock()
	title := ""
	if p.ToolCall.Title != nil {
		title = *p.ToolCall.Title
	}
	e.asked = append(e.asked, title)
	e.mu.Unlock()
	for _, o := range p.Options {
		if o.Kind == acp.PermissionOptionKindRejectOnce {
			return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.RequestPermissionOutcomeSelected{OptionId: o.OptionId}}}, nil
		}
	}
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}, nil
}

func (e *editor) SessionUpdate(ctx context.Context, n acp.SessionNotification) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.updates++
	u := n.Update
	switch {
	case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
		e.text.WriteString(u.AgentMessageChunk.Content.Text.Text)
	case u.AgentThoughtChunk != nil && u.AgentThoughtChunk.Content.Text != nil:
		e.text.WriteString("[thought] " + u.AgentThoughtChunk.Content.Text.Text + "\n")
	}
	return nil
}

func (e *editor) said() string { e.mu.Lock(); defer e.mu.Unlock(); return e.text.String() }

func (e *editor) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound("fs/read_text_file")
}
func (e *editor) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound("fs/write_text_file")
}
func (e *editor) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound("terminal/create")
}
func (e *editor) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound("terminal/kill")
}
func (e *editor) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound("terminal/output")
}
func (e *editor) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound("terminal/release")
}
func (e *editor) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound("terminal/wait_for_exit")
}

// acpSession is joule acp running with a remote agent, driven by editor.
type acpSession struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	conn   *acp.ClientSideConnection
	ed     *editor
	id     acp.SessionId
	stderr *syncBuffer
	done   chan struct{}
}

func (h *home) acp(t testing.TB, remote []string, proxyURL string, extraEnv ...string) *acpSession {
	t.Helper()
	line := ""
	for _, a := range remote {
		line += strconv.Quote(a) + " "
	}
	cmd := exec.Command(jouleBin, "acp", "--remote", strings.TrimSpace(line), "--proxy", proxyURL, "--remote-timeout", "3m")
	cmd.Dir = h.ws
	cmd.Env = append(append(os.Environ(), h.env...), extraEnv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s := &acpSession{cmd: cmd, ed: &editor{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = s.stderr
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		s.close(t)
		t.Logf("joule acp stderr:\n%s", s.stderr.String())
	})
	s.conn = acp.NewClientSideConnection(s.ed, s.stdin, out)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		t.Fatalf("initialize: %v\n%s", err, s.stderr.String())
	}
	ns, err := s.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: h.ws, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	s.id = ns.SessionId
	return s
}

func (s *acpSession) prompt(t testing.TB, text string) (acp.StopReason, string) {
	t.Helper()
	before := len(s.ed.said())
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	r, err := s.conn.Prompt(ctx, acp.PromptRequest{SessionId: s.id, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
	if err != nil {
		t.Fatalf("prompt %q: %v\n%s", text, err, s.stderr.String())
	}
	return r.StopReason, s.ed.said()[before:]
}

// close is the editor going away: joule acp must end, and with it
// everything it started.
func (s *acpSession) close(t testing.TB) {
	s.stdin.Close()
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Errorf("joule acp did not exit after its stdin closed")
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
}

// marked lists the live processes (not zombies) whose environment holds the
// home's mark, with their process groups: what the test started and what
// those started in turn.
func (h *home) marked(t testing.TB) []proc {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte(h.mark+"\x00")) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...
		i := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		pgrp, _ := strconv.Atoi(f[2])
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, proc{pid: pid, pgrp: pgrp, cmd: strings.ReplaceAll(string(cmdline), "\x00", " ")})
	}
	return out
}

type proc struct {
	pid, pgrp int
	cmd       string
}

// noneLeft waits a moment for the marked processes but except (and the
// test's daemons) to go.
func (h *home) noneLeft(t testing.TB, what string, except ...int) {
	t.Helper()
	for _, d := range h.daemons {
		except = append(except, d.Process.Pid)
	}
	var left []proc
	for i := 0; i < 50; i++ {
		left = left[:0]
		for _, p := range h.marked(t) {
			keep := true
			for _, x := range except {
				if p.pid == x {
					keep = false
				}
			}
			if keep {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, p := range left {
		t.Errorf("%s: process %d (group %d) is still running: %s", what, p.pid, p.pgrp, p.cmd)
		syscall.Kill(p.pid, syscall.SIGKILL)
	}
}

// receipts is the session's chain as JSON lines.
func (h *home) receipts(t testing.TB, session string) []map[string]any {
	t.Helper()
	out := h.run(t, "receipts", "export", session, "--format", "jsonl")
	var rs []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m struct {
			Envelope string `json:"envelope"`
			Verdict  string `json:"verdict"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("export line %q: %v", l, err)
		}
		if m.Verdict != "ok" {
			t.Errorf("a receipt does not verify: %s", l)
		}
		env, err := base64.RawURLEncoding.DecodeString(m.Envelope)
		if err != nil {
			t.Fatal(err)
		}
		var sign1 struct {
			_           struct{} `cbor:",toarray"`
			Protected   []byte
			Unprotected map[any]any
			Payload     []byte
			Signature   []byte
		}
		if err := cbor.Unmarshal(env, &sign1); err != nil {
			t.Fatalf("envelope: %v", err)
		}
		var r map[string]any
		if err := cbor.Unmarshal(sign1.Payload, &r); err != nil {
			t.Fatalf("payload: %v", err)
		}
		rs = append(rs, r)
	}
	// The whole chain verifies, too.
	h.run(t, "receipts", "verify", session)
	return rs
}

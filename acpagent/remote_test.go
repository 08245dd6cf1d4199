package acpagent

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/tiers/l4"
)

var (
	fakeRemoteOnce sync.Once
	fakeRemoteBin  string
	fakeRemoteErr  error
)

// fakeRemote builds the scripted remote agent of testdata/fakeremote.
func fakeRemote(t *testing.T) string {
	t.Helper()
	fakeRemoteOnce.Do(func() {
		dir, err := os.MkdirTemp("", "fakeremote")
		if err != nil {
			fakeRemoteErr = err
			return
		}
		fakeRemoteBin = filepath.Join(dir, "fakeremote")
		if out, err := exec.Command("go", "build", "-o", fakeRemoteBin, "./testdata/fakeremote").CombinedOutput(); err != nil {
			fakeRemoteErr = &buildError{string(out)}
		}
	})
	if fakeRemoteErr != nil {
		t.Fatal(fakeRemoteErr)
	}
	return fakeRemoteBin
}

type buildError struct{ out string }

func (e *buildError) Error() string { return "building fakeremote: " + e.out }

func TestMain(m *testing.M) {
	code := m.Run()
	if fakeRemoteBin != "" {
		os.RemoveAll(filepath.Dir(fakeRemoteBin))
	}
	os.Exit(code)
}

func remoteGrant(allow, ask, deny []string) *grant.Grant {
	g := liveGrant([]string{"l0", "l1", "l4"}, deny...)
	g.Allow = append(g.Allow, allow...)
	g.Ask = ask
	return g
}

func withRemote(t *testing.T, commandTimeout time.Duration, env ...string) func(*gate.Gate, *identity.Identity, string) RemoteStage {
	return withRemoteProxy(t, commandTimeout, nil, env...)
}

func withRemoteProxy(t *testing.T, commandTimeout time.Duration, proxy func() string, env ...string) func(*gate.Gate, *identity.Identity, string) RemoteStage {
	bin := fakeRemote(t)
	return func(g *gate.Gate, id *identity.Identity, ws string) RemoteStage {
		return &l4.Remote{Argv: []string{bin}, Env: env, Proxy: proxy, Gate: g, Key: id.Key, Timeout: time.Minute, CommandTimeout: commandTimeout}
	}
}

// TestRemoteTerminalLocal: an editor without terminals; joule runs the
// remote's commands itself, in the workspace, gated as Bash, with its
// timeout and output cap.
func TestRemoteTerminalLocal(t *testing.T) {
	cl := &client{text: map[acp.SessionId]*strings.Builder{}}
	f := newFixtureWith(t, remoteGrant([]string{"Bash"}, []string{"Bash(touch:*)"}, []string{"Bash(rm:*)"}), cl, cl, acp.ClientCapabilities{},
		withRemote(t, 2*time.Second))
	writeWS(t, f.ws, map[string]string{"keep.txt": "x\n", "sub/a.txt": "a\n", "late.sh": "sleep 1; touch late.txt\n"})
	tests := []struct {
		prompt string
		want   []string
	}{
		{"term -line echo out; echo err >&2; exit 3", []string{`exit=3`, `output="out\nerr\n"`, "truncated=false", "released=true"}},
		{"term pwd", []string{`output="` + f.ws + `\n"`, "exit=0"}},
		{"term -cwd " + filepath.Join(f.ws, "sub") + " ls", []string{`output="a.txt\n"`}},
		{"term -limit 10 printf 0123456789abcdef", []string{`output="6789abcdef"`, "truncated=true"}},
		{"term -kill sleep 30", []string{"exit=signal:killed"}},
		{"term sleep 30", []string{"exit=signal:killed", "the command was stopped after 2s"}},
		{"term -cwd /tmp ls", []string{"terminal refused", "outside the workspace"}},
		{"term rm -f keep.txt", []string{"terminal refused", "deny-rule"}},
		{"term touch made.txt", []string{"terminal refused", "the user rejected the command"}}, // ask: the test editor cancels
		{"term no-such-command-joule", []string{"terminal refused", "executable file not found"}},
	}
	for _, tt := range tests {
		t.Run(tt.prompt, func(t *testing.T) {
			sid := f.session(t)
			f.prompt(t, sid, tt.prompt)
			said := f.cl.said(sid)
			for _, w := range tt.want {
				if !strings.Contains(said, w) {
					t.Errorf("said lacks %q:\n%s", w, said)
				}
			}
		})
	}
	for _, p := range []string{"keep.txt"} {
		if _, err := os.Stat(filepath.Join(f.ws, p)); err != nil {
			t.Errorf("a denied command ran: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(f.ws, "made.txt")); err == nil {
		t.Error("a rejected command ran")
	}

	// A terminal the remote leaves running is killed when its turn ends.
	sid := f.session(t)
	f.prompt(t, sid, "leave sh late.sh")
	if !strings.Contains(f.cl.said(sid), "left terminal") {
		t.Fatalf("said:\n%s", f.cl.said(sid))
	}
	time.Sleep(2 * time.Second)
	if _, err := os.Stat(filepath.Join(f.ws, "late.txt")); err == nil {
		t.Error("a terminal left running outlived its turn")
	}
}

// termEditor is an editor offering terminals: it records what it was asked
// to run and answers as if it ran it.
type termEditor struct {
	*client
	mu       sync.Mutex
	created  []acp.CreateTerminalRequest
	released []string
	asked    []string // titles of the permission requests it allowed
}

func (e *termEditor) RequestPermission(_ context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p.ToolCall.Title != nil {
		e.asked = append(e.asked, *p.ToolCall.Title)
	}
	for _, o := range p.Options {
		if o.Kind == acp.PermissionOptionKindAllowOnce {
			return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.RequestPermissionOutcomeSelected{OptionId: o.OptionId}}}, nil
		}
	}
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}, nil
}

func (e *termEditor) CreateTerminal(_ context.Context, p acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.created = append(e.created, p)
	return acp.CreateTerminalResponse{TerminalId: "zed-term-1"}, nil
}

func (e *termEditor) TerminalOutput(_ context.Context, p acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.created[len(e.created)-1]
	zero := 0
	return acp.TerminalOutputResponse{Output: "editor ran: " + c.Command + " " + strings.Join(c.Args, " "), ExitStatus: &acp.TerminalExitStatus{ExitCode: &zero}}, nil
}

func (e *termEditor) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	zero := 0
	return acp.WaitForTerminalExitResponse{ExitCode: &zero}, nil
}

func (e *termEditor) ReleaseTerminal(_ context.Context, p acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.released = append(e.released, p.TerminalId)
	return acp.ReleaseTerminalResponse{}, nil
}

// TestRemoteTerminalEditor: an editor offering terminals runs the remote's
// allowed commands, in its own session, in the workspace; a command the
// grant asks about runs once the user allows it; a denied command never
// reaches it; a terminal left open is released.
func TestRemoteTerminalEditor(t *testing.T) {
	ed := &termEditor{client: &client{text: map[acp.SessionId]*strings.Builder{}}}
	f := newFixtureWith(t, remoteGrant([]string{"Bash"}, []string{"Bash(make:*)"}, []string{"Bash(rm:*)"}), ed, ed.client, acp.ClientCapabilities{Terminal: true}, withRemote(t, 0))
	sid := f.session(t)
	f.prompt(t, sid, "term go test ./...")
	if said := f.cl.said(sid); !strings.Contains(said, `output="editor ran: go test ./..."`) || !strings.Contains(said, "exit=0") {
		t.Fatalf("said:\n%s", said)
	}
	f.prompt(t, sid, "term rm -rf /")
	f.prompt(t, sid, "leave make build")
	ed.mu.Lock()
	defer ed.mu.Unlock()
	if len(ed.created) != 2 {
		t.Fatalf("the editor ran %d commands, want 2 (the denied one never reaches it): %+v", len(ed.created), ed.created)
	}
	c := ed.created[0]
	if c.SessionId != sid || c.Cwd == nil || *c.Cwd != f.ws || c.Command != "go" {
		t.Fatalf("forwarded as %+v", c)
	}
	if len(ed.asked) != 1 || ed.asked[0] != "Run make build" || ed.created[1].Command != "make" {
		t.Fatalf("asked %q, ran %+v", ed.asked, ed.created)
	}
	if len(ed.released) != 2 {
		t.Fatalf("released %v: the released terminal and the one left open", ed.released)
	}
	if !strings.Contains(f.cl.said(sid), "deny-rule") {
		t.Fatalf("said:\n%s", f.cl.said(sid))
	}
}

// TestRemoteProxy: a remote launched while joule proxy runs has its model
// traffic pointed at it, and its reported usage is then not estimated again
// (the proxy's receipts hold it); while none runs, it is launched as
// configured and its reported tokens are estimated.
func TestRemoteProxy(t *testing.T) {
	var mu sync.Mutex
	running := ""
	proxy := func() string { mu.Lock(); defer mu.Unlock(); return running }
	cl := &client{text: map[acp.SessionId]*strings.Builder{}}
	f := newFixtureWith(t, remoteGrant(nil, nil, nil), cl, cl, acp.ClientCapabilities{}, withRemoteProxy(t, 0, proxy, "JOULE_TEST_EXTRA=1"))
	const ask = "env ANTHROPIC_BASE_URL OPENAI_BASE_URL JOULE_TEST_EXTRA"
	t.Setenv("ANTHROPIC_BASE_URL", "")
	t.Setenv("OPENAI_BASE_URL", "")

	sid := f.session(t)
	f.prompt(t, sid, ask)
	if said := f.cl.said(sid); !strings.Contains(said, "remote: env ANTHROPIC_BASE_URL= OPENAI_BASE_URL= JOULE_TEST_EXTRA=1") {
		t.Fatalf("without a proxy:\n%s", said)
	}
	mu.Lock()
	running = "http://127.0.0.1:7411"
	mu.Unlock()
	sid2 := f.session(t)
	f.prompt(t, sid2, ask)
	// A per-session base URL: the proxy seals the calls in this session.
	base := "http://127.0.0.1:7411/session/" + string(sid2)
	if said := f.cl.said(sid2); !strings.Contains(said, "remote: env ANTHROPIC_BASE_URL="+base+" OPENAI_BASE_URL="+base+"/v1 JOULE_TEST_EXTRA=1") {
		t.Fatalf("with a proxy:\n%s", said)
	}
	for sid, want := range map[acp.SessionId]string{sid: "Estimator rates", sid2: "their energy is in the proxy's receipts"} {
		entries, err := f.g.Store.Session(context.Background(), string(sid))
		if err != nil {
			t.Fatal(err)
		}
		found := false
		a := New(Options{Gate: f.g, Key: f.id.Key})
		for _, e := range entries {
			if r, err := a.decode(e.Envelope); err == nil && r.Efficiency != nil && strings.Contains(r.Efficiency.Note, want) {
				found = true
			}
		}
		if !found {
			t.Errorf("session %s: no efficiency receipt noting %q", sid, want)
		}
	}
}

func TestProxyEnv(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:7411":  "ANTHROPIC_BASE_URL=http://127.0.0.1:7411 OPENAI_BASE_URL=http://127.0.0.1:7411/v1 GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:7411",
		"http://127.0.0.1:7411/": "ANTHROPIC_BASE_URL=http://127.0.0.1:7411 OPENAI_BASE_URL=http://127.0.0.1:7411/v1 GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:7411",
		"http://[::1]:9000/v1":   "ANTHROPIC_BASE_URL=http://[::1]:9000 OPENAI_BASE_URL=http://[::1]:9000/v1 GOOGLE_GEMINI_BASE_URL=http://[::1]:9000",
	} {
		if got := strings.Join(l4.ProxyEnv(in), " "); got != want {
			t.Errorf("ProxyEnv(%q) = %s, want %s", in, got, want)
		}
	}
}

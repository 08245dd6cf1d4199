package l4

import (
	"bufio"
	"io"
	"log/slog"
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
	tests := []struct {
		call acp.ToolCallUpdate
		tool string
	}{
		{acp.ToolCallUpdate{Kind: kind(acp.ToolKindExecute), RawInput: map[string]any{"command": "go test ./..."}}, "Bash"},
		{acp.ToolCallUpdate{Kind: kind(acp.ToolKindEdit), Locations: []acp.ToolCallLocation{{Path: "/w/a.go"}}}, "Edit"},
		{acp.ToolCallUpdate{Kind: kind(acp.ToolKindRead), RawInput: map[string]any{"file_path": "/w/a.go"}}, "Read"},
		{acp.ToolCallUpdate{Kind: kind(acp.ToolKindFetch), RawInput: map[string]any{"url": "https://x.test"}}, "WebFetch"},
		{acp.ToolCallUpdate{Kind: kind(acp.ToolKindExecute)}, "remote"}, // no command: judged as an unknown tool
		{acp.ToolCallUpdate{Title: acp.Ptr("Think hard")}, "remote:Think"},
	}
	for _, tt := range tests {
		if got, _ := event(tt.call); got != tt.tool {
			t.Errorf("event(%+v) = %s, want %s", tt.call, got, tt.tool)
		}
	}
}

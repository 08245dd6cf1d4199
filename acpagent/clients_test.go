package acpagent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// What real ACP clients send and answer (cmd/joule's TestACPEmacsClient and
// TestACPAcpxClient run acp.el and acpx for real), one case at a time.

// TestPromptText: agent-shell and Zed split a prompt at each @-mention into
// text and resource_link blocks; the request reads as typed.
func TestPromptText(t *testing.T) {
	ws := "/home/me/ws"
	text := func(s string) acp.ContentBlock { return acp.TextBlock(s) }
	link := func(uri string) acp.ContentBlock { return acp.ResourceLinkBlock("x", uri) }
	tests := []struct {
		name   string
		blocks []acp.ContentBlock
		want   string
	}{
		{"one block", []acp.ContentBlock{text("rename Hello to Greet")}, "rename Hello to Greet"},
		{"a mention, as agent-shell sends it", []acp.ContentBlock{text(`replace "a" with "b" in `), link("file:///home/me/ws/gated/notes.txt")}, `replace "a" with "b" in gated/notes.txt`},
		{"a mention mid-sentence", []acp.ContentBlock{text("rename the function clamp in "), link("file:///home/me/ws/inventory/item.go"), text(" to bound")}, "rename the function clamp in inventory/item.go to bound"},
		{"adjacent blocks without spaces", []acp.ContentBlock{text("format"), link("file:///home/me/ws/main.go")}, "format main.go"},
		{"blocks that are lines", []acp.ContentBlock{text("apply this patch:\n"), text("--- a/x\n+++ b/x\n")}, "apply this patch:\n--- a/x\n+++ b/x\n"},
		{"a file outside the workspace", []acp.ContentBlock{text("find "), link("file:///etc/hosts")}, "find /etc/hosts"},
		{"a sibling directory is outside", []acp.ContentBlock{text("find "), link("file:///home/me/ws2/a.go")}, "find /home/me/ws2/a.go"},
		{"an escaped path", []acp.ContentBlock{text("format "), link("file:///home/me/ws/my%20dir/a.go")}, "format my dir/a.go"},
		{"not a file", []acp.ContentBlock{text("see "), link("https://example.com/x")}, "see https://example.com/x"},
		{"a remote host's file", []acp.ContentBlock{text("see "), link("file://other/home/me/ws/a.go")}, "see file://other/home/me/ws/a.go"},
		{"multi-byte boundary", []acp.ContentBlock{text("ünïcode…"), link("file:///home/me/ws/é.go")}, "ünïcode… é.go"},
		{"a non-breaking space counts as space", []acp.ContentBlock{text("find\u00a0"), link("file:///home/me/ws/a.go")}, "find\u00a0a.go"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := promptText(tt.blocks, ws)
			if err != nil || got != tt.want {
				t.Fatalf("promptText = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	for _, bad := range [][]acp.ContentBlock{{acp.ImageBlock("aGk=", "image/png")}, {text("  ")}, nil} {
		if _, err := promptText(bad, ws); err == nil {
			t.Errorf("promptText(%+v) accepted", bad)
		}
	}
}

// permEditor answers every permission request with answer and records what
// it was asked and what came after (tool call updates).
type permEditor struct {
	*client
	answer func(acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error)
	mu     sync.Mutex
	asked  []acp.RequestPermissionRequest
	failed []string // tool calls reported failed, with their text
}

func (e *permEditor) RequestPermission(_ context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	e.mu.Lock()
	e.asked = append(e.asked, p)
	e.mu.Unlock()
	return e.answer(p)
}

func (e *permEditor) SessionUpdate(ctx context.Context, n acp.SessionNotification) error {
	if u := n.Update.ToolCallUpdate; u != nil && u.Status != nil && *u.Status == acp.ToolCallStatusFailed {
		var sb strings.Builder
		for _, c := range u.Content {
			if c.Content != nil && c.Content.Content.Text != nil {
				sb.WriteString(c.Content.Content.Text.Text)
			}
		}
		e.mu.Lock()
		e.failed = append(e.failed, sb.String())
		e.mu.Unlock()
	}
	return e.client.SessionUpdate(ctx, n)
}

func pick(kind acp.PermissionOptionKind) func(acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return func(p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
		for _, o := range p.Options {
			if o.Kind == kind {
				return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.RequestPermissionOutcomeSelected{OptionId: o.OptionId}}}, nil
			}
		}
		return acp.RequestPermissionResponse{}, errors.New("no such option")
	}
}

// TestPermissionAnswers: joule's own permission request (the grant asks
// before writing gated/), answered each way a client answers: allow and
// reject options; "cancelled", which ACP's clients send when the user
// cancels the turn (agent-shell, then session/cancel); and a JSON-RPC
// error, from a client with no one to ask. Only allow writes; no answer
// makes the prompt itself fail.
func TestPermissionAnswers(t *testing.T) {
	tests := []struct {
		name    string
		answer  func(acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error)
		stop    acp.StopReason
		written bool
		said    string // in the messages
		failed  string // the tool call's failure text
	}{
		{"allow", pick(acp.PermissionOptionKindAllowOnce), acp.StopReasonEndTurn, true, "replaced 1 occurrence", ""},
		{"reject", pick(acp.PermissionOptionKindRejectOnce), acp.StopReasonEndTurn, false, "Writing gated/a.txt was rejected. Nothing was changed.", "was rejected"},
		{"cancelled", func(acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
			return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}, nil
		}, acp.StopReasonCancelled, false, "", "The turn was cancelled. Nothing was changed."},
		{"error", func(acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
			return acp.RequestPermissionResponse{}, acp.NewInternalError(map[string]any{"details": "Permission prompt unavailable in non-interactive mode"})
		}, acp.StopReasonEndTurn, false, "the editor answered the request with an error (Internal error: Permission prompt unavailable in non-interactive mode, code -32603)", "answered the request with an error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ed := &permEditor{client: &client{text: map[acp.SessionId]*strings.Builder{}}, answer: tt.answer}
			g := liveGrant([]string{"l0", "l1"})
			g.Ask = []string{"Write(gated/**)"}
			f := newFixtureWith(t, g, ed, ed.client, acp.ClientCapabilities{}, nil)
			writeWS(t, f.ws, map[string]string{"gated/a.txt": "one\n"})
			sid := f.session(t)
			pr, err := f.conn.Prompt(context.Background(), acp.PromptRequest{SessionId: sid, Prompt: []acp.ContentBlock{acp.TextBlock(`replace "one" with "two" in gated/a.txt`)}})
			if err != nil {
				t.Fatalf("the prompt failed: %v", err)
			}
			if pr.StopReason != tt.stop {
				t.Errorf("stop reason %s, want %s\n%s", pr.StopReason, tt.stop, f.cl.said(sid))
			}
			b, _ := os.ReadFile(filepath.Join(f.ws, "gated", "a.txt"))
			if (string(b) == "two\n") != tt.written {
				t.Errorf("gated/a.txt is %q (want written: %v)", b, tt.written)
			}
			if !strings.Contains(f.cl.said(sid), tt.said) {
				t.Errorf("messages lack %q:\n%s", tt.said, f.cl.said(sid))
			}
			ed.mu.Lock()
			defer ed.mu.Unlock()
			if len(ed.asked) != 1 {
				t.Fatalf("asked %d times", len(ed.asked))
			}
			if tt.failed != "" && (len(ed.failed) != 1 || !strings.Contains(ed.failed[0], tt.failed)) {
				t.Errorf("the tool call failed with %q, want %q", ed.failed, tt.failed)
			}
			if meta, _ := pr.Meta["joule"].(map[string]any); meta == nil || meta["tier"] != "L1" {
				t.Errorf("_meta: %v", pr.Meta)
			}
		})
	}
}

// TestRelayedPermissionOutcome: a remote agent's permission request always
// gets an ACP outcome back, never a JSON-RPC error: the gate's deny and the
// editor's reject pick its reject option, and so does an editor that
// answers the relayed request with an error.
func TestRelayedPermissionOutcome(t *testing.T) {
	tests := []struct {
		name   string
		deny   []string
		answer func(acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error)
		want   string
	}{
		{"the grant denies", []string{"Write(gated/**)"}, pick(acp.PermissionOptionKindAllowOnce), "outcome=selected:no"},
		{"the editor rejects", nil, pick(acp.PermissionOptionKindRejectOnce), "outcome=selected:no"},
		{"the editor errs", nil, func(acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
			return acp.RequestPermissionResponse{}, acp.NewInternalError(map[string]any{"details": "no one to ask"})
		}, "outcome=selected:no"},
		{"the editor cancels", nil, func(acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
			return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}, nil
		}, "outcome=cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ed := &permEditor{client: &client{text: map[acp.SessionId]*strings.Builder{}}, answer: tt.answer}
			f := newFixtureWith(t, remoteGrant(nil, []string{"Write(gated/**)"}, tt.deny), ed, ed.client, acp.ClientCapabilities{}, withRemote(t, 0))
			writeWS(t, f.ws, map[string]string{"gated/a.txt": "one\n"})
			sid := f.session(t)
			f.prompt(t, sid, "deny gated/a.txt")
			if said := f.cl.said(sid); !strings.Contains(said, "remote: permission granted=false "+tt.want) || strings.Contains(said, "permission request failed") {
				t.Fatalf("the remote got:\n%s", said)
			}
		})
	}
}

// TestLoadIssuedSession: a session joule issued loads before anything of it
// is sealed (acpx's session owner starts the agent anew after session/new);
// an id joule did not issue does not.
func TestLoadIssuedSession(t *testing.T) {
	f := newFixture(t, liveGrant([]string{"l0", "l1"}))
	sid := f.session(t)
	cl := &client{text: map[acp.SessionId]*strings.Builder{}}
	conn := f.restart(t, cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: sid, Cwd: f.ws, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("loading the session joule issued: %v", err)
	}
	os.WriteFile(filepath.Join(f.ws, "a.txt"), []byte("x\n"), 0o644)
	if pr, err := conn.Prompt(ctx, acp.PromptRequest{SessionId: sid, Prompt: []acp.ContentBlock{acp.TextBlock(`/replace "x" "y"`)}}); err != nil || pr.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("a prompt in the loaded session: %v %v", pr, err)
	}
	for _, id := range []acp.SessionId{"acp-000000000000000000000000", "acp-../../../etc/passwd", "other"} {
		if _, err := conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: id, Cwd: f.ws, McpServers: []acp.McpServer{}}); err == nil {
			t.Errorf("loaded %q, which joule did not issue", id)
		}
	}
}

package e2e

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// BenchmarkL4Overhead measures what joule acp adds to one turn of the real
// Claude Code (claude-code-acp) answering a prompt, beside the adapter
// driven directly by the same client in the same run: the direct turn is
// start, initialize, session/new and session/prompt (joule starts the
// remote for each turn, so that is the like for like); the joule turn is
// one session/prompt to joule acp, which runs the cascade (L0, L1 and the
// grant's decisions), starts the remote and does the same, snapshots the
// workspace around it and seals the receipts. Both talk to the fake
// Messages endpoint directly (no proxy). It reports ms per turn of each and
// their ratio:
//
//	go test ./tiers/l4/e2e -run '^$' -bench L4Overhead -benchtime 5x
func BenchmarkL4Overhead(b *testing.B) {
	h := newHome(b)
	remote, env := claudeRemote(b, h)
	api := &fakeAnthropic{ws: h.ws}
	upstream := serve(b, api)
	env = append(env, "ANTHROPIC_BASE_URL="+upstream)
	h.run(b, "grant", "issue", "--allow", "Read", "--tiers", "l0,l1,l4", "--budget", "1GJ", "--workspace", h.ws, "--use")

	direct := func() time.Duration {
		start := time.Now()
		cmd := exec.Command(remote[0], remote[1:]...)
		cmd.Dir = h.ws
		cmd.Env = append(append(os.Environ(), h.env...), env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() { in.Close(); syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }()
		conn := acp.NewClientSideConnection(&editor{}, in, out)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if _, err := conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber,
			ClientCapabilities: acp.ClientCapabilities{Fs: acp.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}, Terminal: true}}); err != nil {
			b.Fatal(err)
		}
		ns, err := conn.NewSession(ctx, acp.NewSessionRequest{Cwd: h.ws, McpServers: []acp.McpServer{}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := conn.Prompt(ctx, acp.PromptRequest{SessionId: ns.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("say hello")}}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	s := h.acp(b, remote, "", env...)
	viaJoule := func() time.Duration {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if _, err := s.conn.Prompt(ctx, acp.PromptRequest{SessionId: s.id, Prompt: []acp.ContentBlock{acp.TextBlock("say hello")}}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	direct() // warm the file cache for both
	var d, j time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d += direct()
		j += viaJoule()
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(d.Milliseconds())/n, "direct-ms/turn")
	b.ReportMetric(float64(j.Milliseconds())/n, "joule-ms/turn")
	b.ReportMetric(float64(j-d)/float64(time.Millisecond)/n, "overhead-ms/turn")
	b.ReportMetric(float64(j)/float64(d), "joule/direct")
}

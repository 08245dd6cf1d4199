package mcpserver

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/joulehook/joule/core/gate"
)

// BenchmarkToolCallInProcess is a read_file call through an in-process
// client (gate decision, sealed receipt, file read), beside a ping and a bare
// gate decision of the same event in the same run: x-ping is the call's cost
// over the protocol's own floor, x-decide over the gate's (its durable seal).
func BenchmarkToolCallInProcess(b *testing.B) {
	f := newFixture(b, Limits{})
	os.WriteFile(filepath.Join(f.ws, "a.txt"), []byte("hello\n"), 0o644)
	ctx := context.Background()
	pingNs := timeOp(b, 500, func() { f.c.Ping(ctx) })
	ev := &gate.Event{SessionID: "bare", Tool: "Read", Input: []byte(`{"file_path":` + strconv.Quote(filepath.Join(f.ws, "a.txt")) + `}`), Cwd: f.ws}
	decideNs := timeOp(b, 200, func() { f.gate.Decide(ctx, ev) })
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = ToolRead, map[string]any{"path": "a.txt"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r, err := f.c.CallTool(ctx, req); err != nil || r.IsError {
			b.Fatal(err, r)
		}
	}
	b.StopTimer()
	per := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(per/pingNs, "x-ping")
	b.ReportMetric(per/decideNs, "x-decide")
	b.ReportMetric(decideNs/1e6, "decide-ms")
}

// BenchmarkReceiptReadInProcess is a resources/read of one receipt
// (store read, signature and chain check, JSON), beside a ping.
func BenchmarkReceiptReadInProcess(b *testing.B) {
	f := newFixture(b, Limits{})
	ctx := context.Background()
	f.call(b, ToolList, map[string]any{})
	pingNs := timeOp(b, 500, func() { f.c.Ping(ctx) })
	req := mcp.ReadResourceRequest{}
	req.Params.URI = "joule://sessions/s1/receipts/1"
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.c.ReadResource(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/pingNs, "x-ping")
}

// timeOp returns the mean time of op over n runs, in ns.
func timeOp(b *testing.B, n int, op func()) float64 {
	t0 := time.Now()
	for i := 0; i < n; i++ {
		op()
	}
	return float64(time.Since(t0).Nanoseconds()) / float64(n)
}

package lsp_test

import (
	"context"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/joulehook/joule/tiers/l1/lsp"
)

// BenchmarkWarmRename renames through a resident TypeScript or Python
// server (lsp.Rename: sync, the server's rename, applying it, the check
// on the server's own diagnostics) against the server's own
// textDocument/rename on the same resident server in the same run: p50 of
// each, and the ratio. Each round renames to a new name, so no check
// result is one the server computed before. The goal is ours ≤ 1 s and
// ≤ 1.5× the server's. Skipped when the servers are not installed
// (.ci/setup.d/70-lsp.sh).
func BenchmarkWarmRename(b *testing.B) {
	for _, c := range []struct {
		name, proj, server, file string
		line                     int
		at, to                   string
	}{
		{"ts", "ts", tsServer, "src/shapes.ts", 14, "totalArea", "sumAreas"},
		{"py", "py", pyServer, "pkg/geometry.py", 14, "total_area", "sum_areas"},
	} {
		b.Run(c.name, func(b *testing.B) {
			var srv lsp.Server
			for _, f := range lsp.Discover() {
				if f.Name == c.server {
					if f.Path == "" || f.CheckerPath == "" {
						b.Skipf("%s or %s is not installed: run .ci/setup.d/70-lsp.sh", f.Name, f.Checker)
					}
					srv = f.Server
				}
			}
			root, files := project(b, c.proj)
			column := col(b, files, c.file, c.line, c.at)
			ctx := context.Background()
			pool := &lsp.Pool{}
			old := lsp.Default
			lsp.Default = pool
			defer func() { pool.Close(); lsp.Default = old }()
			server := func(to string) time.Duration {
				d, err := lsp.ServerRename(ctx, srv, root, files, c.file, c.line, column, to)
				if err != nil {
					b.Fatal(err)
				}
				return d
			}
			ours := func(to string) time.Duration {
				t0 := time.Now()
				if _, err := lsp.Rename(ctx, root, files, c.file, c.line, column, to); err != nil {
					b.Fatal(err)
				}
				return time.Since(t0)
			}
			b.StopTimer()
			server(c.to) // the cold start is not measured
			ours(c.to)
			var s, o []time.Duration
			for i := 0; i < b.N; i++ {
				to := c.to + strconv.Itoa(i)
				s = append(s, server(to))
				b.StartTimer()
				o = append(o, ours(to))
				b.StopTimer()
			}
			s50, o50 := median(s), median(o)
			b.ReportMetric(float64(o50.Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(s50.Nanoseconds()), "server-p50-ns")
			b.ReportMetric(float64(o50)/float64(s50), "x-of-server")
		})
	}
}

func median(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

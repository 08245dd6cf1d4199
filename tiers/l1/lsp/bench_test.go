package lsp_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/joulehook/joule/tiers/l1/lsp"
)

// BenchmarkWarmRename renames through a resident TypeScript or Python
// server (lsp.Rename: sync, the server's rename, applying it, the type
// check) against the server's own textDocument/rename on the same
// resident server in the same run: p50 of each, and the ratio. The goal
// is ours ≤ 1 s and ≤ 1.5× the server's. Skipped when the servers are not
// installed (.ci/setup.d/70-lsp.sh).
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
			server := func() time.Duration {
				d, err := lsp.ServerRename(ctx, srv, root, files, c.file, c.line, column, c.to)
				if err != nil {
					b.Fatal(err)
				}
				return d
			}
			ours := func() time.Duration {
				t0 := time.Now()
				if _, err := lsp.Rename(ctx, root, files, c.file, c.line, column, c.to); err != nil {
					b.Fatal(err)
				}
				return time.Since(t0)
			}
			b.StopTimer()
			server() // the cold start is not measured
			ours()
			var s, o []time.Duration
			for i := 0; i < b.N; i++ {
				s = append(s, server())
				b.StartTimer()
				o = append(o, ours())
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

package l2

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"testing"
	"time"
)

// The GOROOT benchmarks index the whole of $(go env GOROOT)/src, which
// takes a minute or more: they run only when L2_BENCH_GOROOT=1.
//
//	L2_BENCH_GOROOT=1 go test -run '^$' -bench GOROOT -benchtime 1x ./tiers/l2/
func gorootSrc(b *testing.B) string {
	if os.Getenv("L2_BENCH_GOROOT") != "1" {
		b.Skip("set L2_BENCH_GOROOT=1 to index GOROOT/src")
	}
	return filepath.Join(runtime.GOROOT(), "src")
}

// BenchmarkIndexGOROOT builds the index of GOROOT/src from nothing.
func BenchmarkIndexGOROOT(b *testing.B) {
	src := gorootSrc(b)
	cpu0, n := cpuTime(), 0
	defer func() {
		if n > 0 {
			b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(n), "cpu-s/op")
		}
	}()
	for b.Loop() {
		n++
		ix, err := Open(filepath.Join(b.TempDir(), "goroot.db"), src)
		if err != nil {
			b.Fatal(err)
		}
		st, err := ix.Update(context.Background(), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(st.Files), "files")
		b.ReportMetric(float64(st.Chunks), "chunks")
		ix.Close()
	}
}

// gorootIndex is built once per benchmark process and shared; benchDir,
// if set, is its temporary home, removed when the benchmarks end.
var (
	gorootIndex *Index
	benchDir    string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if gorootIndex != nil {
		gorootIndex.Close()
	}
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

func sharedGOROOT(b *testing.B) *Index {
	src := gorootSrc(b)
	if gorootIndex == nil {
		// L2_BENCH_DB keeps the index between runs (an update then only
		// stats the tree); by default it is built afresh in a temp dir.
		db := os.Getenv("L2_BENCH_DB")
		if db == "" {
			dir, err := os.MkdirTemp("", "l2bench")
			if err != nil {
				b.Fatal(err)
			}
			benchDir = dir
			db = filepath.Join(dir, "goroot.db")
		}
		ix, err := Open(db, src)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ix.Update(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
		gorootIndex = ix
	}
	return gorootIndex
}

var benchQueries = []string{
	"parse http request header",
	"ServeHTTP",
	"gzip writer flush",
	"where the scheduler steals work from other Ps",
	"utf8 decode rune",
	"json.Unmarshal",
	"tls handshake client hello",
	"sort slice stable",
	"(*Reader).ReadString",
	"atomic compare and swap pointer",
}

// BenchmarkSearchGOROOT is one search (lexical: no model here) on the
// GOROOT index; it reports the median and 95th percentile wall latency
// and the CPU time per query.
func BenchmarkSearchGOROOT(b *testing.B) {
	ix := sharedGOROOT(b)
	ctx := context.Background()
	var lat []time.Duration
	i := 0
	cpu0 := cpuTime()
	for b.Loop() {
		t0 := time.Now()
		if _, err := ix.Search(ctx, benchQueries[i%len(benchQueries)], 10); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		i++
	}
	// CPU time per query, beside wall time: on a shared machine the wall
	// clock also counts the time other processes held the cores.
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(i), "cpu-ms/op")
	reportPercentiles(b, lat)
}

// BenchmarkDefinitionsGOROOT is one exact symbol lookup on the GOROOT index.
func BenchmarkDefinitionsGOROOT(b *testing.B) {
	ix := sharedGOROOT(b)
	ctx := context.Background()
	names := []string{"ServeHTTP", "bufio.NewReader", "(*Reader).ReadString", "Unmarshal", "runtime.gopark"}
	var lat []time.Duration
	i := 0
	for b.Loop() {
		t0 := time.Now()
		if _, err := ix.Definitions(ctx, names[i%len(names)]); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		i++
	}
	reportPercentiles(b, lat)
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
}

// BenchmarkSearchCorpus is a query on the small test corpus: no setup
// beyond a second, so it runs in any -bench run.
func BenchmarkSearchCorpus(b *testing.B) {
	ix, err := Open(filepath.Join(b.TempDir(), "c.db"), corpus)
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	if _, err := ix.Update(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := ix.Search(context.Background(), "reserve units of stock for an order", 10); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpdateNoChange is the cost of an update when nothing changed:
// a walk and a stat per file.
func BenchmarkUpdateNoChange(b *testing.B) {
	ix, err := Open(filepath.Join(b.TempDir(), "c.db"), corpus)
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	if _, err := ix.Update(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := ix.Update(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVectorScan is the brute-force cosine scan behind vector
// search: 20 000 chunks of 768 dimensions (nomic-embed-text's size).
func BenchmarkVectorScan(b *testing.B) {
	const n, dim = 20000, 768
	vc := &vectorCache{dim: dim, ids: make([]int64, n), mat: make([]float32, n*dim)}
	seed := uint32(1)
	rnd := func() float32 { seed = seed*1664525 + 1013904223; return float32(seed>>8)/float32(1<<24) - 0.5 }
	for i := range vc.ids {
		vc.ids[i] = int64(i)
		copy(vc.mat[i*dim:], normalize(func() []float32 {
			v := make([]float32, dim)
			for j := range v {
				v[j] = rnd()
			}
			return v
		}()))
	}
	q := normalize(vc.mat[:dim])
	for b.Loop() {
		if ids, _ := vc.nearest(q, depth); len(ids) != depth || ids[0] != 0 {
			b.Fatalf("nearest of a stored vector is %v", ids[:1])
		}
	}
}

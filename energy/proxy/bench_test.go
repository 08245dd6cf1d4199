package proxy

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The benchmarks put the proxy (with its real store: every call reserves,
// settles and seals durably) and a direct connection side by side against
// the same loopback upstream, in one run.

const benchBody = `{"model":"claude-sonnet-4-5","max_tokens":256,"messages":[{"role":"user","content":"Hello"}]}`
const benchStream = `{"model":"claude-sonnet-4-5","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"Hello"}]}`

func benchClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
}

func post(b *testing.B, c *http.Client, url, body string) {
	resp, err := c.Post(url+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("status %d", resp.StatusCode)
	}
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func upstreamURL(r *rig) string { return "http://" + r.proxy.up[Anthropic].Host }

// BenchmarkAddedLatency: non-streamed calls, direct and proxied in turn.
// added-p50-ms and added-p99-ms are what the proxy adds (target p50 ≤ 1 ms).
// The store/disk variant keeps the store on the test's disk; store/tmpfs
// on /dev/shm, where an fsync costs nothing, which shows how much of the
// added latency is the durable reservation.
func BenchmarkAddedLatency(b *testing.B) {
	b.Run("store=disk", func(b *testing.B) { benchLatency(b, newRig(b, big)) })
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		b.Run("store=tmpfs", func(b *testing.B) {
			dir, err := os.MkdirTemp("/dev/shm", "joule-bench-")
			if err != nil {
				b.Skip(err)
			}
			b.Cleanup(func() { os.RemoveAll(dir) })
			benchLatency(b, newRigIn(b, dir, big))
		})
	}
}

func benchLatency(b *testing.B, r *rig) {
	c := benchClient(4)
	direct, proxied := upstreamURL(r), r.srv.URL
	post(b, c, direct, benchBody)
	post(b, c, proxied, benchBody)
	var d, p []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		post(b, c, direct, benchBody)
		t1 := time.Now()
		post(b, c, proxied, benchBody)
		d, p = append(d, t1.Sub(t0)), append(p, time.Since(t1))
	}
	b.StopTimer()
	r.proxy.Wait()
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	b.ReportMetric(ms(percentile(d, 0.5)), "direct-p50-ms")
	b.ReportMetric(ms(percentile(p, 0.5)), "proxy-p50-ms")
	b.ReportMetric(ms(percentile(p, 0.5)-percentile(d, 0.5)), "added-p50-ms")
	b.ReportMetric(ms(percentile(p, 0.99)-percentile(d, 0.99)), "added-p99-ms")
}

// BenchmarkAddedTTFB: streamed calls; time to the first byte of the body.
func BenchmarkAddedTTFB(b *testing.B) {
	r := newRig(b, big)
	c := benchClient(4)
	ttfb := func(url string) time.Duration {
		t0 := time.Now()
		resp, err := c.Post(url+"/v1/messages", "application/json", strings.NewReader(benchStream))
		if err != nil {
			b.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		if _, err := br.ReadByte(); err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		io.Copy(io.Discard, br)
		resp.Body.Close()
		return d
	}
	direct, proxied := upstreamURL(r), r.srv.URL
	ttfb(direct)
	ttfb(proxied)
	var d, p []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d = append(d, ttfb(direct))
		p = append(p, ttfb(proxied))
	}
	b.StopTimer()
	r.proxy.Wait()
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	b.ReportMetric(ms(percentile(d, 0.5)), "direct-ttfb-p50-ms")
	b.ReportMetric(ms(percentile(p, 0.5)-percentile(d, 0.5)), "added-ttfb-p50-ms")
	b.ReportMetric(ms(percentile(p, 0.99)-percentile(d, 0.99)), "added-ttfb-p99-ms")
}

// BenchmarkThroughput32: 32 concurrent clients; x-direct is the proxy's
// calls per second over the direct connection's (target ≥ 0.5).
func BenchmarkThroughput32(b *testing.B) {
	r := newRig(b, big)
	c := benchClient(32)
	run := func(url string, n int) time.Duration {
		var next atomic.Int64
		var wg sync.WaitGroup
		t0 := time.Now()
		for w := 0; w < 32; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(n) {
					post(b, c, url, benchBody)
				}
			}()
		}
		wg.Wait()
		return time.Since(t0)
	}
	n := max(b.N, 64)
	b.StopTimer()
	directT := run(upstreamURL(r), n)
	b.StartTimer()
	proxyT := run(r.srv.URL, n)
	b.StopTimer()
	r.proxy.Wait()
	sealedT := b.Elapsed()
	b.ReportMetric(float64(n)/directT.Seconds(), "direct-calls/s")
	b.ReportMetric(float64(n)/proxyT.Seconds(), "proxy-calls/s")
	b.ReportMetric(directT.Seconds()/proxyT.Seconds(), "x-direct")
	b.ReportMetric(float64(n)/sealedT.Seconds(), "sealed-calls/s")
}

// BenchmarkMemory1000Streams holds 1,000 streams open, first directly and
// then through the proxy; proxy-MB is the difference in heap in use.
func BenchmarkMemory1000Streams(b *testing.B) {
	const n = 1000
	for i := 0; i < b.N; i++ {
		r := newRig(b, big)
		release := make(chan struct{})
		var open atomic.Int64
		r.up.handler = func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/x-ndjson")
			io.WriteString(w, `{"model":"llama3.2","message":{"role":"assistant","content":"The"},"done":false}`+"\n")
			w.(http.Flusher).Flush()
			open.Add(1)
			<-release
			io.WriteString(w, `{"model":"llama3.2","message":{"role":"assistant","content":""},"done":true,"prompt_eval_count":26,"eval_count":2}`+"\n")
		}
		heap := func(url string) uint64 {
			open.Store(0)
			release = make(chan struct{})
			c := benchClient(n)
			var wg sync.WaitGroup
			for j := 0; j < n; j++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, err := c.Post(url+"/api/chat", "application/json", strings.NewReader(`{"model":"llama3.2","messages":[]}`))
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}()
			}
			for open.Load() < n {
				time.Sleep(10 * time.Millisecond)
			}
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			close(release)
			wg.Wait()
			c.CloseIdleConnections()
			return ms.HeapInuse + ms.StackInuse
		}
		direct := heap(upstreamURL(r))
		proxied := heap(r.srv.URL)
		r.proxy.Wait()
		b.ReportMetric(float64(direct)/(1<<20), "direct-MB")
		b.ReportMetric(float64(proxied)/(1<<20), "with-proxy-MB")
		b.ReportMetric((float64(proxied)-float64(direct))/(1<<20), "proxy-MB")
	}
}

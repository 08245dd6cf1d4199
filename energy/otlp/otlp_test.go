package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/energy"
)

type rig struct {
	t        *testing.T
	st       *store.Store
	srv      *httptest.Server
	verifier *core.Verifier
	grantID  string
}

func newRig(t *testing.T, withGrant bool) *rig {
	st, err := store.Open(filepath.Join(t.TempDir(), "joule.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	sealer, _ := core.NewSealer("test.example", key)
	v, _ := core.NewVerifier("test.example", pub)
	r := &rig{t: t, st: st, verifier: v}
	rec := &Receiver{Table: &energy.Table{}, Recorder: &energy.Recorder{Store: st, Sealer: sealer}}
	if withGrant {
		issuer, _ := grant.NewIssuer("test.example", key)
		now := time.Now()
		s, err := issuer.Sign(&grant.Grant{Subject: grant.AnySubject, Roots: []string{"/"}, BudgetUJ: 1_000_000, NotBefore: now.Unix() - 60, NotAfter: now.Unix() + 3600})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.PutGrant(context.Background(), store.GrantRecord{ID: s.ID.String(), Signed: s.Envelope, BudgetUJ: 1_000_000}); err != nil {
			t.Fatal(err)
		}
		r.grantID = s.ID.String()
		rec.Ledger = st
		rec.Grants = func(context.Context, string) ([]string, error) { return []string{s.ID.String()}, nil }
	}
	r.srv = httptest.NewServer(rec)
	t.Cleanup(r.srv.Close)
	return r
}

func (r *rig) post(path, contentType string, body []byte, gz bool) (int, string) {
	r.t.Helper()
	if gz {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write(body)
		w.Close()
		body = b.Bytes()
	}
	req, _ := http.NewRequest("POST", r.srv.URL+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	if gz {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	out.ReadFrom(resp.Body)
	return resp.StatusCode, out.String()
}

func (r *rig) receipts(session string) []*receipts.Efficiency {
	r.t.Helper()
	entries, err := r.st.Session(context.Background(), session)
	if err != nil {
		return nil
	}
	envs := make([][]byte, len(entries))
	for i, e := range entries {
		envs[i] = e.Envelope
	}
	all, err := receipts.VerifyChain(r.verifier, "test.example", envs)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []*receipts.Efficiency
	for _, a := range all {
		out = append(out, a.Efficiency)
	}
	return out
}

func kv(k string, v any) *commonpb.KeyValue {
	switch x := v.(type) {
	case string:
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: x}}}
	case int:
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(x)}}}
	}
	panic(v)
}

// tokenMetric is a Claude Code or Gemini CLI token counter export.
func tokenMetric(name string, temporality metricspb.AggregationTemporality, start uint64, points map[string]float64, extra ...*commonpb.KeyValue) []byte {
	var dps []*metricspb.NumberDataPoint
	for _, typ := range []string{"input", "output", "cacheRead", "cacheCreation", "cache", "thought"} {
		v, ok := points[typ]
		if !ok {
			continue
		}
		dps = append(dps, &metricspb.NumberDataPoint{
			Attributes:        append([]*commonpb.KeyValue{kv("type", typ), kv("model", "claude-sonnet-4-5")}, extra...),
			StartTimeUnixNano: start, TimeUnixNano: start + 1,
			Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: v},
		})
	}
	m := &metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", "claude-code")}},
		ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{Name: name, Unit: "tokens",
			Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{AggregationTemporality: temporality, IsMonotonic: true, DataPoints: dps}}}}}},
	}}}
	b, _ := proto.Marshal(m)
	return b
}

func usage(e *receipts.Efficiency) energy.Usage {
	return energy.Usage{Input: e.InputTokens, CachedInput: e.CachedInputTokens, CacheWrite: e.CacheWriteTokens, Output: e.OutputTokens}
}

func TestClaudeCodeEventsJSON(t *testing.T) {
	r := newRig(t, true)
	body, err := os.ReadFile("testdata/claude_code_logs.json")
	if err != nil {
		t.Fatal(err)
	}
	code, resp := r.post("/v1/logs", "application/json", body, true)
	if code != 200 || resp != "{}" {
		t.Fatalf("%d %s", code, resp)
	}
	recs := r.receipts("cc-session-1")
	if len(recs) != 1 {
		t.Fatalf("%d receipts", len(recs))
	}
	e := recs[0]
	want := energy.Usage{Input: 20, CachedInput: 162000, CacheWrite: 2000, Output: 400}
	if usage(e) != want || e.Coverage != receipts.CoverageObserved || e.Status != receipts.StatusComplete ||
		!strings.Contains(e.Note, "observed, not enforced") || e.Model != "claude-sonnet-4-5-20250929" {
		t.Errorf("receipt %+v", e)
	}
	if e.EstimatedUJ != (&energy.Table{}).Energy(e.Model, want).UJ {
		t.Errorf("estimated %d", e.EstimatedUJ)
	}
	g, _ := r.st.Grant(context.Background(), r.grantID)
	if g.SpentUJ != e.EstimatedUJ || len(e.Grants) != 1 {
		t.Errorf("charged %d, want %d after the fact (past the budget of %d)", g.SpentUJ, e.EstimatedUJ, g.BudgetUJ)
	}
	// The same session's token metric now describes the same calls: not counted again.
	code, _ = r.post("/v1/metrics", "application/x-protobuf", tokenMetric("claude_code.token.usage", metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA, 1, map[string]float64{"input": 20, "output": 400}, kv("session.id", "cc-session-1")), false)
	if code != 200 {
		t.Fatal(code)
	}
	if n := len(r.receipts("cc-session-1")); n != 1 {
		t.Errorf("%d receipts after the metric: counted twice", n)
	}
}

func TestTokenMetrics(t *testing.T) {
	r := newRig(t, false)
	delta := metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	cumulative := metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	// Claude Code: delta points are summed as they come.
	for i := 0; i < 2; i++ {
		code, _ := r.post("/v1/metrics", "application/x-protobuf", tokenMetric("claude_code.token.usage", delta, uint64(i), map[string]float64{"input": 10, "output": 50, "cacheRead": 1000, "cacheCreation": 5}, kv("session.id", "m1")), false)
		if code != 200 {
			t.Fatal(code)
		}
	}
	recs := r.receipts("m1")
	if len(recs) != 2 || usage(recs[1]) != (energy.Usage{Input: 10, Output: 50, CachedInput: 1000, CacheWrite: 5}) || len(recs[1].Grants) != 0 ||
		!strings.Contains(recs[1].Note, "claude_code.token.usage") {
		t.Fatalf("receipts %+v", recs)
	}
	// Gemini CLI: cumulative; each export records the increase, a restart resets.
	exports := []struct {
		start uint64
		in    float64
		want  uint64
	}{{100, 40, 40}, {100, 70, 30}, {100, 70, 0}, {200, 15, 15}}
	for _, ex := range exports {
		code, _ := r.post("/v1/metrics", "application/x-protobuf", tokenMetric("gemini_cli.token.usage", cumulative, ex.start, map[string]float64{"input": ex.in}, kv("session.id", "g1")), false)
		if code != 200 {
			t.Fatal(code)
		}
	}
	var got []uint64
	for _, e := range r.receipts("g1") {
		got = append(got, e.InputTokens)
	}
	if len(got) != 3 || got[0] != 40 || got[1] != 30 || got[2] != 15 {
		t.Errorf("cumulative series recorded %v, want [40 30 15]", got)
	}
}

func TestGenAISpans(t *testing.T) {
	r := newRig(t, false)
	td := &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
		Name: "chat gpt-4o", TraceId: make([]byte, 16), SpanId: make([]byte, 8),
		Attributes: []*commonpb.KeyValue{kv("gen_ai.conversation.id", "conv-1"), kv("gen_ai.request.model", "gpt-4o"),
			kv("gen_ai.usage.input_tokens", 1000), kv("gen_ai.usage.cache_read.input_tokens", 600), kv("gen_ai.usage.output_tokens", 30)},
	}}}}}}}
	b, _ := proto.Marshal(td)
	if code, _ := r.post("/v1/traces", "application/x-protobuf", b, false); code != 200 {
		t.Fatal(code)
	}
	recs := r.receipts("conv-1")
	if len(recs) != 1 || usage(recs[0]) != (energy.Usage{Input: 400, CachedInput: 600, Output: 30}) {
		t.Fatalf("receipts %+v", recs)
	}
}

func TestBadExports(t *testing.T) {
	r := newRig(t, false)
	tests := []struct {
		path, ct, body string
		gz             bool
		status         int
	}{
		{"/v1/metrics", "application/x-protobuf", "\xff\xff\xff", false, 400},
		{"/v1/logs", "application/json", `{"resourceLogs":[{`, false, 400},
		{"/v1/logs", "text/plain", `{}`, false, 415},
		{"/v1/profiles", "application/json", `{}`, false, 404},
		{"/v1/metrics", "application/json", `not gzip`, false, 400},
		{"/v1/metrics", "application/json", `{}`, true, 200},
	}
	for _, tt := range tests {
		code, body := r.post(tt.path, tt.ct, []byte(tt.body), tt.gz)
		if code != tt.status {
			t.Errorf("%s %s %q: %d %s, want %d", tt.path, tt.ct, tt.body, code, body, tt.status)
		}
	}
}

func FuzzDecode(f *testing.F) {
	body, _ := os.ReadFile("testdata/claude_code_logs.json")
	f.Add("logs", body, true)
	f.Add("metrics", tokenMetric("claude_code.token.usage", 1, 1, map[string]float64{"input": 3}), false)
	r := &Receiver{}
	f.Fuzz(func(t *testing.T, signal string, b []byte, isJSON bool) {
		switch signal {
		case "metrics", "logs", "traces":
		default:
			return
		}
		ex := &export{ctx: context.Background(), series: map[string]seriesState{}, kinds: map[string]string{}}
		obs, err := r.decode(signal, b, isJSON, ex)
		if err != nil && len(obs) > 0 {
			t.Fatal("observations from a body that did not decode")
		}
		for _, o := range obs {
			u := o.usage
			if u.Input > MaxCount || u.CachedInput > MaxCount || u.CacheWrite > MaxCount || u.Output > 2*MaxCount {
				t.Fatalf("an observation past the bound: %+v", u)
			}
		}
	})
}

// logExport is a Claude Code api_request event export in OTLP/JSON with
// the given attributes (values as JSON AnyValues).
func logExport(session string, attrs map[string]string) []byte {
	var kvs []string
	kvs = append(kvs, `{"key":"session.id","value":{"stringValue":"`+session+`"}}`, `{"key":"model","value":{"stringValue":"claude-sonnet-4-5"}}`)
	for k, v := range attrs {
		kvs = append(kvs, `{"key":"`+k+`","value":`+v+`}`)
	}
	return []byte(`{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"claude-code"}}]},"scopeLogs":[{"logRecords":[{"body":{"stringValue":"claude_code.api_request"},"attributes":[` + strings.Join(kvs, ",") + `]}]}]}]}`)
}

// TestRejectsAbsurdCounts: a record with a count that is negative, not a
// number or past MaxCount, on any number path, is rejected with OTLP's
// partialSuccess and neither sealed nor charged; a good record beside it
// is.
func TestRejectsAbsurdCounts(t *testing.T) {
	good := map[string]string{"input_tokens": `{"intValue":"100"}`, "output_tokens": `{"intValue":"50"}`}
	tests := []struct {
		name, path string
		body       []byte
		field      string
	}{
		{"negative string", "/v1/logs", logExport("s", map[string]string{"input_tokens": `{"stringValue":"-1000"}`, "output_tokens": `{"intValue":"50"}`}), "rejectedLogRecords"},
		{"int64 max", "/v1/logs", logExport("s", map[string]string{"input_tokens": `{"intValue":"9223372036854775807"}`}), "rejectedLogRecords"},
		{"past the bound", "/v1/logs", logExport("s", map[string]string{"output_tokens": `{"intValue":"10000001"}`}), "rejectedLogRecords"},
		{"negative int", "/v1/logs", logExport("s", map[string]string{"output_tokens": `{"intValue":"-5"}`}), "rejectedLogRecords"},
		{"huge double", "/v1/logs", logExport("s", map[string]string{"output_tokens": `{"doubleValue":1e300}`}), "rejectedLogRecords"},
		{"not a number", "/v1/logs", logExport("s", map[string]string{"output_tokens": `{"stringValue":"lots"}`}), "rejectedLogRecords"},
		{"a bool", "/v1/logs", logExport("s", map[string]string{"output_tokens": `{"boolValue":true}`}), "rejectedLogRecords"},
		{"delta point 10^12", "/v1/metrics", tokenJSON(metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA, 1e12), "rejectedDataPoints"},
		{"cumulative point 10^12", "/v1/metrics", tokenJSON(metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE, 1e12), "rejectedDataPoints"},
		{"negative point", "/v1/metrics", tokenJSON(metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA, -3), "rejectedDataPoints"},
		{"span", "/v1/traces", spanJSON(`{"key":"gen_ai.usage.input_tokens","value":{"intValue":"-1"}}`), "rejectedSpans"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, true)
			code, body := r.post(tt.path, "application/json", tt.body, false)
			if code != 200 || !strings.Contains(body, `"partialSuccess":{`) || !strings.Contains(body, `"`+tt.field+`":"1"`) || !strings.Contains(body, `"errorMessage":"joule otel: `) {
				t.Errorf("%d %s", code, body)
			}
			if recs := r.receipts("s"); len(recs) != 0 {
				t.Errorf("sealed %+v", recs[0])
			}
			if recs := r.receipts(DefaultSession); len(recs) != 0 {
				t.Errorf("sealed %+v", recs[0])
			}
			g, _ := r.st.Grant(context.Background(), r.grantID)
			if g.SpentUJ != 0 || g.ReservedUJ != 0 {
				t.Errorf("charged: %+v", g)
			}
		})
	}
	t.Run("beside a good record", func(t *testing.T) {
		r := newRig(t, true)
		bad := string(logExport("s", map[string]string{"input_tokens": `{"stringValue":"-1000"}`}))
		okRec := string(logExport("s", good))
		// Two resourceLogs in one export: the bad one rejected, the good one sealed.
		both := strings.TrimSuffix(bad, "]}") + "," + strings.TrimPrefix(okRec, `{"resourceLogs":[`)
		code, body := r.post("/v1/logs", "application/json", []byte(both), false)
		if code != 200 || !strings.Contains(body, `"rejectedLogRecords":"1"`) {
			t.Errorf("%d %s", code, body)
		}
		recs := r.receipts("s")
		if len(recs) != 1 || recs[0].InputTokens != 100 || recs[0].OutputTokens != 50 {
			t.Errorf("receipts %+v", recs)
		}
	})
	t.Run("protobuf", func(t *testing.T) {
		r := newRig(t, true)
		code, body := r.post("/v1/metrics", "application/x-protobuf", tokenMetric("claude_code.token.usage", metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA, 1, map[string]float64{"input": 1e12, "output": 5}, kv("session.id", "s")), false)
		if code != 200 {
			t.Fatalf("%d", code)
		}
		// ExportMetricsServiceResponse{partial_success: {rejected_data_points: 1, error_message}}
		b := []byte(body)
		num, typ, n := protowire.ConsumeTag(b)
		if num != 1 || typ != protowire.BytesType || n < 0 {
			t.Fatalf("response %x", b)
		}
		ps, _ := protowire.ConsumeBytes(b[n:])
		num, _, n = protowire.ConsumeTag(ps)
		rejected, m := protowire.ConsumeVarint(ps[n:])
		if num != 1 || m < 0 || rejected != 1 || !bytes.Contains(ps, []byte("joule otel: ")) {
			t.Errorf("partial success %x", ps)
		}
		if recs := r.receipts("s"); len(recs) != 1 || recs[0].InputTokens != 0 || recs[0].OutputTokens != 5 {
			t.Errorf("receipts %+v", recs)
		}
	})
}

func tokenJSON(temporality metricspb.AggregationTemporality, v float64) []byte {
	b, err := protojson.Marshal(mustMetrics(tokenMetric("claude_code.token.usage", temporality, 1, map[string]float64{"output": v}, kv("session.id", "s"))))
	if err != nil {
		panic(err)
	}
	return b
}

func mustMetrics(b []byte) *metricspb.MetricsData {
	var m metricspb.MetricsData
	if err := proto.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	return &m
}

func spanJSON(attr string) []byte {
	return []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"chat","attributes":[{"key":"session.id","value":{"stringValue":"s"}},` + attr + `,{"key":"gen_ai.usage.output_tokens","value":{"intValue":"5"}}]}]}]}]}`)
}

// TestCumulativeStateSurvivesRestart: a new receiver on the same store
// (joule otel restarted) counts a cumulative series from where the last
// one left it, and keeps each session's first kind of telemetry.
func TestCumulativeStateSurvivesRestart(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "joule.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	sealer, _ := core.NewSealer("test.example", key)
	v, _ := core.NewVerifier("test.example", pub)
	receiver := func() *Receiver {
		return &Receiver{Table: &energy.Table{}, Recorder: &energy.Recorder{Store: st, Sealer: sealer}, State: st}
	}
	post := func(rc *Receiver, path, ct string, body []byte) {
		t.Helper()
		req := httptest.NewRequest("POST", path, bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		w := httptest.NewRecorder()
		rc.ServeHTTP(w, req)
		if w.Code != 200 {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
	}
	cumulative := metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	metric := func(out float64) []byte {
		return tokenMetric("claude_code.token.usage", cumulative, 7, map[string]float64{"output": out}, kv("session.id", "m"))
	}
	post(receiver(), "/v1/metrics", "application/x-protobuf", metric(100))
	post(receiver(), "/v1/metrics", "application/x-protobuf", metric(150)) // a restart in between
	// Session "e" was counted from events; after a restart its metrics are
	// still not counted on top.
	post(receiver(), "/v1/logs", "application/json", logExport("e", map[string]string{"output_tokens": `{"intValue":"40"}`}))
	post(receiver(), "/v1/metrics", "application/x-protobuf", tokenMetric("claude_code.token.usage", cumulative, 7, map[string]float64{"output": 40}, kv("session.id", "e")))
	outputs := func(session string) []uint64 {
		entries, _ := st.Session(context.Background(), session)
		envs := make([][]byte, len(entries))
		for i, e := range entries {
			envs[i] = e.Envelope
		}
		all, err := receipts.VerifyChain(v, "test.example", envs)
		if err != nil {
			t.Fatal(err)
		}
		var out []uint64
		for _, a := range all {
			out = append(out, a.Efficiency.OutputTokens)
		}
		return out
	}
	if got := outputs("m"); len(got) != 2 || got[0] != 100 || got[1] != 50 {
		t.Errorf("cumulative outputs across a restart: %v, want [100 50]", got)
	}
	if got := outputs("e"); len(got) != 1 || got[0] != 40 {
		t.Errorf("session e: %v, want [40] (events only)", got)
	}
}

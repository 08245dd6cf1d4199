// Package otlp is joule's observing meter: an OTLP/HTTP receiver (protobuf
// and JSON) that turns the token usage hosts export as OpenTelemetry
// metrics, logs and spans into efficiency/1 receipts with coverage
// "observed": observed, not enforced, since telemetry cannot refuse a call.
package otlp

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/energy"
)

// DefaultMaxBody bounds an export request, after decompression.
const DefaultMaxBody = 16 << 20

// DefaultSession names receipts whose telemetry carries no session.
const DefaultSession = "otel"

// Ledger charges observed usage after the fact.
type Ledger interface {
	Reserve(ctx context.Context, grants []string, amountUJ uint64) (int64, error)
	Settle(ctx context.Context, id int64, actualUJ uint64) error
}

// Receiver is the OTLP/HTTP receiver, an http.Handler for /v1/metrics,
// /v1/logs and /v1/traces.
type Receiver struct {
	Table    *energy.Table
	Recorder *energy.Recorder
	// Ledger and Grants, when set, charge each observed figure to the
	// session's grant after the fact (it may take the grant past its budget:
	// the call has already happened).
	Ledger  Ledger
	Grants  func(ctx context.Context, session string) ([]string, error)
	Session string
	MaxBody int64
	Logf    func(format string, args ...any)

	mu     sync.Mutex
	series map[string]seriesState // cumulative series: last value seen
	source map[string]string      // session → the kind of telemetry counted for it
}

type seriesState struct {
	start uint64
	value float64
}

// observation is one unit of observed usage.
type observation struct {
	session, model, source string
	kind                   string // "events" (per request) or "metrics" (aggregates)
	usage                  energy.Usage
	includesCached         bool // Input counts cache reads too (OpenAI, Gemini, gen_ai semantics)
}

func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	signal := strings.TrimPrefix(req.URL.Path, "/v1/")
	if signal != "metrics" && signal != "logs" && signal != "traces" {
		http.Error(w, "joule otel: unknown path "+req.URL.Path+"; OTLP/HTTP paths are /v1/metrics, /v1/logs and /v1/traces", http.StatusNotFound)
		return
	}
	if req.Method != http.MethodPost {
		http.Error(w, "joule otel: OTLP export takes POST", http.StatusMethodNotAllowed)
		return
	}
	mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	isJSON := mt == "application/json"
	if !isJSON && mt != "application/x-protobuf" && mt != "application/protobuf" {
		http.Error(w, fmt.Sprintf("joule otel: content type %q: want application/x-protobuf or application/json", mt), http.StatusUnsupportedMediaType)
		return
	}
	body, err := r.readBody(req)
	if err != nil {
		status := http.StatusBadRequest
		if errors.Is(err, errTooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		http.Error(w, "joule otel: "+err.Error(), status)
		return
	}
	obs, err := r.decode(signal, body, isJSON)
	if err != nil {
		http.Error(w, "joule otel: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := r.record(req.Context(), obs); err != nil {
		// Retryable for the exporter: nothing from this request was lost.
		w.Header().Set("Retry-After", "5")
		http.Error(w, "joule otel: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	// An empty Export*ServiceResponse: full success.
	if isJSON {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "{}")
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

var errTooLarge = errors.New("export request is too large")

func (r *Receiver) readBody(req *http.Request) ([]byte, error) {
	limit := r.MaxBody
	if limit <= 0 {
		limit = DefaultMaxBody
	}
	var src io.Reader = req.Body
	switch enc := strings.ToLower(req.Header.Get("Content-Encoding")); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(io.LimitReader(req.Body, limit))
		if err != nil {
			return nil, fmt.Errorf("gzip body: %v", err)
		}
		defer zr.Close()
		src = zr
	default:
		return nil, fmt.Errorf("content encoding %q is not supported (gzip is)", enc)
	}
	b, err := io.ReadAll(io.LimitReader(src, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading the body: %v", err)
	}
	if int64(len(b)) > limit {
		return nil, errTooLarge
	}
	return b, nil
}

// The Export*ServiceRequest messages have the same fields as the *Data
// messages, so decoding into those avoids linking gRPC.
func (r *Receiver) decode(signal string, body []byte, isJSON bool) ([]observation, error) {
	unmarshal := func(m proto.Message) error {
		if isJSON {
			return protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(body, m)
		}
		return proto.Unmarshal(body, m)
	}
	switch signal {
	case "metrics":
		var m metricspb.MetricsData
		if err := unmarshal(&m); err != nil {
			return nil, fmt.Errorf("metrics export: %v", err)
		}
		return r.metrics(&m), nil
	case "logs":
		var l logspb.LogsData
		if err := unmarshal(&l); err != nil {
			return nil, fmt.Errorf("logs export: %v", err)
		}
		return r.logs(&l), nil
	}
	var t tracepb.TracesData
	if err := unmarshal(&t); err != nil {
		return nil, fmt.Errorf("traces export: %v", err)
	}
	return r.spans(&t), nil
}

// attrs is a flattened attribute set: resource, then scope, then point.
type attrs map[string]*commonpb.AnyValue

func (a attrs) add(kvs []*commonpb.KeyValue) attrs {
	for _, kv := range kvs {
		a[kv.GetKey()] = kv.GetValue()
	}
	return a
}

func (a attrs) str(keys ...string) string {
	for _, k := range keys {
		v := a[k]
		if v == nil {
			continue
		}
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			if x.StringValue != "" {
				return x.StringValue
			}
		case *commonpb.AnyValue_IntValue:
			return strconv.FormatInt(x.IntValue, 10)
		}
	}
	return ""
}

// count reads a token count given as an int, a double or a decimal string.
func (a attrs) count(key string) (uint64, bool) {
	v := a[key]
	if v == nil {
		return 0, false
	}
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_IntValue:
		if x.IntValue >= 0 {
			return uint64(x.IntValue), true
		}
	case *commonpb.AnyValue_DoubleValue:
		return toCount(x.DoubleValue)
	case *commonpb.AnyValue_StringValue:
		if n, err := strconv.ParseUint(strings.TrimSpace(x.StringValue), 10, 64); err == nil {
			return n, true
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(x.StringValue), 64); err == nil {
			return toCount(f)
		}
	}
	return 0, false
}

// toCount rounds an exported token count (telemetry sends doubles) to an
// integer; the float never reaches a decision or a receipt.
func toCount(f float64) (uint64, bool) {
	if math.IsNaN(f) || f < 0 || f > 1<<53 {
		return 0, false
	}
	return uint64(math.Round(f)), true
}

func (a attrs) session(def string) string {
	if s := a.str("session.id", "gen_ai.conversation.id", "conversation.id", "session_id"); s != "" && len(s) <= 256 {
		return s
	}
	return def
}

func (a attrs) model() string {
	return a.str("gen_ai.response.model", "gen_ai.request.model", "model")
}

func (r *Receiver) defaultSession() string {
	if r.Session != "" {
		return r.Session
	}
	return DefaultSession
}

func (r *Receiver) metrics(m *metricspb.MetricsData) []observation {
	var out []observation
	for _, rm := range m.GetResourceMetrics() {
		res := attrs{}.add(rm.GetResource().GetAttributes())
		for _, sm := range rm.GetScopeMetrics() {
			for _, met := range sm.GetMetrics() {
				name := met.GetName()
				switch name {
				case "claude_code.token.usage", "gemini_cli.token.usage":
					sum := met.GetSum()
					for _, dp := range sum.GetDataPoints() {
						a := attrs{}.add(rm.GetResource().GetAttributes()).add(dp.GetAttributes())
						v := pointValue(dp)
						if sum.GetAggregationTemporality() == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE {
							v = r.delta(name, res, dp.GetAttributes(), dp.GetStartTimeUnixNano(), v)
						}
						if o, ok := tokenTypeObservation(name, a, v, r.defaultSession()); ok {
							out = append(out, o)
						}
					}
				case "gen_ai.client.token.usage":
					h := met.GetHistogram()
					for _, dp := range h.GetDataPoints() {
						a := attrs{}.add(rm.GetResource().GetAttributes()).add(dp.GetAttributes())
						v := dp.GetSum()
						if h.GetAggregationTemporality() == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE {
							v = r.delta(name, res, dp.GetAttributes(), dp.GetStartTimeUnixNano(), v)
						}
						if o, ok := tokenTypeObservation(name, a, v, r.defaultSession()); ok {
							out = append(out, o)
						}
					}
				}
			}
		}
	}
	return out
}

func pointValue(dp *metricspb.NumberDataPoint) float64 {
	switch v := dp.GetValue().(type) {
	case *metricspb.NumberDataPoint_AsInt:
		return float64(v.AsInt)
	case *metricspb.NumberDataPoint_AsDouble:
		return v.AsDouble
	}
	return 0
}

// delta turns a cumulative series' value into its increase since the last
// export, resetting when the series restarts.
func (r *Receiver) delta(name string, res attrs, point []*commonpb.KeyValue, start uint64, v float64) float64 {
	keys := make([]string, 0, len(res)+len(point))
	for k, val := range res {
		keys = append(keys, k+"="+fmt.Sprint(val.GetValue()))
	}
	for _, kv := range point {
		keys = append(keys, "."+kv.GetKey()+"="+fmt.Sprint(kv.GetValue().GetValue()))
	}
	sort.Strings(keys)
	key := name + "|" + strings.Join(keys, "|")
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.series == nil {
		r.series = map[string]seriesState{}
	}
	prev, seen := r.series[key]
	r.series[key] = seriesState{start: start, value: v}
	if !seen || prev.start != start || v < prev.value {
		return v
	}
	return v - prev.value
}

// tokenTypeObservation reads one point of a token counter split by a type
// attribute.
func tokenTypeObservation(name string, a attrs, v float64, def string) (observation, bool) {
	n, ok := toCount(v)
	if !ok || n == 0 {
		return observation{}, false
	}
	o := observation{session: a.session(def), model: a.model(), source: name, kind: "metrics"}
	typ := a.str("type", "gen_ai.token.type")
	switch name {
	case "claude_code.token.usage":
		switch typ {
		case "input":
			o.usage.Input = n
		case "output":
			o.usage.Output = n
		case "cacheRead":
			o.usage.CachedInput = n
		case "cacheCreation":
			o.usage.CacheWrite = n
		default:
			return observation{}, false
		}
	case "gemini_cli.token.usage":
		o.includesCached = true
		switch typ {
		case "input", "tool":
			o.usage.Input = n
		case "output", "thought":
			o.usage.Output = n
		case "cache":
			o.usage.CachedInput = n
		default:
			return observation{}, false
		}
	default: // gen_ai.client.token.usage: input includes cached tokens
		switch typ {
		case "input":
			o.usage.Input = n
		case "output":
			o.usage.Output = n
		default:
			return observation{}, false
		}
	}
	return o, true
}

func (r *Receiver) logs(l *logspb.LogsData) []observation {
	var out []observation
	for _, rl := range l.GetResourceLogs() {
		for _, sl := range rl.GetScopeLogs() {
			for _, lr := range sl.GetLogRecords() {
				a := attrs{}.add(rl.GetResource().GetAttributes()).add(lr.GetAttributes())
				name := lr.GetEventName()
				if name == "" {
					name = a.str("event.name")
				}
				if name == "" {
					name = lr.GetBody().GetStringValue()
				}
				if o, ok := eventObservation(name, a, r.defaultSession()); ok {
					out = append(out, o)
				}
			}
		}
	}
	return out
}

// eventObservation reads one per-request usage event.
func eventObservation(name string, a attrs, def string) (observation, bool) {
	o := observation{session: a.session(def), model: a.model(), kind: "events"}
	get := func(k string) uint64 { n, _ := a.count(k); return n }
	switch strings.TrimPrefix(name, "claude_code.") {
	case "api_request":
		o.source = "claude_code.api_request"
		o.usage = energy.Usage{Input: get("input_tokens"), CachedInput: get("cache_read_tokens"),
			CacheWrite: get("cache_creation_tokens"), Output: get("output_tokens")}
		return o, true
	}
	switch name {
	case "gemini_cli.api_response":
		o.source, o.includesCached = name, true
		o.usage = energy.Usage{Input: get("input_token_count") + get("tool_token_count"), CachedInput: get("cached_content_token_count"),
			Output: get("output_token_count") + get("thoughts_token_count")}
		return o, !o.usage.Zero()
	case "codex.sse_event":
		if k := a.str("event.kind"); k != "" && k != "response.completed" {
			return observation{}, false
		}
		o.source, o.includesCached = name, true
		o.usage = energy.Usage{Input: get("input_token_count"), CachedInput: get("cached_token_count"), Output: get("output_token_count")}
		return o, !o.usage.Zero()
	}
	return observation{}, false
}

// spans reads gen_ai.usage.* from model-call spans (GenAI semantic
// conventions: input_tokens includes cache reads and writes).
func (r *Receiver) spans(t *tracepb.TracesData) []observation {
	var out []observation
	for _, rs := range t.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				a := attrs{}.add(rs.GetResource().GetAttributes()).add(sp.GetAttributes())
				in, okIn := a.count("gen_ai.usage.input_tokens")
				if !okIn {
					in, okIn = a.count("gen_ai.usage.prompt_tokens")
				}
				outTok, okOut := a.count("gen_ai.usage.output_tokens")
				if !okOut {
					outTok, okOut = a.count("gen_ai.usage.completion_tokens")
				}
				if !okIn && !okOut {
					continue
				}
				read, _ := a.count("gen_ai.usage.cache_read.input_tokens")
				write, _ := a.count("gen_ai.usage.cache_creation.input_tokens")
				read, write = min(read, in), min(write, in-min(read, in))
				out = append(out, observation{session: a.session(r.defaultSession()), model: a.model(), source: "gen_ai span " + sp.GetName(),
					kind: "events", usage: energy.Usage{Input: in - read - write, CachedInput: read, CacheWrite: write, Output: outTok}})
			}
		}
	}
	return out
}

// record seals one receipt per (session, model, source) in the request and
// charges it to the session's grant after the fact.
func (r *Receiver) record(ctx context.Context, obs []observation) error {
	type key struct{ session, model, source string }
	sums := map[key]*observation{}
	var order []key
	r.mu.Lock()
	if r.source == nil {
		r.source = map[string]string{}
	}
	for i := range obs {
		o := obs[i]
		// Per-request events and aggregate metrics describe the same calls:
		// a session's first kind is the one counted, never both.
		if k, ok := r.source[o.session]; ok && k != o.kind {
			continue
		}
		r.source[o.session] = o.kind
		k := key{o.session, o.model, o.source}
		if s, ok := sums[k]; ok {
			s.usage = s.usage.Add(o.usage)
			continue
		}
		sums[k] = &o
		order = append(order, k)
	}
	r.mu.Unlock()
	for _, k := range order {
		o := sums[k]
		u := o.usage
		if o.includesCached {
			cached := min(u.CachedInput, u.Input)
			u.Input -= cached
		}
		if u.Zero() {
			continue
		}
		if err := r.seal(ctx, o, u); err != nil {
			return err
		}
	}
	return nil
}

func (r *Receiver) seal(ctx context.Context, o *observation, u energy.Usage) error {
	est := r.Table.Energy(o.model, u)
	note := fmt.Sprintf("observed, not enforced: %s via OTLP; %s", o.source, est.Basis)
	var grants []string
	if r.Grants != nil && r.Ledger != nil {
		ids, err := r.Grants(ctx, o.session)
		switch {
		case err != nil || len(ids) == 0:
			note += fmt.Sprintf("; not charged: no usable grant (%v)", err)
		default:
			id, err := r.Ledger.Reserve(ctx, ids, 0)
			if err == nil {
				err = r.Ledger.Settle(ctx, id, energy.Cap(est.UJ))
			}
			if err != nil {
				note += "; not charged: " + err.Error()
			} else {
				grants = ids
				note += "; charged after the fact to grant " + ids[len(ids)-1]
			}
		}
	}
	e, _, err := r.Recorder.Seal(ctx, energy.Record{Session: o.session, Unit: "model-call", Model: o.model, Usage: u, Estimate: est,
		Coverage: receipts.CoverageObserved, Complete: true, Note: note, Grants: grants, Time: time.Now()})
	if err != nil {
		return fmt.Errorf("sealing the receipt for session %s: %w", o.session, err)
	}
	if r.Logf != nil {
		r.Logf("observed %s session=%s seq=%d model=%s in=%d cached=%d write=%d out=%d %s %s", o.source, o.session, e.Seq, o.model,
			u.Input, u.CachedInput, u.CacheWrite, u.Output, grant.FormatEnergy(est.UJ), est.Provenance)
	}
	return nil
}

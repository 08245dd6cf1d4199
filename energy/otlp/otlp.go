// Package otlp is joule's observing meter: an OTLP/HTTP receiver (protobuf
// and JSON) that turns the token usage hosts export as OpenTelemetry
// metrics, logs and spans into efficiency/1 receipts with coverage
// "observed": observed, not enforced, since telemetry cannot refuse a call.
package otlp

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
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
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
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
	// Token, when set, is the bearer token every export must carry
	// (Authorization: Bearer TOKEN; exporters send it with
	// OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer TOKEN"); exports
	// without it are refused with 401 and recorded nowhere.
	Token string

	// State, when set, keeps the cumulative state (each series' last value,
	// each session's kind of telemetry) across restarts, so that a new
	// joule otel does not count a cumulative series' whole value again.
	State State

	exportMu sync.Mutex // one export at a time
	mu       sync.Mutex
	series   map[string]seriesState // cumulative series: last value seen
	source   map[string]string      // session → the kind of telemetry counted for it
}

// State is where a Receiver keeps its cumulative state: the store's
// settings (*store.Store implements it).
type State interface {
	Setting(ctx context.Context, key string) (string, error)
	SetSetting(ctx context.Context, key, value string) error
}

type seriesState struct {
	Start uint64  `json:"start"`
	Value float64 `json:"value"`
}

// stateKey is the setting that holds one series' or session's state: a
// digest, since series keys are long and carry any attribute's bytes.
func stateKey(kind, key string) string {
	sum := sha256.Sum256([]byte(key))
	return "otlp." + kind + "." + hex.EncodeToString(sum[:16])
}

// lookup returns the state kept under key: this export's, else memory's,
// else the store's (then remembered).
func lookup[T any](r *Receiver, ex *export, pending map[string]T, mem *map[string]T, kind, key string) (T, bool, error) {
	var zero T
	if v, ok := pending[key]; ok {
		return v, true, nil
	}
	r.mu.Lock()
	v, ok := (*mem)[key]
	r.mu.Unlock()
	if ok || r.State == nil {
		return v, ok, nil
	}
	raw, err := r.State.Setting(ex.ctx, stateKey(kind, key))
	if errors.Is(err, store.ErrNotFound) {
		return zero, false, nil
	}
	if err == nil {
		err = json.Unmarshal([]byte(raw), &v)
	}
	if err != nil {
		return zero, false, fmt.Errorf("reading the %s state of telemetry: %w", kind, err)
	}
	r.mu.Lock()
	if *mem == nil {
		*mem = map[string]T{}
	}
	(*mem)[key] = v
	r.mu.Unlock()
	return v, true, nil
}

// commit keeps the state an export left, once its receipts are sealed.
func (r *Receiver) commit(ex *export) {
	r.mu.Lock()
	if r.series == nil {
		r.series = map[string]seriesState{}
	}
	if r.source == nil {
		r.source = map[string]string{}
	}
	for k, v := range ex.series {
		r.series[k] = v
	}
	for k, v := range ex.kinds {
		r.source[k] = v
	}
	r.mu.Unlock()
	if r.State == nil {
		return
	}
	save := func(kind, key string, v any) {
		b, _ := json.Marshal(v)
		if err := r.State.SetSetting(context.Background(), stateKey(kind, key), string(b)); err != nil && r.Logf != nil {
			r.Logf("keeping the %s state of telemetry: %v (a restart may count it again)", kind, err)
		}
	}
	for k, v := range ex.series {
		save("series", k, v)
	}
	for k, v := range ex.kinds {
		save("kind", k, v)
	}
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
	if r.Token != "" && !r.authorized(req) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="joule otel"`)
		http.Error(w, "joule otel: this receiver takes exports with its bearer token only: set OTEL_EXPORTER_OTLP_HEADERS=\"Authorization=Bearer TOKEN\"", http.StatusUnauthorized)
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
	// One export at a time: each reads the cumulative state the one before
	// left. Exporters send one request a minute or so.
	r.exportMu.Lock()
	defer r.exportMu.Unlock()
	ex := &export{ctx: req.Context(), series: map[string]seriesState{}, kinds: map[string]string{}}
	obs, err := r.decode(signal, body, isJSON, ex)
	if err != nil {
		http.Error(w, "joule otel: "+err.Error(), http.StatusBadRequest)
		return
	}
	err = ex.fail
	if err == nil {
		err = r.record(req.Context(), obs, ex)
	}
	if err == nil {
		r.commit(ex)
	}
	if err != nil {
		// Retryable for the exporter: nothing from this request was lost.
		w.Header().Set("Retry-After", "5")
		http.Error(w, "joule otel: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	if ex.n > 0 && r.Logf != nil {
		r.Logf("rejected %d %s record(s): %s", ex.n, signal, ex.msg)
	}
	writeResponse(w, signal, isJSON, ex)
}

// writeResponse answers an export: an empty Export*ServiceResponse for
// full success, else one whose partial_success counts the rejected
// records (data points, log records, spans) and says why.
func writeResponse(w http.ResponseWriter, signal string, isJSON bool, ex *export) {
	if isJSON {
		w.Header().Set("Content-Type", "application/json")
		if ex.n == 0 {
			io.WriteString(w, "{}")
			return
		}
		field := map[string]string{"metrics": "rejectedDataPoints", "logs": "rejectedLogRecords", "traces": "rejectedSpans"}[signal]
		b, _ := json.Marshal(map[string]any{"partialSuccess": map[string]string{field: strconv.FormatInt(ex.n, 10), "errorMessage": "joule otel: " + ex.msg}})
		w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
	if ex.n == 0 {
		return
	}
	// Export{Metrics,Logs,Trace}PartialSuccess: field 1 the rejected
	// count (int64), field 2 the message; field 1 of the response.
	var ps []byte
	ps = protowire.AppendTag(ps, 1, protowire.VarintType)
	ps = protowire.AppendVarint(ps, uint64(ex.n))
	ps = protowire.AppendTag(ps, 2, protowire.BytesType)
	ps = protowire.AppendString(ps, "joule otel: "+ex.msg)
	var resp []byte
	resp = protowire.AppendTag(resp, 1, protowire.BytesType)
	resp = protowire.AppendBytes(resp, ps)
	w.Write(resp)
}

// authorized reports whether req carries the receiver's bearer token,
// compared in constant time. "Bearer%20TOKEN" is taken too: the OTel
// specification has OTEL_EXPORTER_OTLP_HEADERS values URL-encoded, but
// Claude Code sends them as written, %20 included.
func (r *Receiver) authorized(req *http.Request) bool {
	auth := req.Header.Get("Authorization")
	if len(auth) > 9 && strings.EqualFold(auth[:9], "Bearer%20") {
		auth = auth[:6] + " " + auth[9:]
	}
	scheme, tok, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(r.Token)) == 1
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
func (r *Receiver) decode(signal string, body []byte, isJSON bool, ex *export) ([]observation, error) {
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
		return r.metrics(&m, ex), nil
	case "logs":
		var l logspb.LogsData
		if err := unmarshal(&l); err != nil {
			return nil, fmt.Errorf("logs export: %v", err)
		}
		return r.logs(&l, ex), nil
	}
	var t tracepb.TracesData
	if err := unmarshal(&t); err != nil {
		return nil, fmt.Errorf("traces export: %v", err)
	}
	return r.spans(&t, ex), nil
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

// MaxCount is the most tokens one record may count: one event, one span,
// one delta metric point, or one cumulative point's increase since the
// last. It is the one bound of every number path (ints, doubles, decimal
// strings); no model call or export interval comes near ten million
// tokens, and a record past it is rejected whole, sealed and charged
// nothing.
const MaxCount = 10_000_000

// maxValue bounds a cumulative series' value, whose increases MaxCount
// bounds: past 2^53 a double is no longer an exact count.
const maxValue = 1 << 53

// count reads a token count given as an int, a double or a decimal string:
// ok is false when the attribute is absent, err non-nil when it is there
// but not a count (negative, fractional past rounding, not a number, or
// over MaxCount).
func (a attrs) count(key string) (uint64, bool, error) {
	v := a[key]
	if v == nil {
		return 0, false, nil
	}
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_IntValue:
		if x.IntValue < 0 || x.IntValue > MaxCount {
			return 0, true, fmt.Errorf("%s is %d: a token count is from 0 to %d", key, x.IntValue, MaxCount)
		}
		return uint64(x.IntValue), true, nil
	case *commonpb.AnyValue_DoubleValue:
		n, err := bound(key, x.DoubleValue, MaxCount)
		return n, true, err
	case *commonpb.AnyValue_StringValue:
		str := strings.TrimSpace(x.StringValue)
		if n, err := strconv.ParseInt(str, 10, 64); err == nil {
			if n < 0 || n > MaxCount {
				return 0, true, fmt.Errorf("%s is %q: a token count is from 0 to %d", key, clip(str), MaxCount)
			}
			return uint64(n), true, nil
		}
		f, err := strconv.ParseFloat(str, 64)
		if err != nil {
			return 0, true, fmt.Errorf("%s is %q, not a number", key, clip(str))
		}
		n, err := bound(key, f, MaxCount)
		return n, true, err
	}
	return 0, true, fmt.Errorf("%s is not a number", key)
}

func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

// bound rounds an exported token count (telemetry sends doubles) to an
// integer, refusing one that is not a number, negative, or over limit; the
// float never reaches a decision or a receipt.
func bound(what string, f float64, limit uint64) (uint64, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > float64(limit) {
		return 0, fmt.Errorf("%s is %v: a token count is from 0 to %d", what, f, limit)
	}
	return uint64(math.Round(f)), nil
}

// export is the state of one export request: the records rejected (and
// why the first was), and the cumulative-metric state it would leave,
// which is kept only once its receipts are sealed.
type export struct {
	ctx    context.Context
	n      int64
	msg    string
	series map[string]seriesState // series key → its last value, after this export
	kinds  map[string]string      // session → the kind of telemetry counted for it
	fail   error                  // the state could not be read: retry the export
}

func (ex *export) add(err error) {
	if ex.n == 0 {
		ex.msg = err.Error()
	}
	ex.n++
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

func (r *Receiver) metrics(m *metricspb.MetricsData, ex *export) []observation {
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
						n, err := r.point(ex, name, res, dp.GetAttributes(), dp.GetStartTimeUnixNano(), pointValue(dp),
							sum.GetAggregationTemporality() == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE)
						if err != nil {
							ex.add(err)
							continue
						}
						if o, ok := tokenTypeObservation(name, a, n, r.defaultSession()); ok {
							out = append(out, o)
						}
					}
				case "gen_ai.client.token.usage":
					h := met.GetHistogram()
					for _, dp := range h.GetDataPoints() {
						a := attrs{}.add(rm.GetResource().GetAttributes()).add(dp.GetAttributes())
						n, err := r.point(ex, name, res, dp.GetAttributes(), dp.GetStartTimeUnixNano(), dp.GetSum(),
							h.GetAggregationTemporality() == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE)
						if err != nil {
							ex.add(err)
							continue
						}
						if o, ok := tokenTypeObservation(name, a, n, r.defaultSession()); ok {
							out = append(out, o)
						}
					}
				}
			}
		}
	}
	return out
}

// point is the count a metric point adds: its value (delta series) or its
// increase since the series' last point (cumulative), bounded by MaxCount.
// A rejected point leaves the series' state as it was.
func (r *Receiver) point(ex *export, name string, res attrs, point []*commonpb.KeyValue, start uint64, v float64, cumulative bool) (uint64, error) {
	if !cumulative {
		return bound(name+" point", v, MaxCount)
	}
	if _, err := bound(name+" cumulative value", v, maxValue); err != nil {
		return 0, err
	}
	return r.delta(ex, name, res, point, start, v)
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
// export, resetting when the series restarts; an increase over MaxCount is
// rejected and not remembered.
func (r *Receiver) delta(ex *export, name string, res attrs, point []*commonpb.KeyValue, start uint64, v float64) (uint64, error) {
	keys := make([]string, 0, len(res)+len(point))
	for k, val := range res {
		keys = append(keys, k+"="+fmt.Sprint(val.GetValue()))
	}
	for _, kv := range point {
		keys = append(keys, "."+kv.GetKey()+"="+fmt.Sprint(kv.GetValue().GetValue()))
	}
	sort.Strings(keys)
	key := name + "|" + strings.Join(keys, "|")
	prev, seen, err := lookup(r, ex, ex.series, &r.series, "series", key)
	if err != nil {
		ex.fail = err
		return 0, nil
	}
	d := v
	if seen && prev.Start == start && v >= prev.Value {
		d = v - prev.Value
	}
	n, err := bound(name+" increase", d, MaxCount)
	if err != nil {
		return 0, err
	}
	ex.series[key] = seriesState{Start: start, Value: v}
	return n, nil
}

// tokenTypeObservation reads one point of a token counter split by a type
// attribute.
func tokenTypeObservation(name string, a attrs, n uint64, def string) (observation, bool) {
	if n == 0 {
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

func (r *Receiver) logs(l *logspb.LogsData, ex *export) []observation {
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
				o, ok, err := eventObservation(name, a, r.defaultSession())
				if err != nil {
					ex.add(fmt.Errorf("%s: %w", name, err))
					continue
				}
				if ok {
					out = append(out, o)
				}
			}
		}
	}
	return out
}

// eventObservation reads one per-request usage event.
func eventObservation(name string, a attrs, def string) (o observation, ok bool, err error) {
	o = observation{session: a.session(def), model: a.model(), kind: "events"}
	// A record with any count that is not one is rejected whole.
	var bad error
	get := func(k string) uint64 {
		n, _, e := a.count(k)
		if e != nil && bad == nil {
			bad = e
		}
		return n
	}
	defer func() {
		if bad != nil {
			o, ok, err = observation{}, false, bad
		}
	}()
	switch strings.TrimPrefix(name, "claude_code.") {
	case "api_request":
		o.source = "claude_code.api_request"
		o.usage = energy.Usage{Input: get("input_tokens"), CachedInput: get("cache_read_tokens"),
			CacheWrite: get("cache_creation_tokens"), Output: get("output_tokens")}
		return o, true, nil
	}
	switch name {
	case "gemini_cli.api_response":
		o.source, o.includesCached = name, true
		o.usage = energy.Usage{Input: get("input_token_count") + get("tool_token_count"), CachedInput: get("cached_content_token_count"),
			Output: get("output_token_count") + get("thoughts_token_count")}
		return o, !o.usage.Zero(), nil
	case "codex.sse_event":
		if k := a.str("event.kind"); k != "" && k != "response.completed" {
			return observation{}, false, nil
		}
		o.source, o.includesCached = name, true
		o.usage = energy.Usage{Input: get("input_token_count"), CachedInput: get("cached_token_count"), Output: get("output_token_count")}
		return o, !o.usage.Zero(), nil
	}
	return observation{}, false, nil
}

// spans reads gen_ai.usage.* from model-call spans (GenAI semantic
// conventions: input_tokens includes cache reads and writes).
func (r *Receiver) spans(t *tracepb.TracesData, ex *export) []observation {
	var out []observation
	for _, rs := range t.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				a := attrs{}.add(rs.GetResource().GetAttributes()).add(sp.GetAttributes())
				var bad error
				get := func(k string) (uint64, bool) {
					n, ok, err := a.count(k)
					if err != nil && bad == nil {
						bad = err
					}
					return n, ok
				}
				in, okIn := get("gen_ai.usage.input_tokens")
				if !okIn {
					in, okIn = get("gen_ai.usage.prompt_tokens")
				}
				outTok, okOut := get("gen_ai.usage.output_tokens")
				if !okOut {
					outTok, okOut = get("gen_ai.usage.completion_tokens")
				}
				read, _ := get("gen_ai.usage.cache_read.input_tokens")
				write, _ := get("gen_ai.usage.cache_creation.input_tokens")
				if bad != nil {
					ex.add(fmt.Errorf("span %s: %w", sp.GetName(), bad))
					continue
				}
				if !okIn && !okOut {
					continue
				}
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
func (r *Receiver) record(ctx context.Context, obs []observation, ex *export) error {
	type key struct{ session, model, source string }
	sums := map[key]*observation{}
	var order []key
	for i := range obs {
		o := obs[i]
		// Per-request events and aggregate metrics describe the same calls:
		// a session's first kind is the one counted, never both.
		kind, ok, err := lookup(r, ex, ex.kinds, &r.source, "kind", o.session)
		if err != nil {
			return err
		}
		if ok && kind != o.kind {
			continue
		}
		ex.kinds[o.session] = o.kind
		k := key{o.session, o.model, o.source}
		if s, ok := sums[k]; ok {
			s.usage = s.usage.Add(o.usage)
			continue
		}
		sums[k] = &o
		order = append(order, k)
	}
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

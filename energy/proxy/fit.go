package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/energy"
)

// Fitting (docs/meter.md). A host asks for the most output a model may
// give (Claude Code asks Opus for 128,000 tokens on every call) and
// usually gets a few hundred. Reserving that worst case would refuse every
// call on a budget of the size a day of work has, so when the grant
// cannot pay for the whole cap the proxy lowers the request's output cap
// to what the budget can pay, reserves that, and forwards the call: the
// upstream then stops by itself at the cap, so the ceiling holds exactly
// and no answer is cut mid-stream. Only when not even the request's input
// and a floor of output fit is the call refused.

// DefaultFloor is the fewest output tokens a fitted call is given; below
// it the call is refused.
const DefaultFloor = 1024

// thinkingMin is Anthropic's least thinking.budget_tokens; the budget
// must also stay below max_tokens.
const thinkingMin = 1024

// maxCap is the largest output cap the proxy takes: 2^53, past which a
// JSON number is no longer an exact integer in most clients.
const maxCap = 1 << 53

// member is one member of a JSON object: its key and its value's span.
type member struct {
	key        string
	start, end int
}

// members scans a JSON object's top level, keeping each value's byte span,
// so the body can be changed in one place and kept byte for byte
// elsewhere. A valid body (json.Valid, one pass) is split in a second pass
// that only finds where each member ends, with no copy of any value: a
// request body can be megabytes of messages. An invalid one goes to
// decodeMembers for encoding/json's account of what is wrong. A valid
// object's members are appended to dst, which may be on the caller's stack;
// with none, a slice is made for a request's handful.
func members(dst []member, obj []byte) ([]member, error) {
	if !json.Valid(obj) {
		return decodeMembers(obj)
	}
	i := skipSpace(obj, 0)
	if obj[i] != '{' {
		return nil, errors.New("not an object")
	}
	if dst == nil {
		dst = make([]member, 0, 8)
	}
	return appendMembers(dst, obj, i)
}

// appendMembers appends the members of the valid JSON object that starts
// at obj[i] to out.
func appendMembers(out []member, obj []byte, i int) ([]member, error) {
	for i = skipSpace(obj, i+1); obj[i] != '}'; i = skipSpace(obj, i+1) {
		end := stringEnd(obj, i)
		key, known := interned[string(obj[i+1:end-1])]
		if !known {
			var err error
			if key, err = unquote(obj[i:end]); err != nil {
				return nil, err
			}
		}
		start := skipSpace(obj, skipSpace(obj, end)+1) // past the colon
		i = valueEnd(obj, start)
		out = append(out, member{key, start, i})
		if i = skipSpace(obj, i); obj[i] == '}' {
			break
		}
		// obj[i] is the comma before the next member.
	}
	return out, nil
}

// unquote is the string a valid JSON string literal says.
func unquote(lit []byte) (string, error) {
	if plainKey(lit[1 : len(lit)-1]) {
		return string(lit[1 : len(lit)-1]), nil
	}
	var key string
	err := json.Unmarshal(lit, &key)
	return key, err
}

// plainKey reports whether a key's bytes are what it says: no escapes and
// nothing encoding/json would replace as invalid UTF-8.
func plainKey(k []byte) bool {
	for _, c := range k {
		if c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// stringEnd is the index just past the valid JSON string that starts at i.
func stringEnd(b []byte, i int) int {
	for i++; b[i] != '"'; i++ {
		if b[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// valueEnd is the index just past the valid JSON value that starts at i.
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\r' && b[i] != '\n' {
		i++
	}
	return i
}

// decodeMembers is members by encoding/json's decoder, which says what is
// wrong with a body that is not valid JSON.
func decodeMembers(obj []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not an object")
	}
	var out []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		end := int(dec.InputOffset())
		out = append(out, member{key, end - len(raw), end})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if len(bytes.TrimLeft(obj[dec.InputOffset():], " \t\r\n")) != 0 {
		return nil, errors.New("data after the object")
	}
	return out, nil
}

// readKeys are the members the meter reads: each must appear at most once,
// since a provider may take the first where joule took the last.
var readKeys = map[string]bool{
	"model": true, "stream": true, "stream_options": true, "max_tokens": true, "max_completion_tokens": true,
	"max_output_tokens": true, "options": true, "thinking": true, "num_predict": true, "budget_tokens": true,
	"generationConfig": true, "maxOutputTokens": true,
}

// interned are the keys requests and responses commonly have, and the
// string values the meter reads in every event, each once as a string:
// members and decodeString take one from here rather than allocating it.
var interned = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		"model", "stream", "stream_options", "max_tokens", "max_completion_tokens", "max_output_tokens",
		"options", "thinking", "num_predict", "budget_tokens", "messages", "system", "tools", "tool_choice",
		"metadata", "temperature", "top_p", "top_k", "stop", "stop_sequences", "input", "instructions",
		"prompt", "reasoning", "text", "store", "user", "n", "seed", "response_format", "parallel_tool_calls",
		"previous_response_id", "include", "service_tier", "context_management", "betas", "format", "keep_alive",
		"think", "type", "include_usage",
		// and responses
		"id", "role", "content", "stop_reason", "stop_sequence", "usage", "input_tokens", "output_tokens",
		"cache_creation_input_tokens", "cache_read_input_tokens", "cache_creation", "server_tool_use", "error",
		"message", "delta", "index", "object", "created", "choices", "finish_reason", "prompt_tokens",
		"completion_tokens", "total_tokens", "prompt_tokens_details", "completion_tokens_details", "cached_tokens",
		"partial_json", "content_block", "ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens",
		// Messages stream event types
		"message_start", "message_delta", "message_stop", "content_block_start", "content_block_delta",
		"content_block_stop", "ping", "text_delta", "input_json_delta", "thinking_delta", "signature_delta",
	} {
		m[k] = k
	}
	return m
}()

// object is a JSON object's top-level members, in order, over its bytes.
type object struct {
	b  []byte
	ms []member
}

// parseObject parses a JSON object into its members, refusing a member the
// meter reads that appears twice.
func parseObject(b []byte) (object, error) {
	ms, err := members(nil, b)
	if err != nil {
		return object{}, err
	}
	for i, m := range ms {
		if !readKeys[m.key] {
			continue
		}
		for _, earlier := range ms[:i] {
			if earlier.key == m.key {
				return object{}, &dupKeyError{m.key}
			}
		}
	}
	return object{b, ms}, nil
}

// get is the value of member key and where it is in the object; of a key
// named twice, the last, as encoding/json takes it.
func (o object) get(key string) (json.RawMessage, member, bool) {
	for i := len(o.ms) - 1; i >= 0; i-- {
		if m := o.ms[i]; m.key == key {
			return o.b[m.start:m.end:m.end], m, true
		}
	}
	return nil, member{}, false
}

// value is the value of member key, or nil.
func (o object) value(key string) json.RawMessage {
	raw, _, _ := o.get(key)
	return raw
}

// dupKeyError is a member the meter reads named twice.
type dupKeyError struct{ key string }

func (e *dupKeyError) Error() string {
	return fmt.Sprintf("%q appears twice in the request body; name it once", e.key)
}

// capField is one output-cap member of a request: where it is and what it
// says.
type capField struct {
	name    string // as the request spells it: "max_tokens", "options.num_predict"
	present bool   // in the body with a number (null and Ollama's -1/-2 are absent)
	value   uint64
	span    member // in the body, or within the options object
}

// outputCap is what a request says about its output: the cap members
// present, the thinking budget, and where options live.
type outputCap struct {
	fields      []capField
	options     *member // the object a nested cap lives in (Ollama's options, Gemini's generationConfig), when present
	optionsNull *member // that object's member when it is null
	thinking    *member // Anthropic's thinking object, when it has a budget
	budget      uint64  // thinking.budget_tokens
	budgetAt    member  // its span within the thinking object
}

// requested is the cap the request names (the smallest present), if any.
func (oc *outputCap) requested() (uint64, bool) {
	var n uint64
	ok := false
	for _, f := range oc.fields {
		if f.present && (!ok || f.value < n) {
			n, ok = f.value, true
		}
	}
	return n, ok
}

// parseCap reads one cap value. Ollama's num_predict takes -1 (no limit)
// and -2 (fill the context), which are absent caps here.
func parseCap(name string, raw []byte, ollama bool) (uint64, bool, error) {
	s := string(bytes.TrimSpace(raw))
	if s == "null" {
		return 0, false, nil
	}
	if s == "" || s[0] != '-' && (s[0] < '0' || s[0] > '9') {
		return 0, false, fmt.Errorf("%q must be an integer, not %s", name, clip(s, 32))
	}
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil && strings.ContainsAny(s, ".eE"):
		return 0, false, fmt.Errorf("%q must be a whole number, not %s", name, clip(s, 32))
	case err != nil || n > maxCap:
		return 0, false, fmt.Errorf("%q is %s, above the largest cap joule takes (2^53)", name, clip(s, 32))
	case ollama && (n == -1 || n == -2):
		return 0, false, nil
	case n <= 0:
		return 0, false, fmt.Errorf("%q must be at least 1, not %d", name, n)
	}
	return uint64(n), true, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// readCap finds the route's output-cap members in a parsed body.
func readCap(rt route, body object) (*outputCap, error) {
	oc := &outputCap{}
	for _, name := range rt.maxOut {
		if container, sub, nested := strings.Cut(name, "."); nested {
			raw, om, ok := body.get(container)
			if ok && string(raw) == "null" {
				oc.optionsNull = &om
			}
			if !ok || string(raw) == "null" {
				oc.fields = append(oc.fields, capField{name: name})
				continue
			}
			oc.options = &om
			opts, err := parseObject(raw)
			var dup *dupKeyError
			if errors.As(err, &dup) {
				return nil, err
			}
			if err != nil {
				return nil, fmt.Errorf("%q is not a JSON object", container)
			}
			f := capField{name: name}
			if raw, span, ok := opts.get(sub); ok {
				if f.value, f.present, err = parseCap(name, raw, rt.family == Ollama); err != nil {
					return nil, err
				}
				f.span = span
			}
			oc.fields = append(oc.fields, f)
			continue
		}
		f := capField{name: name}
		if raw, span, ok := body.get(name); ok {
			var err error
			if f.value, f.present, err = parseCap(name, raw, false); err != nil {
				return nil, err
			}
			f.span = span
		}
		oc.fields = append(oc.fields, f)
	}
	if rt.family == Anthropic {
		if raw, tm, ok := body.get("thinking"); ok && string(raw) != "null" {
			thinking, err := parseObject(raw)
			var dup *dupKeyError
			if errors.As(err, &dup) {
				return nil, err
			}
			if err != nil {
				return nil, errors.New(`"thinking" is not a JSON object`)
			}
			if braw, bm, ok := thinking.get("budget_tokens"); ok {
				n, present, err := parseCap("thinking.budget_tokens", braw, false)
				if err != nil {
					return nil, err
				}
				if present {
					oc.thinking, oc.budget, oc.budgetAt = &tm, n, bm
				}
			}
		}
	}
	return oc, nil
}

// fitThinking is the thinking budget for output cap out: unchanged while
// it stays below the cap, else lowered to half the cap (at least
// thinkingMin). It fails when no budget can both stay below out and reach
// thinkingMin.
func (oc *outputCap) fitThinking(out uint64) (uint64, error) {
	if oc.thinking == nil || oc.budget < out {
		return oc.budget, nil
	}
	if out <= thinkingMin {
		return 0, fmt.Errorf("the budget pays for %d output tokens, and extended thinking needs thinking.budget_tokens of at least %d below max_tokens", out, thinkingMin)
	}
	return max(thinkingMin, out/2), nil
}

// edit replaces body[at:end] with with.
type edit struct {
	at, end int
	with    string
}

// applyEdits applies non-overlapping edits to a copy of body.
func applyEdits(body []byte, edits []edit) []byte {
	// Apply from the end, so earlier spans stay where they were.
	for i := 1; i < len(edits); i++ {
		for j := i; j > 0 && edits[j].at > edits[j-1].at; j-- {
			edits[j], edits[j-1] = edits[j-1], edits[j]
		}
	}
	out := append(make([]byte, 0, len(body)+64), body...)
	for _, e := range edits {
		out = append(out[:e.at], append([]byte(e.with), out[e.end:]...)...)
	}
	return out
}

// objectStart is the offset just past an object's opening brace, and the
// separator an inserted first member needs.
func objectStart(obj []byte, at int) (int, string) {
	i := bytes.IndexByte(obj, '{') + 1
	if rest := bytes.TrimLeft(obj[i:], " \t\r\n"); len(rest) > 0 && rest[0] == '}' {
		return at + i, ""
	}
	return at + i, ","
}

// edits lowers the output cap to out (and the thinking budget to budget),
// every other byte kept. A request that named no cap gets the route's
// first cap member.
func (oc *outputCap) edits(rt route, body []byte, out, budget uint64) []edit {
	var edits []edit
	n := strconv.FormatUint(out, 10)
	named := false
	for _, f := range oc.fields {
		if !f.present {
			continue
		}
		named = true
		if f.value <= out {
			continue
		}
		at, end := f.span.start, f.span.end
		if strings.Contains(f.name, ".") {
			at, end = at+oc.options.start, end+oc.options.start
		}
		edits = append(edits, edit{at, end, n})
	}
	if !named && len(rt.maxOut) > 0 {
		name := rt.maxOut[0]
		if container, sub, nested := strings.Cut(name, "."); nested {
			f := oc.fields[0]
			switch {
			case oc.options != nil && f.span.end != 0: // num_predict -1, -2 or null
				edits = append(edits, edit{oc.options.start + f.span.start, oc.options.start + f.span.end, n})
			case oc.options != nil:
				at, sep := objectStart(body[oc.options.start:oc.options.end], oc.options.start)
				edits = append(edits, edit{at, at, strconv.Quote(sub) + ":" + n + sep})
			case oc.optionsNull != nil:
				edits = append(edits, edit{oc.optionsNull.start, oc.optionsNull.end, "{" + strconv.Quote(sub) + ":" + n + "}"})
			default:
				at, sep := objectStart(body, 0)
				edits = append(edits, edit{at, at, strconv.Quote(container) + ":{" + strconv.Quote(sub) + ":" + n + "}" + sep})
			}
		} else if f := oc.fields[0]; f.span.end != 0 { // "max_tokens": null
			edits = append(edits, edit{f.span.start, f.span.end, n})
		} else {
			at, sep := objectStart(body, 0)
			edits = append(edits, edit{at, at, strconv.Quote(name) + ":" + n + sep})
		}
	}
	if oc.thinking != nil && budget != oc.budget {
		edits = append(edits, edit{oc.thinking.start + oc.budgetAt.start, oc.thinking.start + oc.budgetAt.end, strconv.FormatUint(budget, 10)})
	}
	return edits
}

// fitOutput is the most output tokens, up to want, whose cost with the
// input estimate fits avail µJ; ok is false when not even the input does.
func fitOutput(r energy.Rates, input, want, avail uint64) (uint64, bool) {
	in := r.Of(energy.Usage{Input: input})
	if in > avail {
		return 0, false
	}
	if r.OutputUJ == 0 {
		return want, true
	}
	return min(want, (avail-in)/r.OutputUJ), true
}

// floorError is a call refused because not even its input and the floor
// of output fit what its grants have left.
type floorError struct {
	grant     string
	remaining uint64 // what the grant had left, less what calls in flight hold
	need      uint64 // the input and the floor
	floor     uint64
	thinking  bool // the floor is extended thinking's
}

func (e *floorError) Error() string {
	return fmt.Sprintf("grant %s has %s left; the call needs %s", e.grant, grant.FormatEnergy(e.remaining), grant.FormatEnergy(e.need))
}

func (e *floorError) message(c *call) string {
	what := fmt.Sprintf("~%d input tokens and the floor of %d output tokens", c.inputEst, e.floor)
	if e.thinking {
		what += fmt.Sprintf(" (extended thinking needs max_tokens above its least thinking.budget_tokens, %d)", thinkingMin)
	}
	if e.floor == 0 {
		what = fmt.Sprintf("~%d input tokens", c.inputEst)
	}
	return fmt.Sprintf("joule: the budget cannot pay for this call: grant %s has %s left (less what calls in flight hold), "+
		"and the call needs at least %s for %s of model %s. Raise the budget: joule grant issue --template dev --budget %s --use",
		e.grant, grant.FormatEnergy(e.remaining), grant.FormatEnergy(e.need), what, c.model, suggestBudget(e.need))
}

// fitTries bounds how often a call is fitted again when other calls took
// the budget it was fitted to first.
const fitTries = 8

// admitFit admits c whole if its grants can pay for its whole output cap,
// else fitted to the most output they can pay for, down to the floor.
func (p *Proxy) admitFit(ctx context.Context, c *call) error {
	t, err := p.leases.admit(ctx, c.grants, c.reserved)
	// Calls of this chain that were answered but are not yet sealed
	// still hold their whole estimates: a client that makes its next call
	// as soon as it has read the last one's answer must not find the
	// budget short, or be fitted, for want of a receipt being sealed.
	for by := time.Now().Add(settleWait); errors.As(err, new(*store.BudgetError)) && p.leases.waitEnding(ctx, c.grants, by); {
		t, err = p.leases.admit(ctx, c.grants, c.reserved)
	}
	if err == nil {
		c.ticket = t
		return nil
	}
	floor := min(p.cfg.Floor, c.want)
	thinking := false
	if c.oc != nil && c.oc.thinking != nil && c.oc.budget >= floor && floor <= thinkingMin {
		floor, thinking = min(thinkingMin+1, c.want), true // a fitted thinking budget needs room below the cap
	}
	for try := 0; ; try++ {
		var be *store.BudgetError
		if !errors.As(err, &be) {
			return err
		}
		avail := max(be.RemainingUJ, p.leases.free(c.grants))
		out, ok := fitOutput(c.rates, c.inputEst, c.want, avail)
		if half, _ := fitOutput(c.rates, c.inputEst, c.want, avail/2); ok && half >= floor {
			// A fitted call takes at most half of what is left, so that
			// calls made at the same time still find their floor.
			out = half
		}
		if !ok || out < floor || c.oc == nil && out < c.want || try == fitTries {
			return &floorError{grant: be.GrantID, remaining: avail, floor: floor, thinking: thinking,
				need: energy.Cap(c.rates.Of(energy.Usage{Input: c.inputEst, Output: floor}))}
		}
		budget := uint64(0)
		if c.oc != nil {
			if budget, err = c.oc.fitThinking(out); err != nil {
				return &floorError{grant: be.GrantID, remaining: avail, floor: thinkingMin + 1, thinking: true,
					need: energy.Cap(c.rates.Of(energy.Usage{Input: c.inputEst, Output: thinkingMin + 1}))}
			}
		}
		est := energy.Cap(c.rates.Of(energy.Usage{Input: c.inputEst, Output: out}))
		if t, err = p.leases.admit(ctx, c.grants, est); err == nil {
			c.ticket, c.reserved = t, est
			if out < c.want {
				c.fitted, c.thinking = out, budget
			}
			return nil
		}
	}
}

// FittedHeader names, on the response of a fitted call, the cap the call
// asked for and the one it was forwarded with, e.g.
// "max_tokens 128000 -> 5120".
const FittedHeader = "X-Joule-Fitted"

func (c *call) fitHeader() string {
	name := c.route.maxOut[0]
	for _, f := range c.oc.fields {
		if f.present {
			name = f.name
			break
		}
	}
	h := fmt.Sprintf("%s %d -> %d", name, c.want, c.fitted)
	if c.oc.thinking != nil && c.thinking != c.oc.budget {
		h += fmt.Sprintf(", thinking.budget_tokens %d -> %d", c.oc.budget, c.thinking)
	}
	return h
}

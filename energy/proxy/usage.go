package proxy

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/joulehook/joule/energy"
)

// meter is what one response has told the proxy so far. Every API's usage
// is normalized here, once, into energy.Usage's disjoint buckets
// (energy.md §4.6).
type meter struct {
	usage      energy.Usage
	haveInput  bool // input-side counts are authoritative
	haveOutput bool // output count is authoritative
	done       bool // the API's terminal event or object arrived
	truncated  bool // a terminal event says the response was cut (response.incomplete)
	model      string
	requestID  string
	errMsg     string // an error event or object from upstream
	textChars  uint64 // generated text seen, for estimating a cut stream's output
	events     uint64
}

// anthropicUsage is the Messages API's usage object: input_tokens excludes
// cache reads and writes.
type anthropicUsage struct {
	InputTokens              *uint64 `json:"input_tokens"`
	CacheCreationInputTokens *uint64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *uint64 `json:"cache_read_input_tokens"`
	OutputTokens             *uint64 `json:"output_tokens"`
}

// apply sets the counts u carries; absent fields keep their value, since a
// message_delta may carry only output_tokens.
func (m *meter) applyAnthropic(u *anthropicUsage) {
	if u == nil {
		return
	}
	if u.InputTokens != nil {
		m.usage.Input, m.haveInput = *u.InputTokens, true
	}
	if u.CacheCreationInputTokens != nil {
		m.usage.CacheWrite = *u.CacheCreationInputTokens
	}
	if u.CacheReadInputTokens != nil {
		m.usage.CachedInput = *u.CacheReadInputTokens
	}
	if u.OutputTokens != nil {
		m.usage.Output = *u.OutputTokens // cumulative: keep the latest, never sum
	}
}

type anthropicEvent struct {
	Type    string            `json:"type"`
	Message *anthropicMessage `json:"message"`
	Usage   *anthropicUsage   `json:"usage"`
	Delta   *anthropicDelta   `json:"delta"`
	Error   *apiError         `json:"error"`
	// Non-streamed message fields.
	ID    string `json:"id"`
	Model string `json:"model"`
}

// anthropicMessage is a message_start event's message.
type anthropicMessage struct {
	ID    string          `json:"id"`
	Model string          `json:"model"`
	Usage *anthropicUsage `json:"usage"`
}

// anthropicDelta is a content_block_delta event's delta.
type anthropicDelta struct {
	Text        string `json:"text"`
	Thinking    string `json:"thinking"`
	PartialJSON string `json:"partial_json"`
}

type apiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

func (e *apiError) String() string {
	if e.Type == "" {
		return e.Message
	}
	return e.Type + ": " + e.Message
}

// anthropicSSE handles one data payload of a Messages stream.
func (m *meter) anthropicSSE(data []byte) {
	ev, ok := decodeAnthropicEvent(data)
	if !ok {
		return
	}
	m.events++
	switch ev.Type {
	case "message_start":
		if ev.Message != nil {
			m.requestID, m.model = ev.Message.ID, ev.Message.Model
			if ev.Message.Usage != nil {
				m.applyAnthropic(ev.Message.Usage)
				m.haveInput = true
			}
		}
	case "message_delta":
		if ev.Usage != nil {
			m.applyAnthropic(ev.Usage)
			if ev.Usage.OutputTokens != nil {
				m.haveOutput = true
			}
		}
	case "message_stop":
		m.done = true
	case "content_block_delta":
		if ev.Delta != nil {
			m.textChars += uint64(len(ev.Delta.Text) + len(ev.Delta.Thinking) + len(ev.Delta.PartialJSON))
		}
	case "error":
		if ev.Error != nil {
			m.errMsg = ev.Error.String()
		}
	}
}

// anthropicJSON handles a non-streamed Messages response.
func (m *meter) anthropicJSON(body []byte) {
	ev, ok := decodeAnthropicEvent(body)
	if !ok {
		return
	}
	if ev.Type == "error" && ev.Error != nil {
		m.errMsg = ev.Error.String()
		return
	}
	m.requestID, m.model = ev.ID, ev.Model
	if ev.Usage != nil {
		m.applyAnthropic(ev.Usage)
		m.haveInput, m.haveOutput, m.done = true, ev.Usage.OutputTokens != nil, true
	}
}

// openAIUsage covers Chat Completions (prompt_/completion_tokens) and
// Responses and embeddings (input_/output_tokens). Cached and reasoning
// details are subsets of the totals.
type openAIUsage struct {
	PromptTokens        *uint64 `json:"prompt_tokens"`
	CompletionTokens    *uint64 `json:"completion_tokens"`
	InputTokens         *uint64 `json:"input_tokens"`
	OutputTokens        *uint64 `json:"output_tokens"`
	PromptTokensDetails *struct {
		CachedTokens uint64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	InputTokensDetails *struct {
		CachedTokens uint64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
}

func (m *meter) applyOpenAI(u *openAIUsage) {
	if u == nil {
		return
	}
	var in, out *uint64
	var cached uint64
	switch {
	case u.PromptTokens != nil:
		in, out = u.PromptTokens, u.CompletionTokens
		if u.PromptTokensDetails != nil {
			cached = u.PromptTokensDetails.CachedTokens
		}
	case u.InputTokens != nil:
		in, out = u.InputTokens, u.OutputTokens
		if u.InputTokensDetails != nil {
			cached = u.InputTokensDetails.CachedTokens
		}
	default:
		return
	}
	cached = min(cached, *in)
	m.usage.Input, m.usage.CachedInput, m.haveInput = *in-cached, cached, true
	if out != nil {
		m.usage.Output, m.haveOutput = *out, true
	}
}

type openAIChunk struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Usage   *openAIUsage    `json:"usage"`
	Choices json.RawMessage `json:"choices"`
	Error   *apiError       `json:"error"`
}

type openAIChoice struct {
	Delta *struct {
		Content          string `json:"content"`
		ReasoningContent string `json:"reasoning_content"`
		Reasoning        string `json:"reasoning"`
		Refusal          string `json:"refusal"`
		ToolCalls        []struct {
			Function struct {
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"delta"`
}

// openAIChatSSE handles one data payload of a Chat Completions stream and
// reports whether it is a usage-only chunk (no choices), the one the proxy
// asked for on the client's behalf.
func (m *meter) openAIChatSSE(data []byte) (usageOnly bool) {
	if bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]")) {
		m.done = true
		return false
	}
	var c openAIChunk
	if json.Unmarshal(data, &c) != nil {
		return false
	}
	m.events++
	if c.Error != nil {
		m.errMsg = c.Error.String()
	}
	if m.requestID == "" {
		m.requestID = c.ID
	}
	if c.Model != "" {
		m.model = c.Model
	}
	var choices []openAIChoice
	if len(c.Choices) > 0 && !bytes.Equal(c.Choices, []byte("null")) {
		json.Unmarshal(c.Choices, &choices)
	}
	for _, ch := range choices {
		if d := ch.Delta; d != nil {
			n := len(d.Content) + len(d.ReasoningContent) + len(d.Reasoning) + len(d.Refusal)
			for _, tc := range d.ToolCalls {
				n += len(tc.Function.Arguments)
			}
			m.textChars += uint64(n)
		}
	}
	if c.Usage != nil { // any chunk with usage; the last one wins
		m.applyOpenAI(c.Usage)
		return len(choices) == 0
	}
	return false
}

type responsesEvent struct {
	Type     string `json:"type"`
	Delta    string `json:"delta"`
	Response *struct {
		ID    string       `json:"id"`
		Model string       `json:"model"`
		Usage *openAIUsage `json:"usage"`
		Error *apiError    `json:"error"`
	} `json:"response"`
	Message string `json:"message"`
	Code    string `json:"code"`
}

// responsesSSE handles one data payload of a Responses stream.
func (m *meter) responsesSSE(data []byte) {
	var ev responsesEvent
	if json.Unmarshal(data, &ev) != nil {
		return
	}
	m.events++
	if r := ev.Response; r != nil {
		if r.ID != "" {
			m.requestID = r.ID
		}
		if r.Model != "" {
			m.model = r.Model
		}
	}
	switch ev.Type {
	case "response.completed", "response.incomplete", "response.failed":
		if ev.Response != nil {
			m.applyOpenAI(ev.Response.Usage)
			if ev.Response.Error != nil {
				m.errMsg = ev.Response.Error.String()
			}
		}
		m.done = true
		m.truncated = ev.Type != "response.completed"
		if ev.Type == "response.failed" && m.errMsg == "" {
			m.errMsg = "response.failed"
		}
	case "error":
		m.errMsg = (&apiError{Type: ev.Code, Message: ev.Message}).String()
	default:
		if len(ev.Type) > 6 && ev.Type[len(ev.Type)-6:] == ".delta" {
			m.textChars += uint64(len(ev.Delta))
		}
	}
}

// openAIJSON handles a non-streamed Chat Completions, Responses or
// embeddings response.
func (m *meter) openAIJSON(body []byte) {
	var c struct {
		ID     string       `json:"id"`
		Model  string       `json:"model"`
		Usage  *openAIUsage `json:"usage"`
		Error  *apiError    `json:"error"`
		Status string       `json:"status"`
	}
	if json.Unmarshal(body, &c) != nil {
		return
	}
	if c.Error != nil && c.Error.Message != "" {
		m.errMsg = c.Error.String()
	}
	m.requestID, m.model = c.ID, c.Model
	if c.Usage != nil {
		m.applyOpenAI(c.Usage)
		m.done = m.haveInput
	}
	if c.Status == "incomplete" || c.Status == "failed" {
		m.truncated = true
	}
}

type ollamaObject struct {
	Model           string  `json:"model"`
	Done            bool    `json:"done"`
	DoneReason      string  `json:"done_reason"`
	PromptEvalCount *uint64 `json:"prompt_eval_count"`
	EvalCount       *uint64 `json:"eval_count"`
	Response        string  `json:"response"`
	Thinking        string  `json:"thinking"`
	Message         *struct {
		Content  string `json:"content"`
		Thinking string `json:"thinking"`
	} `json:"message"`
	Error      string            `json:"error"`
	Embeddings []json.RawMessage `json:"embeddings"`
}

// ollamaObject handles one object of an Ollama response, streamed (NDJSON)
// or not. A missing prompt_eval_count is unknown, not zero: Ollama omits it
// when the prompt came from its KV cache (energy.md §4.4).
func (m *meter) ollama(line []byte) {
	var o ollamaObject
	if json.Unmarshal(line, &o) != nil {
		return
	}
	m.events++
	if o.Model != "" {
		m.model = o.Model
	}
	if o.Error != "" {
		m.errMsg = o.Error
	}
	m.textChars += uint64(len(o.Response) + len(o.Thinking))
	if o.Message != nil {
		m.textChars += uint64(len(o.Message.Content) + len(o.Message.Thinking))
	}
	if o.Done || o.Embeddings != nil {
		m.done = true
		if o.PromptEvalCount != nil {
			m.usage.Input, m.haveInput = *o.PromptEvalCount, true
		}
		if o.EvalCount != nil {
			m.usage.Output, m.haveOutput = *o.EvalCount, true
		} else if o.Embeddings != nil {
			m.haveOutput = true // an embedding produces no tokens
		}
	}
}

// decodeAnthropicEvent decodes a Messages response or stream event into
// an anthropicEvent as json.Unmarshal does, and reports whether
// json.Unmarshal would have succeeded: keys matched regardless of case, a
// key named twice decoded twice (objects merged, the last scalar winning),
// a value of the wrong type failing the whole. It reads the members off
// members' spans, with strconv for the counts, rather than by reflection,
// which cost a metered call several µs and a streamed one that for every
// event. FuzzAnthropicJSON holds the two to the same result.
func decodeAnthropicEvent(body []byte) (ev anthropicEvent, ok bool) {
	var buf [16]member
	ms, err := members(buf[:0], body)
	if err != nil {
		return ev, string(bytes.Trim(body, " \t\r\n")) == "null" // null decodes to nothing
	}
	for _, mb := range ms {
		raw := body[mb.start:mb.end]
		switch {
		case strings.EqualFold(mb.key, "usage"):
			ok = decodeAnthropicUsage(raw, &ev.Usage)
		case strings.EqualFold(mb.key, "message"):
			ok = decodeObject(raw, &ev.Message, func(m *anthropicMessage, key string, v []byte) bool {
				if strings.EqualFold(key, "usage") {
					return decodeAnthropicUsage(v, &m.Usage)
				}
				return decodeStringField(key, v, stringField{"id", &m.ID}, stringField{"model", &m.Model})
			})
		case strings.EqualFold(mb.key, "delta"):
			ok = decodeObject(raw, &ev.Delta, func(d *anthropicDelta, key string, v []byte) bool {
				return decodeStringField(key, v, stringField{"text", &d.Text}, stringField{"thinking", &d.Thinking},
					stringField{"partial_json", &d.PartialJSON})
			})
		case strings.EqualFold(mb.key, "error"):
			ok = decodeObject(raw, &ev.Error, func(e *apiError, key string, v []byte) bool {
				return decodeStringField(key, v, stringField{"type", &e.Type}, stringField{"message", &e.Message})
			})
		default:
			ok = decodeStringField(mb.key, raw, stringField{"type", &ev.Type}, stringField{"id", &ev.ID}, stringField{"model", &ev.Model})
		}
		if !ok {
			return ev, false
		}
	}
	return ev, true
}

// stringField is a struct's string field and the name json.Unmarshal
// matches it by.
type stringField struct {
	name string
	p    *string
}

// decodeStringField decodes v, as decodeString does, into the one of fields
// that key names (regardless of case, as json.Unmarshal matches). A key
// naming none is ignored.
func decodeStringField(key string, v []byte, fields ...stringField) bool {
	for _, f := range fields {
		if strings.EqualFold(key, f.name) {
			var ok bool
			*f.p, ok = decodeString(v, *f.p)
			return ok
		}
	}
	return true
}

// decodeObject decodes a valid JSON value into *p as json.Unmarshal does
// into a pointer to a struct: null clears it, an object is merged into it
// member by member (field decodes one), anything else fails.
func decodeObject[T any](raw []byte, p **T, field func(t *T, key string, v []byte) bool) bool {
	if string(raw) == "null" {
		*p = nil
		return true
	}
	if raw[0] != '{' {
		return false
	}
	if *p == nil {
		*p = new(T)
	}
	var buf [8]member
	ms, _ := appendMembers(buf[:0], raw, 0)
	for _, mb := range ms {
		if !field(*p, mb.key, raw[mb.start:mb.end]) {
			return false
		}
	}
	return true
}

// decodeAnthropicUsage decodes a valid JSON value into *u as json.Unmarshal
// does: null clears it, an object is merged into it.
func decodeAnthropicUsage(raw []byte, u **anthropicUsage) bool {
	return decodeObject(raw, u, func(u *anthropicUsage, key string, v []byte) bool {
		switch {
		case strings.EqualFold(key, "input_tokens"):
			return decodeUint(v, &u.InputTokens)
		case strings.EqualFold(key, "cache_creation_input_tokens"):
			return decodeUint(v, &u.CacheCreationInputTokens)
		case strings.EqualFold(key, "cache_read_input_tokens"):
			return decodeUint(v, &u.CacheReadInputTokens)
		case strings.EqualFold(key, "output_tokens"):
			return decodeUint(v, &u.OutputTokens)
		}
		return true
	})
}

// decodeString decodes a valid JSON value as json.Unmarshal does into a
// string that holds old: null leaves it, a string without escapes or
// non-ASCII bytes is taken as it is, any other string goes to json.Unmarshal.
func decodeString(raw []byte, old string) (string, bool) {
	switch {
	case string(raw) == "null":
		return old, true
	case raw[0] != '"':
		return old, false
	}
	if s, ok := interned[string(raw[1:len(raw)-1])]; ok {
		return s, true
	}
	s, err := unquote(raw)
	return s, err == nil
}

// decodeUint decodes a valid JSON value into *n as json.Unmarshal does
// into a *uint64: null clears it, a number must be a uint64's digits.
func decodeUint(raw []byte, n **uint64) bool {
	if string(raw) == "null" {
		*n = nil
		return true
	}
	if raw[0] < '0' || raw[0] > '9' {
		return false
	}
	v, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return false
	}
	if *n == nil {
		*n = new(uint64)
	}
	**n = v
	return true
}

// geminiUsage is the Gemini API's usageMetadata. promptTokenCount includes
// cachedContentTokenCount; toolUsePromptTokenCount (the results of tools
// the API ran itself) is input besides it; thoughtsTokenCount is output
// besides candidatesTokenCount, billed as output. Streamed, every chunk
// carries the counts so far: the latest wins.
type geminiUsage struct {
	PromptTokenCount        *uint64 `json:"promptTokenCount"`
	CandidatesTokenCount    *uint64 `json:"candidatesTokenCount"`
	ThoughtsTokenCount      *uint64 `json:"thoughtsTokenCount"`
	CachedContentTokenCount *uint64 `json:"cachedContentTokenCount"`
	ToolUsePromptTokenCount *uint64 `json:"toolUsePromptTokenCount"`
}

// geminiResponse is a GenerateContentResponse, whole or one chunk of a
// stream, or an error.
type geminiResponse struct {
	Candidates []struct {
		Content *struct {
			Parts []struct {
				Text         string          `json:"text"`
				FunctionCall json.RawMessage `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata *geminiUsage `json:"usageMetadata"`
	ModelVersion  string       `json:"modelVersion"`
	ResponseID    string       `json:"responseId"`
	Error         *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
	} `json:"error"`
}

func (m *meter) applyGemini(u *geminiUsage) {
	if u == nil {
		return
	}
	if u.PromptTokenCount != nil || u.ToolUsePromptTokenCount != nil {
		var prompt, tool, cached uint64
		if u.PromptTokenCount != nil {
			prompt = *u.PromptTokenCount
		}
		if u.ToolUsePromptTokenCount != nil {
			tool = *u.ToolUsePromptTokenCount
		}
		if u.CachedContentTokenCount != nil {
			cached = min(*u.CachedContentTokenCount, prompt)
		}
		m.usage.Input, m.usage.CachedInput, m.haveInput = prompt-cached+tool, cached, true
	}
	if u.CandidatesTokenCount != nil || u.ThoughtsTokenCount != nil {
		var out uint64
		if u.CandidatesTokenCount != nil {
			out = *u.CandidatesTokenCount
		}
		if u.ThoughtsTokenCount != nil {
			out += *u.ThoughtsTokenCount
		}
		m.usage.Output, m.haveOutput = out, true
	}
}

// gemini handles one GenerateContentResponse: an SSE event's data
// (?alt=sse), or one element of a streamed JSON array. A candidate with a
// finishReason ends the response; its counts are then whole even where
// the API left out a zero (no candidatesTokenCount for a reply that is
// only a function call).
func (m *meter) gemini(data []byte) {
	var r geminiResponse
	if json.Unmarshal(data, &r) != nil {
		return
	}
	m.events++
	if r.Error != nil {
		m.errMsg = strings.TrimPrefix(r.Error.Status+": "+r.Error.Message, ": ")
	}
	if r.ResponseID != "" {
		m.requestID = r.ResponseID
	}
	if r.ModelVersion != "" {
		m.model = r.ModelVersion
	}
	for _, c := range r.Candidates {
		if c.Content != nil {
			for _, p := range c.Content.Parts {
				m.textChars += uint64(len(p.Text) + len(p.FunctionCall))
			}
		}
		if c.FinishReason != "" {
			m.done = true
		}
	}
	m.applyGemini(r.UsageMetadata)
	if m.done && m.haveInput {
		m.haveOutput = true
	}
}

// geminiJSON handles a whole Gemini response: generateContent's object, or
// streamGenerateContent's JSON array of chunks (without ?alt=sse).
func (m *meter) geminiJSON(body []byte) {
	var chunks []json.RawMessage
	if json.Unmarshal(body, &chunks) != nil {
		m.gemini(body)
		return
	}
	for _, c := range chunks {
		m.gemini(c)
	}
}

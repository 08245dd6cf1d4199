package proxy

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Family is a provider API family: it decides the upstream and the error
// shape a client of that API understands.
type Family int

// The families.
const (
	Anthropic Family = iota
	OpenAI
	Ollama
	Gemini
	families // how many
)

func (f Family) String() string {
	return [...]string{"anthropic", "openai", "ollama", "gemini"}[f]
}

// route is what the proxy knows about a path.
type route struct {
	family  Family
	name    string // e.g. "messages", "chat", "responses"
	metered bool   // a model call: ceiling, usage, receipt
	// streamsUnasked: the API streams a response unless "stream" is false.
	streamsUnasked bool
	maxOut         []string // request fields naming the output cap, first present wins
	// streamsAlways: the API streams whatever the body says (Gemini's
	// streamGenerateContent).
	streamsAlways bool
	model         string // the model the path names (Gemini), "" when the body does
}

// streams reports whether a request with this body gets a streamed
// response.
func (rt route) streams(body object) bool {
	if rt.streamsAlways {
		return true
	}
	raw, _, _ := body.get("stream")
	switch string(raw) { // a valid value, as json.Unmarshal reads it into a bool
	case "true":
		return true
	case "false", "null":
		return false
	}
	return rt.streamsUnasked // absent, or not a bool
}

// The output-cap members of each API.
var (
	anthropicCap = []string{"max_tokens"}
	chatCap      = []string{"max_completion_tokens", "max_tokens"}
	responsesCap = []string{"max_output_tokens"}
	ollamaCap    = []string{"options.num_predict"}
	// Gemini's maxOutputTokens bounds the thinking tokens too.
	geminiCap = []string{"generationConfig.maxOutputTokens"}
)

// routes maps request paths to APIs. Paths not here are refused (404) in a
// neutral JSON error naming what is served.
func lookupRoute(path string) (route, bool) {
	switch path {
	case "/v1/messages":
		return route{family: Anthropic, name: "messages", metered: true, maxOut: anthropicCap}, true
	case "/v1/messages/count_tokens":
		return route{family: Anthropic, name: "count_tokens"}, true
	case "/v1/chat/completions", "/chat/completions":
		return route{family: OpenAI, name: "chat", metered: true, maxOut: chatCap}, true
	case "/v1/responses", "/responses":
		return route{family: OpenAI, name: "responses", metered: true, maxOut: responsesCap}, true
	case "/v1/embeddings", "/embeddings":
		return route{family: OpenAI, name: "embeddings", metered: true}, true
	case "/v1/models", "/models":
		return route{family: OpenAI, name: "models"}, true
	case "/api/chat":
		return route{family: Ollama, name: "chat", metered: true, streamsUnasked: true, maxOut: ollamaCap}, true
	case "/api/generate":
		return route{family: Ollama, name: "generate", metered: true, streamsUnasked: true, maxOut: ollamaCap}, true
	case "/api/embed", "/api/embeddings":
		return route{family: Ollama, name: "embed", metered: true}, true
	case "/api/tags", "/api/show", "/api/version", "/api/ps":
		return route{family: Ollama, name: strings.TrimPrefix(path, "/api/")}, true
	}
	if rt, ok := geminiRoute(path); ok {
		return rt, true
	}
	if strings.HasPrefix(path, "/v1/models/") || strings.HasPrefix(path, "/models/") {
		return route{family: OpenAI, name: "models"}, true
	}
	return route{}, false
}

// geminiRoute maps the Gemini API's paths, /v1beta/models/MODEL:METHOD (or
// /v1/), where the path, not the body, names the model.
// generateContent and streamGenerateContent are model calls (streamed as
// SSE with ?alt=sse, else as one JSON array); countTokens, the model list
// and a model's description are passed through.
func geminiRoute(path string) (route, bool) {
	rest, ok := strings.CutPrefix(path, "/v1beta/")
	if !ok {
		if rest, ok = strings.CutPrefix(path, "/v1/"); !ok {
			return route{}, false
		}
	}
	if rest == "models" {
		return route{family: Gemini, name: "models"}, true
	}
	name, ok := strings.CutPrefix(rest, "models/")
	if !ok || name == "" || strings.Contains(name, "/") {
		return route{}, false
	}
	model, method, ok := strings.Cut(name, ":")
	switch {
	case !ok:
		return route{family: Gemini, name: "models"}, true
	case model == "":
		return route{}, false
	case method == "generateContent":
		return route{family: Gemini, name: method, metered: true, maxOut: geminiCap, model: model}, true
	case method == "streamGenerateContent":
		return route{family: Gemini, name: method, metered: true, maxOut: geminiCap, model: model, streamsAlways: true}, true
	case method == "countTokens":
		return route{family: Gemini, name: method}, true
	}
	return route{}, false
}

// servedPaths is the list an unknown path's error names.
const servedPaths = "/v1/messages, /v1/messages/count_tokens, /v1/chat/completions, /v1/responses, /v1/embeddings, /v1/models, /api/chat, /api/generate, /api/embed, /api/tags, /api/show, /api/version, /api/ps, /v1beta/models/MODEL:generateContent, :streamGenerateContent, :countTokens"

// Error kinds, mapped per family to the provider's own error type.
type errKind int

const (
	errInvalid  errKind = iota // malformed request
	errTooLarge                // body over the limit
	errBudget                  // over the grant's remaining budget
	errNoGrant                 // no usable grant
	errNotFound                // unknown path
	errMethod                  // wrong method
	errUpstream                // upstream unreachable or failed
	errTimeout                 // upstream too slow
	errInternal                // joule's own failure
)

// status returns the HTTP status and the provider's error type for kind.
func (f Family) status(k errKind) (int, string) {
	switch f {
	case Anthropic:
		switch k {
		case errInvalid:
			return http.StatusBadRequest, "invalid_request_error"
		case errTooLarge:
			return http.StatusRequestEntityTooLarge, "request_too_large"
		case errBudget:
			return http.StatusPaymentRequired, "billing_error"
		case errNoGrant:
			return http.StatusForbidden, "permission_error"
		case errNotFound:
			return http.StatusNotFound, "not_found_error"
		case errMethod:
			return http.StatusMethodNotAllowed, "invalid_request_error"
		case errUpstream:
			return http.StatusBadGateway, "api_error"
		case errTimeout:
			return http.StatusGatewayTimeout, "api_error"
		}
		return http.StatusInternalServerError, "api_error"
	case OpenAI:
		switch k {
		case errInvalid:
			return http.StatusBadRequest, "invalid_request_error"
		case errTooLarge:
			return http.StatusRequestEntityTooLarge, "invalid_request_error"
		case errBudget:
			return http.StatusTooManyRequests, "insufficient_quota"
		case errNoGrant:
			return http.StatusForbidden, "permission_error"
		case errNotFound:
			return http.StatusNotFound, "invalid_request_error"
		case errMethod:
			return http.StatusMethodNotAllowed, "invalid_request_error"
		case errUpstream:
			return http.StatusBadGateway, "server_error"
		case errTimeout:
			return http.StatusGatewayTimeout, "server_error"
		}
		return http.StatusInternalServerError, "server_error"
	case Gemini: // google.rpc.Status codes
		switch k {
		case errInvalid:
			return http.StatusBadRequest, "INVALID_ARGUMENT"
		case errTooLarge:
			return http.StatusRequestEntityTooLarge, "INVALID_ARGUMENT"
		case errBudget:
			return http.StatusTooManyRequests, "RESOURCE_EXHAUSTED"
		case errNoGrant:
			return http.StatusForbidden, "PERMISSION_DENIED"
		case errNotFound:
			return http.StatusNotFound, "NOT_FOUND"
		case errMethod:
			return http.StatusMethodNotAllowed, "INVALID_ARGUMENT"
		case errUpstream:
			return http.StatusBadGateway, "UNAVAILABLE"
		case errTimeout:
			return http.StatusGatewayTimeout, "DEADLINE_EXCEEDED"
		}
		return http.StatusInternalServerError, "INTERNAL"
	}
	switch k { // Ollama: {"error": "..."} with a plain status
	case errInvalid:
		return http.StatusBadRequest, ""
	case errTooLarge:
		return http.StatusRequestEntityTooLarge, ""
	case errBudget:
		return http.StatusPaymentRequired, ""
	case errNoGrant:
		return http.StatusForbidden, ""
	case errNotFound:
		return http.StatusNotFound, ""
	case errMethod:
		return http.StatusMethodNotAllowed, ""
	case errUpstream:
		return http.StatusBadGateway, ""
	case errTimeout:
		return http.StatusGatewayTimeout, ""
	}
	return http.StatusInternalServerError, ""
}

// writeError answers in the family's own error shape.
func writeError(w http.ResponseWriter, f Family, k errKind, msg string) {
	status, typ := f.status(k)
	var body any
	switch f {
	case Anthropic:
		body = map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}}
	case OpenAI:
		body = map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": typ}}
	case Gemini:
		body = map[string]any{"error": map[string]any{"code": status, "message": msg, "status": typ}}
	default:
		body = map[string]string{"error": msg}
	}
	b, _ := json.Marshal(body)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Joule-Refused", "1")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// familyOf guesses the family of an unknown path for its error's shape.
func familyOf(path string) Family {
	if strings.HasPrefix(path, "/api/") {
		return Ollama
	}
	if strings.HasPrefix(path, "/v1beta/") || strings.Contains(path, ":") {
		return Gemini
	}
	return OpenAI
}

package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulehook/joule/energy"
)

// honouring is a fake upstream that honours the output cap the way the
// providers do: it answers answerLen tokens, or stops at the cap with the
// provider's stop reason. It reports the input tokens it was told to.
type honouring struct {
	answerLen  int
	inputToks  int
	hold       time.Duration
	outputSum  atomic.Int64
	maxSeen    atomic.Int64
	overCapped atomic.Int64 // answers longer than their request's cap: a fake-upstream bug
}

func (h *honouring) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		MaxTokens           *int64 `json:"max_tokens"`
		MaxCompletionTokens *int64 `json:"max_completion_tokens"`
		MaxOutputTokens     *int64 `json:"max_output_tokens"`
		Options             struct {
			NumPredict *int64 `json:"num_predict"`
		} `json:"options"`
		GenerationConfig struct {
			MaxOutputTokens *int64 `json:"maxOutputTokens"`
		} `json:"generationConfig"`
		Stream bool   `json:"stream"`
		Model  string `json:"model"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "bad json: "+err.Error(), 400)
		return
	}
	capTok := int64(1 << 40)
	for _, p := range []*int64{req.MaxTokens, req.MaxCompletionTokens, req.MaxOutputTokens, req.Options.NumPredict, req.GenerationConfig.MaxOutputTokens} {
		if p != nil && *p > 0 {
			capTok = min(capTok, *p)
		}
	}
	out, stop := int64(h.answerLen), "end_turn"
	if out > capTok {
		out, stop = capTok, "max_tokens"
	}
	h.outputSum.Add(out)
	if h.hold > 0 {
		time.Sleep(h.hold)
	}
	switch r.URL.Path {
	case "/v1/messages":
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		fmt.Fprintf(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":%d,\"output_tokens\":1}}}\n\n", h.inputToks)
		f.Flush()
		fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", strings.Repeat("abcd", int(min(out, 64))))
		f.Flush()
		fmt.Fprintf(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":%q},\"usage\":{\"output_tokens\":%d}}\n\n", stop, out)
		fmt.Fprintf(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	case "/v1/chat/completions":
		fin := "stop"
		if stop == "max_tokens" {
			fin = "length"
		}
		writeJSON(w, fmt.Sprintf(`{"id":"c","object":"chat.completion","model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":%q}],"usage":{"prompt_tokens":%d,"completion_tokens":%d}}`, req.Model, fin, h.inputToks, out))
	case "/v1/responses":
		status := "completed"
		if stop == "max_tokens" {
			status = "incomplete"
		}
		writeJSON(w, fmt.Sprintf(`{"id":"r","object":"response","status":%q,"model":"gpt-5","output":[],"usage":{"input_tokens":%d,"output_tokens":%d}}`, status, h.inputToks, out))
	case "/api/chat":
		reason := "stop"
		if stop == "max_tokens" {
			reason = "length"
		}
		writeJSON(w, fmt.Sprintf(`{"model":"llama3.2","message":{"role":"assistant","content":"x"},"done":true,"done_reason":%q,"prompt_eval_count":%d,"eval_count":%d}`, reason, h.inputToks, out))
	default: // Gemini, streamed as SSE
		reason := "STOP"
		if stop == "max_tokens" {
			reason = "MAX_TOKENS"
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"x\"}],\"role\":\"model\"},\"finishReason\":%q}],\"usageMetadata\":{\"promptTokenCount\":%d,\"candidatesTokenCount\":%d},\"modelVersion\":\"gemini-2.5-pro\"}\r\n\r\n", reason, h.inputToks, out)
	}
}

// fitBudget is a budget a call is fitted to out output tokens on: a
// fitted call takes half of what is left.
func fitBudget(r energy.Rates, input, out uint64) uint64 {
	return 2 * r.Of(energy.Usage{Input: input, Output: out})
}

// TestFitForwardsLowered: each wire format's cap is lowered to what the
// budget pays, every other byte of the body kept, the response says so and
// the receipt records both caps.
func TestFitForwardsLowered(t *testing.T) {
	tests := []struct {
		name, path, model string
		body              func(cap string) string // the body with its cap spelled cap
		orig              uint64
		field             string
	}{
		{"messages", "/v1/messages", "claude-opus-4-5", func(c string) string {
			return `{"model":"claude-opus-4-5", "max_tokens":` + c + ` ,"messages":[{"role":"user","content":"hi \u00e9"}],"stream":true}`
		}, 128000, "max_tokens"},
		{"chat", "/v1/chat/completions", "gpt-5", func(c string) string {
			return `{"model":"gpt-5","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":` + c + `}`
		}, 100000, "max_completion_tokens"},
		{"responses", "/v1/responses", "gpt-5", func(c string) string {
			return `{"model":"gpt-5","input":"hi","max_output_tokens":` + c + `,"x":[1, 2]}`
		}, 64000, "max_output_tokens"},
		{"ollama", "/api/chat", "llama3.2", func(c string) string {
			return `{"model":"llama3.2","stream":false,"options":{"temperature":0.2,"num_predict":` + c + `},"messages":[]}`
		}, 50000, "options.num_predict"},
		{"gemini", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", "gemini-2.5-pro", func(c string) string {
			return `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"temperature":0,"maxOutputTokens":` + c + `,"thinkingConfig":{"includeThoughts":true}}}`
		}, 65536, "generationConfig.maxOutputTokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := tt.body(strconv.FormatUint(tt.orig, 10))
			rates := energy.DefaultRates[(&energy.Table{}).ClassOf(tt.model)]
			in := uint64(len(body)+3) / 4
			wantFit := uint64(3000)
			r := newRig(t, fitBudget(rates, in, wantFit))
			h := &honouring{answerLen: 200, inputToks: 20}
			r.up.handler = h.serve
			resp, got := r.do("POST", tt.path, body)
			if resp.StatusCode != 200 {
				t.Fatalf("got %d %s", resp.StatusCode, got)
			}
			if hdr, want := resp.Header.Get(FittedHeader), fmt.Sprintf("%s %d -> %d", tt.field, tt.orig, wantFit); hdr != want {
				t.Errorf("%s: %q, want %q", FittedHeader, hdr, want)
			}
			if sent, want := string(r.up.last().Body), tt.body(strconv.FormatUint(wantFit, 10)); sent != want {
				t.Errorf("forwarded\n%s\nwant\n%s", sent, want)
			}
			recs := r.receipts(DefaultSession)
			if len(recs) != 1 {
				t.Fatalf("%d receipts", len(recs))
			}
			e := recs[0]
			if e.MaxOutputRequested != tt.orig || e.MaxOutputFitted != wantFit || e.OutputTokens != 200 || e.InputTokens != 20 || e.Status != "complete" {
				t.Errorf("receipt %+v", e)
			}
			if !strings.Contains(e.Note, "fitted") && !strings.Contains(e.Note, "->") {
				t.Errorf("note %q does not say the call was fitted", e.Note)
			}
			if g := r.grant(); g.SpentUJ > g.BudgetUJ || g.ReservedUJ != 0 {
				t.Errorf("grant %+v", g)
			}
		})
	}
}

// TestFitNotNeeded: a call the budget pays for whole is forwarded
// unchanged, with no header and no fitted caps in its receipt.
func TestFitNotNeeded(t *testing.T) {
	r := newRig(t, big)
	h := &honouring{answerLen: 200, inputToks: 20}
	r.up.handler = h.serve
	body := `{"model":"claude-opus-4-5","max_tokens":128000,"messages":[],"stream":true}`
	resp, _ := r.do("POST", "/v1/messages", body)
	if resp.StatusCode != 200 || resp.Header.Get(FittedHeader) != "" || string(r.up.last().Body) != body {
		t.Errorf("got %d %q, forwarded %s", resp.StatusCode, resp.Header.Get(FittedHeader), r.up.last().Body)
	}
	if e := r.receipts(DefaultSession)[0]; e.MaxOutputRequested != 0 || e.MaxOutputFitted != 0 {
		t.Errorf("receipt %+v", e)
	}
}

// TestFitBadInput: output caps that are not a positive integer within
// 2^53, and caps named twice, are refused before any budget or upstream;
// an absent cap takes the class default and, when fitted, is added.
func TestFitBadInput(t *testing.T) {
	tests := []struct {
		name, path, body string
		status           int
		want             string // in the response, or (200) the forwarded body
	}{
		{"zero", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":0}`, 400, `\"max_tokens\" must be at least 1, not 0`},
		{"negative", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":-5}`, 400, `must be at least 1, not -5`},
		{"fraction", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100.5}`, 400, `must be a whole number, not 100.5`},
		{"exponent", "/v1/chat/completions", `{"model":"gpt-5","max_tokens":1e3}`, 400, `must be a whole number, not 1e3`},
		{"above 2^53", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":9007199254740993}`, 400, `above the largest cap joule takes (2^53)`},
		{"beyond int64", "/v1/responses", `{"model":"gpt-5","max_output_tokens":99999999999999999999999}`, 400, `above the largest cap`},
		{"string", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":"100"}`, 400, `\"max_tokens\" must be an integer, not \"100\"`},
		{"bool", "/api/chat", `{"model":"llama3.2","options":{"num_predict":true}}`, 400, `\"options.num_predict\" must be an integer, not true`},
		{"options not an object", "/api/chat", `{"model":"llama3.2","options":[1]}`, 400, `\"options\" is not a JSON object`},
		{"twice", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[],"max_tokens":100000}`, 400, `\"max_tokens\" appears twice`},
		{"model twice", "/v1/chat/completions", `{"model":"gpt-4o-mini","model":"gpt-5"}`, 400, `\"model\" appears twice`},
		{"nested twice", "/api/chat", `{"model":"llama3.2","options":{"num_predict":5,"num_predict":500000}}`, 400, `\"num_predict\" appears twice`},
		{"thinking budget string", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,"thinking":{"type":"enabled","budget_tokens":"x"}}`, 400, `thinking.budget_tokens`},
		// Absent caps: the class default (16384 for frontier) is more than
		// the budget pays, so the fitted cap is added to the body.
		{"absent", "/v1/chat/completions", `{"model":"gpt-5","messages":[]}`, 200, `{"max_completion_tokens":5000,"model":"gpt-5","messages":[]}`},
		{"null", "/v1/chat/completions", `{"model":"gpt-5","max_tokens":null}`, 200, `{"max_completion_tokens":5000,"model":"gpt-5","max_tokens":null}`},
		{"ollama unlimited", "/api/chat", `{"model":"gpt-oss:120b","stream":false,"options":{"num_predict":-1}}`, 200, `{"model":"gpt-oss:120b","stream":false,"options":{"num_predict":5000}}`},
		{"ollama no options", "/api/chat", `{"model":"gpt-oss:120b","stream":false}`, 200, `{"options":{"num_predict":5000},"model":"gpt-oss:120b","stream":false}`},
		{"ollama empty options", "/api/chat", `{"model":"gpt-oss:120b","stream":false,"options":{ }}`, 200, `{"model":"gpt-oss:120b","stream":false,"options":{"num_predict":5000 }}`},
		{"gemini no generationConfig", "/v1beta/models/gemini-2.5-pro:generateContent", `{"contents":[]}`, 200, `{"generationConfig":{"maxOutputTokens":5000},"contents":[]}`},
		{"gemini generationConfig without a cap", "/v1beta/models/gemini-2.5-pro:generateContent", `{"contents":[],"generationConfig":{"temperature":1}}`, 200, `{"contents":[],"generationConfig":{"maxOutputTokens":5000,"temperature":1}}`},
		{"gemini cap not a number", "/v1beta/models/gemini-2.5-pro:generateContent", `{"contents":[],"generationConfig":{"maxOutputTokens":"9"}}`, 400, `\"generationConfig.maxOutputTokens\" must be an integer`},
		{"gemini cap -1 is not Ollama's unlimited", "/v1beta/models/gemini-2.5-pro:generateContent", `{"contents":[],"generationConfig":{"maxOutputTokens":-1}}`, 400, `must be at least 1, not -1`},
		{"gemini generationConfig not an object", "/v1beta/models/gemini-2.5-pro:generateContent", `{"contents":[],"generationConfig":7}`, 400, `\"generationConfig\" is not a JSON object`},
		{"gemini model in the body too", "/v1beta/models/gemini-2.5-pro:generateContent", `{"model":"x","contents":[],"generationConfig":{"maxOutputTokens":100}}`, 200, `{"model":"x","contents":[],"generationConfig":{"maxOutputTokens":100}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Each row its own budget, which pays for its input estimate
			// and 5000 output tokens.
			in := uint64(len(tt.body)+3) / 4
			r := newRig(t, fitBudget(energy.DefaultRates[energy.Frontier], in, 5000))
			h := &honouring{answerLen: 100, inputToks: 10}
			r.up.handler = h.serve
			resp, got := r.do("POST", tt.path, tt.body)
			if resp.StatusCode != tt.status {
				t.Fatalf("got %d %s, want %d", resp.StatusCode, got, tt.status)
			}
			if tt.status != 200 {
				if !strings.Contains(string(got), tt.want) {
					t.Errorf("got %s, want %s", got, tt.want)
				}
				if r.up.calls.Load() != 0 {
					t.Error("the upstream was called")
				}
			} else if string(r.up.last().Body) != tt.want {
				t.Errorf("forwarded %s, want %s", r.up.last().Body, tt.want)
			}
			if g := r.grant(); g.SpentUJ > g.BudgetUJ || g.ReservedUJ != 0 {
				t.Errorf("grant %+v", g)
			}
		})
	}
}

// TestFitThinking: Anthropic's thinking budget must stay below max_tokens
// and at or above 1024; a fitted cap lowers it too, or the call is refused
// saying why.
func TestFitThinking(t *testing.T) {
	rates := energy.DefaultRates[energy.Frontier]
	tests := []struct {
		name          string
		maxTok, think uint64
		fit           uint64 // what the budget pays for
		status        int
		wantMax       uint64
		wantThink     uint64
	}{
		{"below the fitted cap", 64000, 2000, 8000, 200, 8000, 2000},
		{"just below", 64000, 7999, 8000, 200, 8000, 7999},
		{"at the fitted cap", 64000, 8000, 8000, 200, 8000, 4000},
		{"above it", 64000, 30000, 8000, 200, 8000, 4000},
		{"half below the minimum", 64000, 30000, 1500, 200, 1500, 1024},
		{"room for the minimum only", 64000, 30000, 1025, 200, 1025, 1024},
		{"no room for the minimum", 64000, 30000, 1024, 402, 0, 0},
		{"unfitted", 2000, 1500, 8000, 200, 2000, 1500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mk := func(m, b uint64) string {
				return fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":%d,"thinking":{"type":"enabled","budget_tokens":%d},"messages":[],"stream":true}`, m, b)
			}
			body := mk(tt.maxTok, tt.think)
			in := uint64(len(body)+3) / 4
			budget := fitBudget(rates, in, tt.fit)
			if tt.status != 200 {
				budget = rates.Of(energy.Usage{Input: in, Output: tt.fit}) // not even with all of it
			}
			r := newRig(t, budget)
			h := &honouring{answerLen: 100, inputToks: 10}
			r.up.handler = h.serve
			resp, got := r.do("POST", "/v1/messages", body)
			if resp.StatusCode != tt.status {
				t.Fatalf("got %d %s", resp.StatusCode, got)
			}
			if tt.status != 200 {
				if !strings.Contains(string(got), "thinking") || !strings.Contains(string(got), "joule grant issue --template dev --budget") {
					t.Errorf("refusal %s does not say why", got)
				}
				return
			}
			if sent, want := string(r.up.last().Body), mk(tt.wantMax, tt.wantThink); sent != want {
				t.Errorf("forwarded %s, want %s", sent, want)
			}
		})
	}
}

// TestFitUnknownModel: a model no class rule names is charged at the
// default class, and its receipt says so.
func TestFitUnknownModel(t *testing.T) {
	r := newRig(t, big)
	h := &honouring{answerLen: 10, inputToks: 10}
	r.up.handler = h.serve
	resp, got := r.do("POST", "/v1/chat/completions", `{"model":"zz-unheard-of-9","max_tokens":100}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, got)
	}
	e := r.receipts(DefaultSession)[0]
	if !strings.Contains(e.Note, "class frontier (the default: no class rule names this model)") ||
		e.EstimatedUJ != energy.DefaultRates[energy.Frontier].Of(energy.Usage{Input: 10, Output: 10}) {
		t.Errorf("receipt %+v", e)
	}
}

// TestFitInputOverrun: a provider that counts more input than the body's
// estimate (a system prompt of its own, a dense script) is charged what it
// reported, even past the budget, its receipt says so, and the next call
// is refused: the overrun is recorded, never hidden.
func TestFitInputOverrun(t *testing.T) {
	body := `{"model":"claude-sonnet-4-5","max_tokens":2000,"stream":true,"messages":[{"role":"user","content":"write"}]}`
	rates := energy.DefaultRates[energy.Frontier]
	est := uint64(len(body)+3) / 4
	const answerLen, inputToks = 1500, 400
	budget := rates.Of(energy.Usage{Input: est, Output: answerLen}) // whole at the estimate
	r := newRig(t, budget)
	h := &honouring{answerLen: answerLen, inputToks: inputToks}
	r.up.handler = h.serve
	resp, got := r.do("POST", "/v1/messages", body)
	if resp.StatusCode != 200 || !strings.Contains(string(got), "message_stop") {
		t.Fatalf("%d %s", resp.StatusCode, got)
	}
	charged := rates.Of(energy.Usage{Input: inputToks, Output: answerLen})
	e := r.receipts(DefaultSession)
	if len(e) != 1 || e[0].InputTokens != inputToks || e[0].EstimatedUJ != charged {
		t.Fatalf("receipts %+v, want one charging %d µJ for %d input tokens", e, charged, inputToks)
	}
	if g := r.grant(); g.SpentUJ != charged || g.SpentUJ <= g.BudgetUJ || g.ReservedUJ != 0 {
		t.Errorf("grant spent %d reserved %d of %d; want the reported cost %d", g.SpentUJ, g.ReservedUJ, g.BudgetUJ, charged)
	}
	if resp, got := r.do("POST", "/v1/messages", body); resp.StatusCode != 402 {
		t.Errorf("after the overrun: %d %s", resp.StatusCode, got)
	}
}

// TestFitConcurrent: 32 concurrent streaming calls, each asking for
// 32,000 output tokens, on a budget that pays for 10 whole answers: the
// grant is never overspent, and every call either completes (fitted, and
// saying so) or is refused with the floor message. The upstream counts
// no more input than the proxy estimates from the body (its bytes / 4):
// the ceiling holds to that estimate, and a provider that counts more is
// charged what it reported (TestFitInputOverrun).
func TestFitConcurrent(t *testing.T) {
	body := `{"model":"claude-sonnet-4-5","max_tokens":32000,"stream":true,"messages":[{"role":"user","content":"write"}]}`
	const (
		n         = 32
		answerLen = 1500
		inputToks = 24
	)
	if est := (len(body) + 3) / 4; inputToks > est {
		t.Fatalf("the fake upstream counts %d input tokens, more than the proxy's estimate %d", inputToks, est)
	}
	rates := energy.DefaultRates[energy.Frontier]
	full := rates.Of(energy.Usage{Input: inputToks, Output: answerLen})
	budget := 10 * full
	r := newRig(t, budget)
	h := &honouring{answerLen: answerLen, inputToks: inputToks, hold: 30 * time.Millisecond}
	r.up.handler = h.serve
	var (
		mu       sync.Mutex
		statuses = map[int]int{}
		fitted   int
		problems []string
	)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, err := http.Post(r.srv.URL+"/v1/messages", "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			statuses[resp.StatusCode]++
			switch resp.StatusCode {
			case 200:
				if !strings.Contains(string(b), "message_stop") {
					problems = append(problems, "a stream was cut: "+string(b))
				}
				if hdr := resp.Header.Get(FittedHeader); hdr != "" {
					fitted++
					var orig, fit uint64
					if _, err := fmt.Sscanf(hdr, "max_tokens %d -> %d", &orig, &fit); err != nil || orig != 32000 || fit < DefaultFloor || fit >= 32000 {
						problems = append(problems, "header "+hdr)
					}
					if fit < answerLen && !strings.Contains(string(b), `"stop_reason":"max_tokens"`) {
						problems = append(problems, "a fitted answer did not stop at its cap")
					}
				}
			case 402:
				if !strings.Contains(string(b), "the floor of 1024 output tokens") || !strings.Contains(string(b), "joule grant issue --template dev --budget 30MJ --use") {
					problems = append(problems, "refusal "+string(b))
				}
			default:
				problems = append(problems, fmt.Sprintf("status %d: %s", resp.StatusCode, b))
			}
		}()
	}
	close(start)
	wg.Wait()
	for _, p := range problems {
		t.Error(p)
	}
	recs := r.receipts(DefaultSession)
	g := r.grant()
	t.Logf("statuses %v, fitted %d, spent %d of %d µJ", statuses, fitted, g.SpentUJ, g.BudgetUJ)
	if g.SpentUJ > g.BudgetUJ || g.ReservedUJ != 0 {
		t.Errorf("grant spent %d reserved %d of %d", g.SpentUJ, g.ReservedUJ, g.BudgetUJ)
	}
	if statuses[200] == 0 || statuses[200]+statuses[402] != n || fitted == 0 {
		t.Errorf("statuses %v, %d fitted", statuses, fitted)
	}
	var out, spent uint64
	for _, e := range recs {
		out += e.OutputTokens
		spent += e.EstimatedUJ
		if e.InputTokens != inputToks || e.Status != "complete" {
			t.Errorf("receipt %+v", e)
		}
	}
	if refused := r.refusals(DefaultSession); len(refused) != statuses[402] {
		t.Errorf("%d refusals sealed for %d refused calls", len(refused), statuses[402])
	}
	if len(recs) != statuses[200] || out != uint64(h.outputSum.Load()) || spent != g.SpentUJ {
		t.Errorf("%d receipts with %d output tokens and %d µJ; upstream gave %d tokens, grant spent %d", len(recs), out, spent, h.outputSum.Load(), g.SpentUJ)
	}
	if err := r.st.Verify(context.Background()); err != nil {
		t.Error(err)
	}
}

// FuzzFitRewrite: any body the meter accepts, fitted to any cap, is still
// a JSON object whose cap members all read back at most that cap, with
// every other member unchanged.
func FuzzFitRewrite(f *testing.F) {
	f.Add(0, `{"model":"m","max_tokens":128000,"messages":[]}`, uint64(5000))
	f.Add(1, `{"model":"m","max_completion_tokens":9,"max_tokens":100000}`, uint64(1024))
	f.Add(2, `{"model":"m","max_output_tokens":null}`, uint64(2048))
	f.Add(3, `{"model":"m","options":{"num_predict":-1,"x":1}}`, uint64(3000))
	f.Add(3, `{"model":"m","options":{ }}`, uint64(3000))
	f.Add(0, `{"model":"m","max_tokens":64000,"thinking":{"type":"enabled","budget_tokens":30000}}`, uint64(8000))
	paths := []string{"/v1/messages", "/v1/chat/completions", "/v1/responses", "/api/chat"}
	f.Fuzz(func(t *testing.T, which int, body string, out uint64) {
		rt, _ := lookupRoute(paths[uint(which)%uint(len(paths))])
		out = out%maxCap + 1
		before, err := parseObject([]byte(body))
		if err != nil {
			return
		}
		oc, err := readCap(rt, before)
		if err != nil {
			return
		}
		budget, err := oc.fitThinking(out)
		if err != nil {
			return
		}
		got := applyEdits([]byte(body), oc.edits(rt, []byte(body), out, budget))
		after, err := parseObject(got)
		if err != nil {
			t.Fatalf("fitted body %s does not parse: %v", got, err)
		}
		noc, err := readCap(rt, after)
		if err != nil {
			t.Fatalf("fitted body %s: %v", got, err)
		}
		if n, ok := noc.requested(); !ok || n > out {
			t.Fatalf("fitted body %s has cap %d (named %v), want at most %d", got, n, ok, out)
		}
		for _, m := range before.ms {
			k, v := m.key, before.value(m.key)
			if k != "options" && k != "thinking" && !strings.HasPrefix(k, "max_") && string(after.value(k)) != string(v) {
				t.Fatalf("member %s changed: %s -> %s", k, v, after.value(k))
			}
		}
	})
}

// TestFitAfterAnsweredCall: a client that makes its next call as soon as
// it has read the last answer finds the budget that call did not use,
// even while its receipt is still being sealed. The first call is fitted
// to the whole budget; the second, made on a new connection while the
// first's receipt waits, asks for a tenth of it. Without waiting for the
// answered call to settle, the second would be refused (HTTP 402).
func TestFitAfterAnsweredCall(t *testing.T) {
	for _, path := range []string{"/v1/messages", "/v1/chat/completions"} {
		t.Run(path, func(t *testing.T) {
			model := "claude-sonnet-4-5"
			if path != "/v1/messages" {
				model = "gpt-5"
			}
			body := func(max int) string {
				return fmt.Sprintf(`{"model":%q,"max_tokens":%d,"stream":%v,"messages":[{"role":"user","content":"go"}]}`, model, max, path == "/v1/messages")
			}
			rates := energy.DefaultRates[energy.Frontier]
			// Between the floor and twice it, a fitted call takes all
			// that is left, not half.
			const fitTo = DefaultFloor * 3 / 2
			est := uint64(len(body(32000))+3) / 4
			budget := rates.Of(energy.Usage{Input: est, Output: fitTo})
			r := newRig(t, budget)
			h := &honouring{answerLen: 20, inputToks: 5}
			r.up.handler = h.serve
			var held atomic.Int64
			r.proxy.beforeSeal = func() {
				held.Add(1)
				time.Sleep(300 * time.Millisecond)
			}
			resp, got := r.do("POST", path, body(32000))
			if resp.StatusCode != 200 || resp.Header.Get(FittedHeader) == "" {
				t.Fatalf("the first call was not fitted: %d %s %s", resp.StatusCode, resp.Header.Get(FittedHeader), got)
			}
			tr := &http.Transport{} // a new connection, as a second client would open
			defer tr.CloseIdleConnections()
			req, _ := http.NewRequest("POST", r.srv.URL+path, strings.NewReader(body(fitTo/10)))
			resp2, err := (&http.Client{Transport: tr}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ = io.ReadAll(resp2.Body)
			resp2.Body.Close()
			if resp2.StatusCode != 200 || resp2.Header.Get(FittedHeader) != "" {
				t.Fatalf("the next call, once the first was answered: %d (fitted %q) %s", resp2.StatusCode, resp2.Header.Get(FittedHeader), got)
			}
			if held.Load() == 0 {
				t.Fatal("no receipt was sealed through the delay: the test did not race the seal")
			}
			r.proxy.Close()
			if g := r.grant(); g.ReservedUJ != 0 || g.SpentUJ > g.BudgetUJ || len(r.receipts(DefaultSession)) != 2 {
				t.Errorf("grant spent %d reserved %d of %d, %d receipts; want 2 receipts and nothing held", g.SpentUJ, g.ReservedUJ, g.BudgetUJ, len(r.receipts(DefaultSession)))
			}
		})
	}
}

// TestRouteStreams: whether a request streams is what json.Unmarshal reads
// its "stream" member as, into a bool: true or false (null is false); any
// other value, or none, leaves the API's default (Ollama streams unasked).
func TestRouteStreams(t *testing.T) {
	values := []string{"", "true", "false", "null", `"true"`, "1", "0", "{}", "[]", " true "}
	for _, unasked := range []bool{false, true} {
		for _, v := range values {
			body := `{"model":"m"}`
			if v != "" {
				body = `{"model":"m","stream":` + v + `}`
			}
			obj, err := parseObject([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			want := unasked
			var b bool
			if v != "" && json.Unmarshal([]byte(v), &b) == nil {
				want = b
			}
			if got := (route{streamsUnasked: unasked}).streams(obj); got != want {
				t.Errorf("stream %s, streaming unasked %v: streams %v, want %v", v, unasked, got, want)
			}
		}
	}
}

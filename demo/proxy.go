package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/energy"
	"github.com/joulehook/joule/energy/proxy"
	"github.com/joulehook/joule/plugins/hosts"
)

// proxySession is the session the demo's model calls are sealed under.
const proxySession = "demo-proxy"

// Proxy runs the meter end to end on loopback: a stand-in for the
// Anthropic Messages API that streams its answer as server-sent events, the
// real proxy in front of it with a per-session grant of 5 kJ, one call the
// ceiling fits to the budget and one it lets through whole, and the
// efficiency receipt the second one sealed, verified with the public key.
func Proxy(ctx context.Context, home string, say func(string, ...any)) error {
	id, err := identity.Load(home)
	if err != nil {
		return err
	}
	st, err := store.Open(filepath.Join(home, store.DefaultFile))
	if err != nil {
		return err
	}
	defer st.Close()
	issuer, err := grant.NewIssuer(id.Steward, id.Key)
	if err != nil {
		return err
	}
	now := time.Now()
	g, err := issuer.Sign(&grant.Grant{Subject: proxySession, Roots: []string{"/"}, Tiers: []string{"l4"},
		BudgetUJ: 5_000_000_000, NotBefore: now.Unix(), NotAfter: now.Add(time.Hour).Unix()})
	if err != nil {
		return err
	}
	sealer, err := id.Sealer()
	if err != nil {
		return err
	}
	gt := &gate.Gate{Store: st, Sealer: sealer, Trust: grant.Trust{id.Steward: id.Public()}, JouleHome: home, Hosts: hosts.Config(nil, "")}
	if err := gt.Adopt(ctx, g, "the demo proxy's grant", false); err != nil {
		return err
	}
	if err := gt.Use(ctx, g.ID.String(), proxySession); err != nil {
		return err
	}

	upstream, err := startServer(AnthropicStandIn())
	if err != nil {
		return err
	}
	defer upstream.Close()
	upURL, _ := url.Parse(upstream.url)
	p, err := proxy.New(proxy.Config{
		Anthropic: upURL, Ledger: st, Recorder: &energy.Recorder{Store: st, Sealer: sealer},
		Grants: func(ctx context.Context, session string) ([]string, error) {
			chain, err := gt.ActiveChain(ctx, session)
			if err != nil {
				return nil, err
			}
			if err := chain.Check(session, time.Now()); err != nil {
				return nil, err
			}
			return chain.IDs(), nil
		},
	})
	if err != nil {
		return err
	}
	front, err := startServer(p)
	if err != nil {
		return err
	}
	defer front.Close()
	say("9. proxy     joule proxy on %s in front of a local Anthropic Messages stand-in on %s; grant %s: %s for session %s",
		front.url, upstream.url, g.ID, grant.FormatEnergy(g.Grant.BudgetUJ), proxySession)

	ask := func(maxTokens int) (*http.Response, error) {
		body := fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":%d,"stream":true,"messages":[{"role":"user","content":"Name the three seams joule binds."}]}`, maxTokens)
		req, err := http.NewRequestWithContext(ctx, "POST", front.url+"/v1/messages?beta=true", strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("anthropic-version", "2023-06-01")
		req.Header.Set("x-api-key", "sk-ant-demo-not-a-real-key")
		req.Header.Set("x-claude-code-session-id", proxySession)
		return http.DefaultClient.Do(req)
	}
	// 32,000 output tokens of a frontier model are 96 kJ, far over the
	// 5 kJ grant: the proxy fits the call to what the budget pays rather
	// than refusing it.
	resp, err := ask(32000)
	if err != nil {
		return err
	}
	fittedBody, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fitted := resp.Header.Get(proxy.FittedHeader)
	if resp.StatusCode != http.StatusOK || fitted == "" {
		return fmt.Errorf("demo: a call over the budget was not fitted to it: HTTP %d %.200s", resp.StatusCode, fittedBody)
	}
	say("   fitted    %s: the grant cannot pay for 32000 output tokens (96 kJ), so the call went through with the cap it can pay for", fitted)

	start := time.Now()
	resp, err = ask(256)
	if err != nil {
		return err
	}
	var text, raw strings.Builder
	var ttfb time.Duration
	events := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if raw.Len() < 512 {
			raw.WriteString(line)
		}
		if ttfb == 0 {
			ttfb = time.Since(start)
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		events++
		var ev struct {
			Delta struct{ Text string } `json:"delta"`
		}
		if json.Unmarshal([]byte(data), &ev) == nil {
			text.WriteString(ev.Delta.Text)
		}
	}
	resp.Body.Close()
	if err := sc.Err(); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("demo: the proxied call failed: HTTP %d %.512s", resp.StatusCode, raw.String())
	}
	say("   streamed  %d events, first byte after %v: %q", events, ttfb.Round(time.Millisecond), text.String())
	p.Close()

	all, err := verifySession(ctx, st, id, proxySession)
	if err != nil {
		return fmt.Errorf("demo: efficiency receipts do not verify: %w", err)
	}
	if len(all) == 0 || all[len(all)-1].Efficiency == nil {
		return errors.New("demo: the proxied call sealed no efficiency receipt")
	}
	r := all[len(all)-1].Efficiency
	say("10. receipt  efficiency/1 #%d in session %s, signature and chain verified", r.Sequence, r.Session)
	say("   model     %s: %d input, %d cached, %d cache-write, %d output tokens", r.Model, r.InputTokens, r.CachedInputTokens, r.CacheWriteTokens, r.OutputTokens)
	say("   energy    %s (%s), coverage %s, status %s", grant.FormatEnergy(r.EstimatedUJ), r.Provenance, r.Coverage, r.Status)
	say("   note      %s", r.Note)
	rec, err := st.Grant(ctx, g.ID.String())
	if err != nil {
		return err
	}
	say("   ledger    spent %s, %s left, nothing reserved in flight (%s)", grant.FormatEnergy(rec.SpentUJ), grant.FormatEnergy(rec.RemainingUJ()), grant.FormatEnergy(rec.ReservedUJ))
	return nil
}

// loopback is an HTTP server on 127.0.0.1.
type loopback struct {
	srv *http.Server
	url string
}

func startServer(h http.Handler) (*loopback, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return &loopback{srv: srv, url: "http://" + ln.Addr().String()}, nil
}

func (l *loopback) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l.srv.Shutdown(ctx)
}

// AnthropicStandIn speaks the Messages API's streaming protocol: a
// message_start with the input usage, one content_block_delta per word,
// flushed as written, a message_delta with the cumulative output usage,
// and message_stop. It is not a model; its answer is fixed.
func AnthropicStandIn() http.Handler {
	answer := strings.Fields("The gate, before each tool action; the meter, at the model call; the receipts, sealed and hash-chained.")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/messages" || r.Method != http.MethodPost {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"type":"error","error":{"type":"not_found_error","message":"not found"}}`)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		json.Unmarshal(body, &req)
		input := len(body) / 4
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		f, _ := w.(http.Flusher)
		send := func(event, data string) {
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data)
			if f != nil {
				f.Flush()
			}
		}
		send("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_demo_%d","type":"message","role":"assistant","content":[],"model":%q,"stop_reason":null,"usage":{"input_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`, time.Now().UnixNano(), req.Model+"-20250929", input))
		send("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		for i, word := range answer {
			if i > 0 {
				word = " " + word
			}
			b, _ := json.Marshal(word)
			send("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%s}}`, b))
			time.Sleep(3 * time.Millisecond)
		}
		send("content_block_stop", `{"type":"content_block_stop","index":0}`)
		send("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":%d}}`, len(answer)+3))
		send("message_stop", `{"type":"message_stop"}`)
	})
}

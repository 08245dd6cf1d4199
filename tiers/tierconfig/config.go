// Package tierconfig reads the "tiers" section of $JOULE_HOME/config.json
// (docs/models.md): which cascade tiers run and what each talks to, and
// builds the L2 embedder and the L3 stage it describes, routed through a
// running joule proxy where that proxy forwards to the same server.
package tierconfig

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"mvdan.cc/sh/v3/shell"

	"github.com/joulehook/joule/energy"
	"github.com/joulehook/joule/energy/proxy"
	"github.com/joulehook/joule/tiers/l2"
	"github.com/joulehook/joule/tiers/l3"
)

// Tiers is the "tiers" section of config.json (docs/models.md): which
// cascade tiers run and what each one talks to.
type Tiers struct {
	On map[string]bool // tier name ("l0"…"l4") → enabled; a tier with nothing configured stays off
	L2 L2
	L3 L3
	L4 L4
}

// Endpoint is a model server: provider, base URL, model and the name
// of the environment variable holding its API key (never the key itself).
type Endpoint struct {
	Provider  string // "ollama" or "openai"
	BaseURL   string
	Model     string
	APIKeyEnv string
}

// APIKey reads the key from the environment variable the config names.
func (e Endpoint) APIKey() (string, error) {
	if e.APIKeyEnv == "" {
		return "", nil
	}
	k := os.Getenv(e.APIKeyEnv)
	if k == "" {
		return "", fmt.Errorf("the environment variable %s, which the tiers config names for the %s API key, is not set", e.APIKeyEnv, e.Provider)
	}
	return k, nil
}

type L2 struct {
	Embedder *Endpoint // nil: lexical and symbol retrieval only
	// EmbedTimeout bounds each embedding request (a batch of an index
	// update, or a query): past it the update leaves the rest unembedded
	// and the query answers lexically, each saying why.
	EmbedTimeout time.Duration
	Context      int // snippets handed on to L3 on a miss; 0: L2's default
}

type L3 struct {
	Endpoint
	Check        []string      // argv of the check command for what Go checks cannot validate
	Timeout      time.Duration // the whole L3 attempt, repair included
	CheckTimeout time.Duration // each toolchain or check-command run
	MaxContext   int           // bytes of workspace text in the prompt
	MaxOutput    int           // tokens one call may produce; 0: the energy table's cap for the model's class
}

type L4 struct {
	Command string // the remote ACP agent's command line
	Timeout time.Duration
}

// Defaults when the config names none.
const (
	defaultOllamaURL    = "http://127.0.0.1:11434"
	defaultL3Timeout    = 5 * time.Minute
	defaultCheckTimeout = 2 * time.Minute
	defaultL4Timeout    = 30 * time.Minute
	defaultEmbedTimeout = 2 * time.Minute
)

// Names are the cascade's tiers, in order.
var Names = []string{"l0", "l1", "l2", "l3", "l4"}

// Enabled reports whether tier is on: named in "on" (or "on" absent) and,
// for L3 and L4, configured.
func (c *Tiers) Enabled(tier string) bool {
	if c.On != nil && !c.On[tier] {
		return false
	}
	switch tier {
	case "l3":
		return c.L3.Model != ""
	case "l4":
		return c.L4.Command != ""
	}
	return true
}

// EnabledNames are the tiers that are on, in cascade order.
func (c *Tiers) EnabledNames() []string {
	var on []string
	for _, t := range Names {
		if c.Enabled(t) {
			on = append(on, t)
		}
	}
	return on
}

// Parse parses the raw "tiers" section; nil or null is every tier
// that needs no configuration (L0, L1, lexical L2). Errors name the field's
// path, e.g. tiers.l3.timeout.
func Parse(raw json.RawMessage) (*Tiers, error) {
	c := &Tiers{}
	c.L3.Timeout, c.L3.CheckTimeout, c.L4.Timeout = defaultL3Timeout, defaultCheckTimeout, defaultL4Timeout
	c.L2.EmbedTimeout = defaultEmbedTimeout
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return c, nil
	}
	err := object("tiers", raw, fields{
		"on": func(p string, v json.RawMessage) error {
			var names []string
			if err := strictJSON(p, v, &names); err != nil {
				return err
			}
			c.On = map[string]bool{}
			for i, n := range names {
				if !slices.Contains(Names, n) {
					return fmt.Errorf("%s[%d]: unknown tier %q (want %s)", p, i, n, strings.Join(Names, ", "))
				}
				c.On[n] = true
			}
			return nil
		},
		"l2": func(p string, v json.RawMessage) error {
			return object(p, v, fields{
				"context": intField(&c.L2.Context, 1, 100),
				"embedder": func(p string, v json.RawMessage) error {
					c.L2.Embedder = &Endpoint{}
					return modelServer(p, v, c.L2.Embedder, fields{"timeout": durationField(&c.L2.EmbedTimeout)})
				},
			})
		},
		"l3": func(p string, v json.RawMessage) error {
			ep := fields{
				"check": func(p string, v json.RawMessage) error {
					var s string
					if err := strictJSON(p, v, &s); err != nil {
						return err
					}
					argv, err := shell.Fields(s, func(string) string { return "" })
					if err != nil || len(argv) == 0 {
						return fmt.Errorf("%s: %q is not a command line", p, s)
					}
					c.L3.Check = argv
					return nil
				},
				"timeout":       durationField(&c.L3.Timeout),
				"check_timeout": durationField(&c.L3.CheckTimeout),
				"max_context":   intField(&c.L3.MaxContext, 1024, 1<<30),
				"max_output":    intField(&c.L3.MaxOutput, 16, 1<<20),
			}
			if err := endpointFields(ep, &c.L3.Endpoint); err != nil {
				return err
			}
			if err := object(p, v, ep); err != nil {
				return err
			}
			return checkEndpoint(p, &c.L3.Endpoint)
		},
		"l4": func(p string, v json.RawMessage) error {
			return object(p, v, fields{
				"command": func(p string, v json.RawMessage) error {
					if err := strictJSON(p, v, &c.L4.Command); err != nil {
						return err
					}
					if argv, err := shell.Fields(c.L4.Command, func(string) string { return "" }); err != nil || len(argv) == 0 {
						return fmt.Errorf("%s: %q is not a command line", p, c.L4.Command)
					}
					return nil
				},
				"timeout": durationField(&c.L4.Timeout),
			})
		},
	})
	if err != nil {
		return nil, err
	}
	if c.On != nil {
		if c.On["l3"] && c.L3.Model == "" {
			return nil, fmt.Errorf("tiers.on: names l3 but tiers.l3.model is not set")
		}
		if c.On["l4"] && c.L4.Command == "" {
			return nil, fmt.Errorf("tiers.on: names l4 but tiers.l4.command is not set")
		}
	}
	return c, nil
}

// fields maps an object's keys to their parsers; any other key is an error.
type fields map[string]func(path string, v json.RawMessage) error

func object(path string, raw json.RawMessage, fs fields) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return fmt.Errorf("%s: want an object", path)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f, ok := fs[k]
		if !ok {
			known := make([]string, 0, len(fs))
			for n := range fs {
				known = append(known, n)
			}
			sort.Strings(known)
			return fmt.Errorf("%s.%s: unknown field (known: %s)", path, k, strings.Join(known, ", "))
		}
		if err := f(path+"."+k, m[k]); err != nil {
			return err
		}
	}
	return nil
}

func strictJSON(path string, raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %v", path, strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

func stringField(dst *string) func(string, json.RawMessage) error {
	return func(p string, v json.RawMessage) error { return strictJSON(p, v, dst) }
}

func intField(dst *int, lo, hi int) func(string, json.RawMessage) error {
	return func(p string, v json.RawMessage) error {
		if err := strictJSON(p, v, dst); err != nil {
			return err
		}
		if *dst < lo || *dst > hi {
			return fmt.Errorf("%s: %d is out of range [%d, %d]", p, *dst, lo, hi)
		}
		return nil
	}
}

func durationField(dst *time.Duration) func(string, json.RawMessage) error {
	return func(p string, v json.RawMessage) error {
		var s string
		if err := strictJSON(p, v, &s); err != nil {
			return err
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return fmt.Errorf("%s: %q: want a positive duration such as 90s or 5m", p, s)
		}
		*dst = d
		return nil
	}
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func endpointFields(fs fields, e *Endpoint) error {
	fs["provider"] = stringField(&e.Provider)
	fs["base_url"] = stringField(&e.BaseURL)
	fs["model"] = stringField(&e.Model)
	fs["api_key_env"] = func(p string, v json.RawMessage) error {
		if err := strictJSON(p, v, &e.APIKeyEnv); err != nil {
			return err
		}
		if !envName.MatchString(e.APIKeyEnv) {
			return fmt.Errorf("%s: %q is not an environment variable name; put the key in the environment and its name here", p, e.APIKeyEnv)
		}
		return nil
	}
	return nil
}

// modelServer parses a model server's settings, and the extra fields
// given.
func modelServer(path string, raw json.RawMessage, e *Endpoint, extra fields) error {
	fs := fields{}
	for k, f := range extra {
		fs[k] = f
	}
	if err := endpointFields(fs, e); err != nil {
		return err
	}
	if err := object(path, raw, fs); err != nil {
		return err
	}
	return checkEndpoint(path, e)
}

// checkEndpoint validates a model server's settings and fills defaults.
func checkEndpoint(path string, e *Endpoint) error {
	switch e.Provider {
	case "ollama":
		if e.BaseURL == "" {
			e.BaseURL = defaultOllamaURL
		}
	case "openai":
		if e.BaseURL == "" {
			return fmt.Errorf("%s.base_url: required for provider openai (e.g. http://127.0.0.1:8000/v1 for vLLM)", path)
		}
	case "":
		return fmt.Errorf("%s.provider: required: ollama or openai", path)
	default:
		return fmt.Errorf("%s.provider: %q: want ollama or openai", path, e.Provider)
	}
	u, err := url.Parse(e.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s.base_url: %q is not an http(s) URL", path, e.BaseURL)
	}
	if u.User != nil {
		return fmt.Errorf("%s.base_url: credentials do not belong in the URL; name an environment variable in api_key_env", path)
	}
	if e.Model == "" {
		return fmt.Errorf("%s.model: required", path)
	}
	return nil
}

// Route is where a model server's calls go: straight to it, or through a
// running joule proxy whose upstream for that API is the same server.
type Route struct {
	BaseURL string
	Metered bool   // through joule proxy, which seals each call's receipt
	Note    string // why, for doctor and the log
}

// RouteOf finds the running proxy announced in home and routes e through
// it when the proxy forwards e's API to e's server.
func RouteOf(home string, e Endpoint) Route {
	a, err := proxy.Discover(home)
	if err != nil {
		return Route{BaseURL: e.BaseURL, Note: fmt.Sprintf("direct: the proxy announcement is unreadable (%v)", err)}
	}
	if a == nil {
		return Route{BaseURL: e.BaseURL, Note: "direct: joule proxy is not running"}
	}
	up := a.Upstreams[e.Provider]
	if sameServer(up, e.BaseURL) {
		base := "http://" + a.Addr
		if e.Provider == "openai" {
			base += "/v1"
		}
		return Route{BaseURL: base, Metered: true, Note: fmt.Sprintf("through joule proxy at %s (pid %d)", a.Addr, a.PID)}
	}
	return Route{BaseURL: e.BaseURL, Note: fmt.Sprintf("direct: joule proxy at %s forwards %s calls to %s, not to %s", a.Addr, e.Provider, up, e.BaseURL)}
}

func sameServer(a, b string) bool {
	norm := func(s string) string {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil {
			return s
		}
		return strings.ToLower(u.Scheme+"://"+u.Host) + strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1")
	}
	return a != "" && norm(a) == norm(b)
}

// LocalStage builds L3 from the config: its model (routed through joule
// proxy when it runs), checks, energy table, and, when the calls are not
// metered by the proxy, a ledger sealing each call's receipt.
func (c *Tiers) LocalStage(home string, key ed25519.PrivateKey, table *energy.Table, ledger l3.Ledger, budget l3.Budget, grants func(context.Context, string) []string) (*l3.Stage, Route, error) {
	e := c.L3.Endpoint
	rt := RouteOf(home, e)
	maxOut := c.L3.MaxOutput
	if maxOut == 0 {
		maxOut = int(table.MaxOutput(e.Model))
	}
	var m l3.Model
	switch e.Provider {
	case "ollama":
		o, err := l3.NewOllama(rt.BaseURL, e.Model, nil)
		if err != nil {
			return nil, rt, err
		}
		o.MaxOutput = maxOut
		m = o
	case "openai":
		apiKey, err := e.APIKey()
		if err != nil {
			return nil, rt, err
		}
		o, err := l3.NewOpenAI(rt.BaseURL, apiKey, e.Model, nil)
		if err != nil {
			return nil, rt, err
		}
		o.MaxOutput = maxOut
		m = o
	}
	s := &l3.Stage{Model: m, Key: key, Timeout: c.L3.Timeout, MaxContext: c.L3.MaxContext, MaxOutput: maxOut, Energy: table, Grants: grants,
		Check: &l3.Checker{Command: c.L3.Check, Timeout: c.L3.CheckTimeout}}
	if !rt.Metered {
		// Not metered by joule proxy: the tier reserves, settles and seals
		// each call itself.
		s.Ledger, s.Budget = ledger, budget
	}
	return s, rt, nil
}

// Embedder builds L2's embedding model client; nil when none is configured.
// Each of its requests is bounded by the configured timeout, so that a
// server that accepts and never answers holds up neither an index update
// nor a query past it.
func (c *Tiers) Embedder(home string) (l2.Embedder, Route, error) {
	e := c.L2.Embedder
	if e == nil {
		return nil, Route{Note: l2.LexicalOnly}, nil
	}
	rt := RouteOf(home, *e)
	timeout := c.L2.EmbedTimeout
	if timeout <= 0 {
		timeout = defaultEmbedTimeout
	}
	hc := &http.Client{Timeout: timeout}
	if e.Provider == "ollama" {
		return l2.NewOllamaEmbedder(rt.BaseURL, e.Model, hc), rt, nil
	}
	key, err := e.APIKey()
	if err != nil {
		return nil, rt, err
	}
	return l2.NewOpenAIEmbedder(rt.BaseURL, key, e.Model, hc), rt, nil
}

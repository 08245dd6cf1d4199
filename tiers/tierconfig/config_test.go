package tierconfig

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/energy/proxy"
)

func TestParseTiers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		raw   string
		check func(t *testing.T, c *Tiers)
		err   string
	}{
		{name: "absent", raw: "", check: func(t *testing.T, c *Tiers) {
			if got := c.EnabledNames(); !reflect.DeepEqual(got, []string{"l0", "l1", "l2"}) {
				t.Errorf("on = %v", got)
			}
			if c.L3.Timeout != defaultL3Timeout || c.L4.Timeout != defaultL4Timeout || c.L2.EmbedTimeout != defaultEmbedTimeout {
				t.Errorf("defaults: %+v", c)
			}
		}},
		{name: "null", raw: "null", check: func(t *testing.T, c *Tiers) {
			if !c.Enabled("l2") || c.Enabled("l3") {
				t.Errorf("on = %v", c.EnabledNames())
			}
		}},
		{name: "full", raw: `{"on": ["l1","l2","l3","l4"],
			"l2": {"context": 8, "embedder": {"provider": "ollama", "model": "nomic-embed-text", "timeout": "20s"}},
			"l3": {"provider": "openai", "base_url": "http://127.0.0.1:8000/v1", "model": "Qwen/Qwen2.5-Coder-7B-Instruct", "api_key_env": "VLLM_KEY",
			       "check": "make -C . 'check all'", "timeout": "90s", "check_timeout": "1m", "max_context": 32768, "max_output": 512},
			"l4": {"command": "npx @zed-industries/claude-code-acp", "timeout": "10m"}}`,
			check: func(t *testing.T, c *Tiers) {
				if got := c.EnabledNames(); !reflect.DeepEqual(got, []string{"l1", "l2", "l3", "l4"}) {
					t.Errorf("on = %v", got)
				}
				if c.L2.Embedder.BaseURL != defaultOllamaURL || c.L2.Context != 8 || c.L2.EmbedTimeout != 20*time.Second {
					t.Errorf("l2 = %+v", c.L2)
				}
				if !reflect.DeepEqual(c.L3.Check, []string{"make", "-C", ".", "check all"}) || c.L3.Timeout != 90*time.Second || c.L3.CheckTimeout != time.Minute || c.L3.MaxContext != 32768 || c.L3.MaxOutput != 512 || c.L3.APIKeyEnv != "VLLM_KEY" {
					t.Errorf("l3 = %+v", c.L3)
				}
				if c.L4.Command == "" || c.L4.Timeout != 10*time.Minute {
					t.Errorf("l4 = %+v", c.L4)
				}
			}},
		{name: "l3 off by on", raw: `{"on": ["l0","l1"], "l3": {"provider": "ollama", "model": "qwen2.5-coder:7b"}}`, check: func(t *testing.T, c *Tiers) {
			if c.Enabled("l3") || c.Enabled("l2") {
				t.Errorf("on = %v", c.EnabledNames())
			}
		}},
		{name: "not an object", raw: `[1]`, err: "tiers: want an object"},
		{name: "unknown top field", raw: `{"l5": {}}`, err: "tiers.l5: unknown field"},
		{name: "unknown nested field", raw: `{"l3": {"provider": "ollama", "model": "m", "temperature": 0}}`, err: "tiers.l3.temperature: unknown field"},
		{name: "unknown embedder field", raw: `{"l2": {"embedder": {"provider": "ollama", "model": "m", "key": "sk-x"}}}`, err: "tiers.l2.embedder.key: unknown field"},
		{name: "unknown tier in on", raw: `{"on": ["l9"]}`, err: `tiers.on[0]: unknown tier "l9"`},
		{name: "on not a list", raw: `{"on": "l1"}`, err: "tiers.on:"},
		{name: "l3 named without model", raw: `{"on": ["l3"]}`, err: "tiers.l3.model is not set"},
		{name: "l4 named without command", raw: `{"on": ["l4"]}`, err: "tiers.l4.command is not set"},
		{name: "bad provider", raw: `{"l3": {"provider": "anthropic", "model": "m"}}`, err: `tiers.l3.provider: "anthropic"`},
		{name: "no provider", raw: `{"l3": {"model": "m"}}`, err: "tiers.l3.provider: required"},
		{name: "openai without base url", raw: `{"l3": {"provider": "openai", "model": "m"}}`, err: "tiers.l3.base_url: required"},
		{name: "bad base url", raw: `{"l3": {"provider": "ollama", "base_url": "localhost:11434", "model": "m"}}`, err: "tiers.l3.base_url"},
		{name: "credentials in url", raw: `{"l3": {"provider": "ollama", "base_url": "http://u:p@h:1", "model": "m"}}`, err: "credentials do not belong"},
		{name: "no model", raw: `{"l3": {"provider": "ollama"}}`, err: "tiers.l3.model: required"},
		{name: "key in api_key_env", raw: `{"l3": {"provider": "openai", "base_url": "http://h/v1", "model": "m", "api_key_env": "sk-abc123"}}`, err: "not an environment variable name"},
		{name: "bad timeout", raw: `{"l3": {"provider": "ollama", "model": "m", "timeout": "soon"}}`, err: "tiers.l3.timeout"},
		{name: "negative timeout", raw: `{"l4": {"command": "x", "timeout": "-1s"}}`, err: "tiers.l4.timeout"},
		{name: "bad embedder timeout", raw: `{"l2": {"embedder": {"provider": "ollama", "model": "m", "timeout": "0s"}}}`, err: "tiers.l2.embedder.timeout"},
		{name: "timeout as number", raw: `{"l4": {"command": "x", "timeout": 30}}`, err: "tiers.l4.timeout"},
		{name: "bad check", raw: `{"l3": {"provider": "ollama", "model": "m", "check": "make 'unterminated"}}`, err: "tiers.l3.check"},
		{name: "empty command", raw: `{"l4": {"command": "  "}}`, err: "tiers.l4.command"},
		{name: "context out of range", raw: `{"l2": {"context": 0}}`, err: "tiers.l2.context: 0 is out of range"},
		{name: "max_context too small", raw: `{"l3": {"provider": "ollama", "model": "m", "max_context": 10}}`, err: "tiers.l3.max_context"},
		{name: "max_output too small", raw: `{"l3": {"provider": "ollama", "model": "m", "max_output": 1}}`, err: "tiers.l3.max_output: 1 is out of range"},
		{name: "broken json", raw: `{"l3": `, err: "tiers: want an object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(json.RawMessage(tc.raw))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func TestAPIKeyFromEnv(t *testing.T) {
	e := Endpoint{Provider: "openai", APIKeyEnv: "JOULE_TEST_L3_KEY"}
	t.Setenv("JOULE_TEST_L3_KEY", "")
	if _, err := e.APIKey(); err == nil || !strings.Contains(err.Error(), "JOULE_TEST_L3_KEY") {
		t.Fatalf("unset variable: %v", err)
	}
	t.Setenv("JOULE_TEST_L3_KEY", "sk-test")
	if k, err := e.APIKey(); k != "sk-test" || err != nil {
		t.Fatalf("APIKey = %q, %v", k, err)
	}
}

func TestRouteOf(t *testing.T) {
	home := t.TempDir()
	ol := Endpoint{Provider: "ollama", BaseURL: "http://127.0.0.1:11434", Model: "m"}
	if rt := RouteOf(home, ol); rt.Metered || rt.BaseURL != ol.BaseURL || !strings.Contains(rt.Note, "not running") {
		t.Fatalf("no proxy: %+v", rt)
	}
	remove, err := proxy.Announce(home, proxy.Announcement{Addr: "127.0.0.1:7411", PID: os.Getpid(),
		Upstreams: map[string]string{"ollama": "http://127.0.0.1:11434/", "openai": "http://127.0.0.1:8000"}})
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	for _, tc := range []struct {
		e       Endpoint
		base    string
		metered bool
	}{
		{ol, "http://127.0.0.1:7411", true},
		{Endpoint{Provider: "openai", BaseURL: "http://127.0.0.1:8000/v1"}, "http://127.0.0.1:7411/v1", true},
		{Endpoint{Provider: "ollama", BaseURL: "http://gpu-box:11434"}, "http://gpu-box:11434", false},
	} {
		if rt := RouteOf(home, tc.e); rt.BaseURL != tc.base || rt.Metered != tc.metered {
			t.Errorf("%+v: %+v", tc.e, rt)
		}
	}
	// A stale announcement (its process is gone) is ignored.
	os.WriteFile(filepath.Join(home, proxy.AddrFile), []byte(`{"addr":"127.0.0.1:7411","pid":1073741824,"upstreams":{"ollama":"http://127.0.0.1:11434"}}`), 0o600)
	if rt := RouteOf(home, ol); rt.Metered {
		t.Fatalf("stale announcement: %+v", rt)
	}
}

func FuzzParseTiers(f *testing.F) {
	f.Add(`{"on": ["l1","l3"], "l3": {"provider": "ollama", "model": "m", "timeout": "1m"}}`)
	f.Add(`{"l2": {"embedder": {"provider": "openai", "base_url": "http://h/v1", "model": "e", "api_key_env": "K"}}}`)
	f.Add(`{"l4": {"command": "agent --acp", "timeout": "5m"}, "l3": {"provider": "openai", "base_url": "http://h/v1", "model": "m", "check": "make check"}}`)
	f.Add(`null`)
	f.Add(`{"l3": []}`)
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := Parse(json.RawMessage(raw))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "tiers") {
				t.Fatalf("error without the field's path: %v", err)
			}
			return
		}
		if c.Enabled("l3") {
			if c.L3.Model == "" || (c.L3.Provider != "ollama" && c.L3.Provider != "openai") || c.L3.BaseURL == "" {
				t.Fatalf("L3 on with %+v", c.L3)
			}
		}
		if c.L3.Timeout <= 0 || c.L3.CheckTimeout <= 0 || c.L4.Timeout <= 0 {
			t.Fatalf("non-positive timeout: %+v", c)
		}
		if e := c.L2.Embedder; e != nil && (e.Model == "" || e.BaseURL == "") {
			t.Fatalf("embedder %+v", e)
		}
	})
}

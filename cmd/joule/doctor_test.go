package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/tiers/l1/lsp"
)

// fakeModelServer answers Ollama's /api/tags and the OpenAI /v1/models
// listing with the models given.
func fakeModelServer(t *testing.T, models ...string) string {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/tags", func(w http.ResponseWriter, r *http.Request) {
		var ms []map[string]any
		for _, m := range models {
			ms = append(ms, map[string]any{"name": m, "model": m, "size": 1})
		}
		json.NewEncoder(w).Encode(map[string]any{"models": ms})
	})
	mux.HandleFunc("POST /api/show", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Model string }
		json.NewDecoder(r.Body).Decode(&req)
		caps := []string{"completion"}
		if strings.Contains(req.Model, "embed") {
			caps = []string{"embedding"}
		}
		json.NewEncoder(w).Encode(map[string]any{"capabilities": caps})
	})
	mux.HandleFunc("POST /api/embed", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"embeddings": [][]float32{{0.6, 0.8, 0}}})
	})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		var ms []map[string]any
		for _, m := range models {
			ms = append(ms, map[string]any{"id": m, "object": "model", "owned_by": "vllm"})
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": ms})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func closedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "http://" + ln.Addr().String()
}

func TestDoctor(t *testing.T) {
	up := fakeModelServer(t, "qwen2.5-coder:7b", "nomic-embed-text:latest")
	down := closedURL(t)
	for _, tc := range []struct {
		name  string
		tiers string
		meter string
		code  int
		want  map[string]string // check → status
		says  []string          // substrings of the text report
	}{
		{name: "no tiers config", code: 0,
			want: map[string]string{"key": "ok", "config": "ok", "store": "ok", "grant": "ok", "l2 index": "off", "embedder": "off", "l3": "off", "l4": "off", "proxy": "off", "go": "ok"},
			says: []string{"no config.json (defaults), no meter.json (default coefficients); tiers running here: l0 l1 l2 (l3 l4 not configured"}},
		{name: "servers up", code: 0,
			tiers: fmt.Sprintf(`{"l2": {"embedder": {"provider": "ollama", "base_url": %q, "model": "nomic-embed-text"}}, "l3": {"provider": "ollama", "base_url": %q, "model": "qwen2.5-coder:7b"}}`, up, up),
			want:  map[string]string{"embedder": "ok", "l3 model": "ok", "l3 energy": "warn", "l3 budget": "warn"}, says: []string{"one L3 call may reserve up to", "embeds (3 dimensions)"}},
		{name: "models swapped", code: 1,
			tiers: fmt.Sprintf(`{"l2": {"embedder": {"provider": "ollama", "base_url": %q, "model": "qwen2.5-coder:7b"}}, "l3": {"provider": "ollama", "base_url": %q, "model": "nomic-embed-text"}}`, up, up),
			want:  map[string]string{"embedder": "fail", "l3 model": "fail"}, says: []string{"is not an embedding model (its capabilities: completion)", "is not a chat model (its capabilities: embedding)"}},
		{name: "calibrated", code: 0,
			tiers: fmt.Sprintf(`{"l3": {"provider": "openai", "base_url": %q, "model": "qwen2.5-coder:7b"}}`, up+"/v1"),
			meter: `{"calibrations": [{"model": "qwen2.5-coder:7b", "id": "rtx4090-2026-11", "rates": {"input": "10mJ", "cached": "1mJ", "output": "200mJ"}}]}`,
			want:  map[string]string{"l3 model": "ok", "l3 energy": "ok"}, says: []string{"ModelBased", "config.json parses, meter.json parses; tiers running here: l0 l1 l2 l3 (l4 not configured"}},
		{name: "model not pulled", code: 1,
			tiers: fmt.Sprintf(`{"l3": {"provider": "ollama", "base_url": %q, "model": "llama3.2"}}`, up),
			want:  map[string]string{"l3 model": "fail"}, says: []string{"ollama pull llama3.2"}},
		{name: "servers down", code: 1,
			tiers: fmt.Sprintf(`{"l2": {"embedder": {"provider": "ollama", "base_url": %q, "model": "nomic-embed-text"}}, "l3": {"provider": "openai", "base_url": %q, "model": "m"}}`, down, down+"/v1"),
			want:  map[string]string{"embedder": "fail", "l3 model": "fail"}, says: []string{"not reachable"}},
		{name: "missing key variable", code: 1,
			tiers: fmt.Sprintf(`{"l3": {"provider": "openai", "base_url": %q, "model": "m", "api_key_env": "JOULE_DOCTOR_TEST_UNSET"}}`, up+"/v1"),
			want:  map[string]string{"l3 model": "fail"}, says: []string{"JOULE_DOCTOR_TEST_UNSET"}},
		{name: "bad config", code: 1, tiers: `{"l3": {"provider": "ollama", "model": "m", "colour": "blue"}}`,
			want: map[string]string{"config": "fail"}, says: []string{"tiers.l3.colour: unknown field"}},
		{name: "l4 not installed", code: 1, tiers: `{"l4": {"command": "no-such-agent-binary --acp"}}`,
			want: map[string]string{"l4": "fail"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A small grant, so that an L3 call's worst case is over it.
			env, ws := initHome(t, "--budget", "50J")
			env = append(env, "HOME="+outlivedHome(t))
			home := strings.TrimPrefix(env[0], "JOULE_HOME=")
			if tc.tiers != "" {
				if err := os.WriteFile(filepath.Join(home, ConfigFile), []byte(`{"tiers": `+tc.tiers+`}`), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tc.meter != "" {
				os.WriteFile(filepath.Join(home, MeterFile), []byte(tc.meter), 0o600)
			}
			r := joule(t, nil, env, "doctor", "--json", "--root", ws, "--timeout", "3s")
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, tc.code, r.stdout, r.stderr)
			}
			var fs []finding
			if err := json.Unmarshal([]byte(r.stdout), &fs); err != nil {
				t.Fatalf("--json output: %v\n%s", err, r.stdout)
			}
			got := map[string]string{}
			for _, f := range fs {
				if !slices.Contains([]string{statusOK, statusWarn, statusFail, statusOff, statusNote}, f.Status) {
					t.Errorf("status %q", f.Status)
				}
				if f.Status != statusOK && f.Hint == "" {
					t.Errorf("%s is %s without a hint", f.Check, f.Status)
				}
				got[f.Check] = f.Status
			}
			for check, st := range tc.want {
				if got[check] != st {
					t.Errorf("%s = %q, want %q\n%s", check, got[check], st, r.stdout)
				}
			}
			text := joule(t, nil, env, "doctor", "--root", ws, "--timeout", "3s")
			if text.code != tc.code {
				t.Fatalf("text report exit %d, want %d", text.code, tc.code)
			}
			for _, s := range tc.says {
				if !strings.Contains(text.stdout, s) {
					t.Errorf("report lacks %q:\n%s", s, text.stdout)
				}
			}
		})
	}
}

// TestDoctorProbesTools: a go or gopls on PATH that does not run (an
// asdf or rustup-style shim with no toolchain behind it) is reported as
// not running, with the shim's own words, never as ok; working ones are ok.
func TestDoctorProbesTools(t *testing.T) {
	env, ws := initHome(t)
	broken, working := t.TempDir(), t.TempDir()
	for dir, body := range map[string]string{
		broken:  "echo 'No version is set for command go' >&2; exit 126\n",
		working: "echo 'go version go1.99 linux/amd64'\n",
	} {
		for _, name := range []string{"go", "gopls"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		dir  string
		want string
		says string
	}{
		{broken, statusWarn, "does not run (No version is set for command go)"},
		{working, statusOK, ""},
	} {
		// GOBIN and JOULE_LSP_PATH point at the same directory, so that
		// gopls is the fake one whatever the machine has installed.
		e := append(env, "PATH="+tc.dir+":/usr/bin:/bin", "GOBIN="+tc.dir, "GOPATH="+tc.dir, "JOULE_LSP_PATH="+tc.dir)
		r := joule(t, nil, e, "doctor", "--json", "--root", ws, "--timeout", "3s")
		var fs []finding
		if err := json.Unmarshal([]byte(r.stdout), &fs); err != nil {
			t.Fatalf("--json output: %v\n%s%s", err, r.stdout, r.stderr)
		}
		seen := 0
		for _, f := range fs {
			if f.Check != "go" && f.Check != "gopls" {
				continue
			}
			seen++
			if f.Status != tc.want || !strings.Contains(f.Detail, tc.dir) || !strings.Contains(f.Detail, tc.says) {
				t.Errorf("%s with %s: %+v, want %s saying %q", f.Check, tc.dir, f, tc.want, tc.says)
			}
		}
		if seen != 2 {
			t.Errorf("%d go/gopls findings:\n%s", seen, r.stdout)
		}
	}
}

// TestDoctorLSPPool: doctor lists the language servers a running joule
// process keeps (its pool's state file), and not those of a process that
// has ended.
func TestDoctorLSPPool(t *testing.T) {
	env, ws := initHome(t)
	home := strings.TrimPrefix(env[0], "JOULE_HOME=")
	dir := lsp.StateDir(home)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ended := exec.Command("true")
	if err := ended.Run(); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for pid, server := range map[int]string{os.Getpid(): "gopls", ended.Process.Pid: "pyright-langserver"} {
		b, _ := json.Marshal([]lsp.Running{{Server: server, Root: "/w/" + server, PID: 4242, Started: now.Add(-time.Hour), LastUsed: now.Add(-90 * time.Second)}})
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.json", pid)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := joule(t, nil, env, "doctor", "--root", ws, "--timeout", "3s")
	// the seconds depend on how long doctor took to start
	if !regexp.MustCompile(`gopls pid 4242 in /w/gopls, up 1h0m\d+s, idle 1m3\d`).MatchString(r.stdout) {
		t.Errorf("the running gopls is not shown:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout, "pyright") && strings.Contains(r.stdout, "/w/pyright-langserver") {
		t.Errorf("a server of an ended process is shown:\n%s", r.stdout)
	}
}

// outlivedHome is a HOME for doctor's probes: the go command it runs
// (go version) leaves a telemetry child that may still write below
// ~/.config/go after doctor has exited, so the directory is removed at
// the end with retries, not by t.TempDir's single attempt.
func outlivedHome(t *testing.T) string {
	dir, err := os.MkdirTemp("", "joule-doctor-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for i := 0; i < 50 && os.RemoveAll(dir) != nil; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	})
	return dir
}

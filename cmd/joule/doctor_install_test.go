package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/joulehook/joule/energy/proxy"
	"github.com/joulehook/joule/tiers/config"
)

// doctorRun runs joule doctor --json in dir and returns its findings.
func doctorRun(t *testing.T, dir string, env []string) (result, []finding) {
	t.Helper()
	r := jouleIn(t, dir, nil, env, "doctor", "--json", "--timeout", "2s")
	var fs []finding
	if err := json.Unmarshal([]byte(r.stdout), &fs); err != nil {
		t.Fatalf("doctor --json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	return r, fs
}

// suggested are the joule commands in a hint ("…: joule install …; then
// joule serve", "run 'joule proxy' to …"), as printed.
var suggested = regexp.MustCompile(`'joule [^']+'|joule [^;()']+`)

// TestDoctorChecksTheInstalls: joule doctor reports the installs it
// recorded first, each armed or what is left to do, and a correct hook
// set-up is all green, the optional tiers apart and off, not warnings.
// The command it suggests for an install keeps the install's --resident
// (it once dropped it); a resident gate on the proxy's port is moved by
// the command doctor prints. Every command doctor suggested is run: the
// fixes for real, the rest with -h.
func TestDoctorChecksTheInstalls(t *testing.T) {
	f := newFirstHour(t)
	seen := map[string]bool{}
	check := func(fs []finding) {
		for _, x := range fs {
			for _, m := range suggested.FindAllString(x.Hint, -1) {
				seen[strings.Trim(strings.TrimSpace(m), "'")] = true
			}
		}
	}
	if r := jouleIn(t, f.repo, nil, f.env, "init"); r.code != 0 {
		t.Fatal(r)
	}
	_, fs := doctorRun(t, f.repo, f.env)
	check(fs)
	if fs[0].Group != groupInstalls || fs[0].Status != statusWarn || !strings.Contains(fs[0].Hint, "joule install claude-code --project") {
		t.Fatalf("no install: the first finding is %+v", fs[0])
	}
	if r := jouleIn(t, f.sub, nil, f.env, "install", "claude-code", "--project"); r.code != 0 {
		t.Fatal(r)
	}
	// The trust dialog, accepted as Claude Code records it.
	trust, _ := json.Marshal(map[string]any{"projects": map[string]any{f.repo: map[string]any{"hasTrustDialogAccepted": true}}})
	os.WriteFile(filepath.Join(f.home, ".claude.json"), trust, 0o600)
	r, fs := doctorRun(t, f.sub, f.env)
	check(fs)
	_, namespaces := sandboxState()
	for i, x := range fs {
		if i > 0 && fs[i-1].Group != x.Group && x.Group == groupInstalls {
			t.Errorf("installs are not first: %+v", fs)
		}
		if x.Status == statusFail || x.Status == statusWarn && !(x.Check == "sandbox" && !namespaces) {
			t.Errorf("a correct hook set-up is not all green: %+v", x)
		}
		if x.Group == groupOptional && x.Status == statusWarn {
			t.Errorf("an optional piece warns: %+v", x)
		}
	}
	if r.code != 0 || fs[0].Check != "install" || !strings.Contains(fs[0].Detail, "claude-code --project "+f.repo+": armed") {
		t.Fatalf("armed install: exit %d, %+v", r.code, fs[0])
	}

	// Resident and --no-contain: the way to contain keeps --resident.
	addr := freeAddr(t)
	if r := jouleIn(t, f.repo, nil, f.env, "install", "claude-code", "--project", "--resident", "--no-contain", "--addr", addr); r.code != 0 {
		t.Fatal(r)
	}
	r, fs = doctorRun(t, f.repo, f.env)
	check(fs)
	var fix string
	for _, x := range fs {
		if x.Check == "install" && x.Status == statusWarn {
			fix, _ = strings.CutPrefix(x.Hint, "to contain them: ")
		}
		if x.Check == "install" && x.Status == statusFail && !strings.Contains(x.Detail, "joule serve") {
			t.Errorf("resident install without joule serve: %+v", x)
		}
	}
	if r.code != 1 || fix != "joule install claude-code --project "+f.repo+" --resident" {
		t.Fatalf("doctor on a resident --no-contain install: exit %d, fix %q\n%+v", r.code, fix, fs)
	}
	if r := jouleIn(t, f.repo, nil, f.env, strings.Fields(fix)[1:]...); r.code != 0 {
		t.Fatalf("%s: %+v", fix, r)
	}
	local, _ := os.ReadFile(filepath.Join(f.repo, ".claude", "settings.local.json"))
	if !strings.Contains(string(local), addr+"/hooks/claude-code/contain") {
		t.Fatalf("%s did not keep the install resident and contain it:\n%s", fix, local)
	}
	startServe(t, f.env)
	if r, fs = doctorRun(t, f.repo, f.env); r.code != 0 {
		t.Fatalf("resident, contained, joule serve running: exit %d\n%+v", r.code, fs)
	}
	check(fs)

	// A resident gate left on the proxy's port (serve.json from before
	// they had ports of their own) is moved by the command printed.
	home := filepath.Join(f.home, ".local", "share", "joule")
	cfg, err := config.LoadServe(home)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr = proxy.DefaultListen
	config.SaveServe(home, cfg)
	_, fs = doctorRun(t, f.repo, f.env)
	check(fs)
	fix = ""
	for _, x := range fs {
		if strings.Contains(x.Detail, "joule proxy's default port") {
			fix = suggested.FindString(x.Hint)
		}
	}
	if !strings.Contains(fix, "--resident --addr "+config.DefaultServeAddr) {
		t.Fatalf("no move off the proxy's port: %+v", fs)
	}
	if r := jouleIn(t, f.repo, nil, f.env, strings.Fields(fix)[1:]...); r.code != 0 {
		t.Fatalf("%s: %+v", fix, r)
	}
	if cfg, _ := config.LoadServe(home); cfg.Addr != config.DefaultServeAddr {
		t.Fatalf("after %s serve.json says %s", fix, cfg.Addr)
	}

	// Everything else doctor suggested parses as printed.
	for line := range seen {
		words := strings.Fields(line)
		if len(words) < 2 || regexp.MustCompile(`\b[A-Z]{2,}\b`).MatchString(line) {
			continue // a template: PORT, CMD, HOST stand for what the user picks
		}
		r := jouleIn(t, f.repo, nil, f.env, append(words[1:], "-h")...)
		if r.code != 0 || !strings.Contains(r.stdout, "usage: joule") {
			t.Errorf("doctor suggests %q, which joule does not take: %+v", line, r)
		}
	}
	t.Logf("suggested: %v", seen)
	if len(seen) < 4 {
		t.Errorf("doctor suggested only %v", seen)
	}
}

package codex

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTrustHash checks joule's hash against the ones the real Codex
// 0.169.0 reported (codex app-server, hooks/list) for these handlers.
func TestTrustHash(t *testing.T) {
	h := map[string]any{"type": "command", "command": "/tmp/joule-codex-e2e-3654479864/joule-hook codex", "timeout": 30.0, "statusMessage": "joule gate"}
	for _, c := range []struct{ event, want string }{
		{PreToolUse, "sha256:33e172220a4646fa690500cc42d81eee65c6afdb861b264224f6922afb86f01c"},
		{PermissionRequest, "sha256:b915673f521b1b0af6b0b887b83a447d539061f212fcf02112529e1830c6dcf6"},
	} {
		got, err := TrustHash(c.event, ".*", h)
		if err != nil || got != c.want {
			t.Errorf("%s: %s, %v; Codex says %s", c.event, got, err, c.want)
		}
	}
	// hooks.json as joule reads it back (numbers as json.Number) hashes
	// the same.
	h["timeout"] = json.Number("30")
	if got, _ := TrustHash(PreToolUse, ".*", h); got != "sha256:33e172220a4646fa690500cc42d81eee65c6afdb861b264224f6922afb86f01c" {
		t.Errorf("json.Number timeout: %s", got)
	}
	if _, err := TrustHash(PreToolUse, ".*", map[string]any{"type": "prompt"}); err == nil {
		t.Error("a prompt handler has no command hash")
	}
	if got := HookKey("/p/.codex/hooks.json", PermissionRequest, 2, 0); got != "/p/.codex/hooks.json:permission_request:2:0" {
		t.Error(got)
	}
}

func TestPlanTrust(t *testing.T) {
	ownP := func(table string) bool { return strings.Contains(table, `"/p`) }
	want := []trustEntry{
		{table: "projects." + tomlQuote("/p"), key: "trust_level", value: "trusted"},
		{table: "hooks.state." + tomlQuote("/p/.codex/hooks.json:pre_tool_use:0:0"), key: "trusted_hash", value: "sha256:new"},
	}
	for _, c := range []struct{ name, before, want string }{
		{"empty", "", trustBegin + "\n[projects.\"/p\"]\ntrust_level = \"trusted\"\n[hooks.state.\"/p/.codex/hooks.json:pre_tool_use:0:0\"]\ntrusted_hash = \"sha256:new\"\n" + trustEnd + "\n"},
		{"codex wrote both, one stale", "# mine\n[projects.\"/p\"]\ntrust_level = \"untrusted\"\n\n[hooks.state.\"/p/.codex/hooks.json:pre_tool_use:0:0\"]\nenabled = true\ntrusted_hash = \"sha256:old\"\n",
			"# mine\n[projects.\"/p\"]\ntrust_level = \"trusted\"\n\n[hooks.state.\"/p/.codex/hooks.json:pre_tool_use:0:0\"]\nenabled = true\ntrusted_hash = \"sha256:new\"\n"},
		{"header without the key", "[projects.\"/p\"]\n", "[projects.\"/p\"]\ntrust_level = \"trusted\"\n\n" + trustBegin + "\n[hooks.state.\"/p/.codex/hooks.json:pre_tool_use:0:0\"]\ntrusted_hash = \"sha256:new\"\n" + trustEnd + "\n"},
	} {
		got, err := planTrust([]byte(c.before), "config.toml", want, ownP)
		if err != nil || string(got) != c.want {
			t.Errorf("%s: %v\n%s\nwant\n%s", c.name, err, got, c.want)
			continue
		}
		again, err := planTrust(got, "config.toml", want, ownP)
		if err != nil || string(again) != string(got) {
			t.Errorf("%s: not idempotent: %v\n%s", c.name, err, again)
		}
	}
	// Uninstall (nothing wanted) takes joule's block out and nothing else.
	got, _ := planTrust([]byte("a = 1\n\n"+trustBegin+"\n[projects.\"/p\"]\ntrust_level = \"trusted\"\n"+trustEnd+"\n"), "config.toml", nil, ownP)
	if string(got) != "a = 1\n" {
		t.Errorf("uninstall left %q", got)
	}
	// Another project's entries in the block stay, on install and on
	// uninstall of this one.
	other := trustBegin + "\n[projects.\"/q\"]\ntrust_level = \"trusted\"\n" + trustEnd + "\n"
	got, err := planTrust([]byte(other), "config.toml", want, ownP)
	if err != nil || !strings.Contains(string(got), `[projects."/q"]`) || !strings.Contains(string(got), `[projects."/p"]`) {
		t.Errorf("install dropped another project's trust: %v\n%s", err, got)
	}
	got, _ = planTrust(got, "config.toml", nil, ownP)
	if string(got) != other {
		t.Errorf("uninstall of /p left:\n%s", got)
	}
	// A table Codex would read but joule cannot find a header line for is
	// refused with the line to write, not guessed.
	if _, err := planTrust([]byte("projects = { \"/p\" = { trust_level = \"untrusted\" } }\n"), "config.toml", want, ownP); err == nil {
		t.Error("an inline projects table was edited")
	}
	if _, err := planTrust([]byte("[x\n"), "config.toml", want, ownP); err == nil {
		t.Error("invalid TOML was edited")
	}
}

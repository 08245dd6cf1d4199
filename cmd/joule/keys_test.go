package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReceiptsFromTwoMachines: two machines, each with its own key, seal
// into one shared store and one session. Each verifies the other's
// receipts once it trusts the other's key (the issuers file), and until
// then says exactly whose receipts it cannot verify.
func TestReceiptsFromTwoMachines(t *testing.T) {
	envA, ws := initHome(t)
	var homeA string
	for _, kv := range envA {
		if v, ok := strings.CutPrefix(kv, "JOULE_HOME="); ok {
			homeA = v
		}
	}
	homeB := filepath.Join(filepath.Dir(homeA), "home-b")
	envB := []string{"JOULE_HOME=" + homeB, "JOULE_STORE=" + filepath.Join(homeA, "joule.db"), envA[1]}
	if r := joule(t, nil, envB, "keygen", "--steward", "b.example"); r.code != 0 {
		t.Fatalf("keygen: %+v", r)
	}
	// Trusting a key is a change of trust state: a receipt in the home's
	// own chain, then the issuers file.
	trust := func(env []string, pubOf string) {
		pub, err := os.ReadFile(filepath.Join(pubOf, "steward.pub"))
		if err != nil {
			t.Fatal(err)
		}
		if r := joule(t, nil, env, "trust", "add-issuer", strings.TrimSpace(string(pub))); r.code != 0 {
			t.Fatalf("trust add-issuer: %+v", r)
		}
	}
	trust(envB, homeA) // B honours A's team grant
	event := fmt.Sprintf(`{"session_id":"shared","tool":"Bash","input":{"command":"go test ./..."},"cwd":%q}`, ws)
	for i, env := range [][]string{envA, envB, envA, envB} {
		if d := gateOnce(t, env, event); d.Decision != "allow" || d.Sequence != uint64(i+1) {
			t.Fatalf("decision %d: %+v", i+1, d)
		}
	}
	if r := joule(t, nil, envB, "receipts", "verify", "shared"); r.code != 0 || !strings.Contains(r.stdout, "4 receipts, chain intact") {
		t.Fatalf("B trusts A, yet: %+v", r)
	}
	r := joule(t, nil, envA, "receipts", "verify", "shared")
	if r.code == 0 || !strings.Contains(r.stdout, `"b.example"`) {
		t.Fatalf("A does not trust B, yet: %+v", r)
	}
	trust(envA, homeB)
	if r := joule(t, nil, envA, "receipts", "verify", "shared"); r.code != 0 {
		t.Fatalf("A trusts B now, yet: %+v", r)
	}
	if r := joule(t, nil, envA, "receipts", "show", "shared", "2"); r.code != 0 || !strings.Contains(r.stdout, `"verified": true`) || !strings.Contains(r.stdout, `"steward": "b.example"`) {
		t.Fatalf("show: %+v", r)
	}
}

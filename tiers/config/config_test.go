package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/identity"
)

// Two witnesses' cosignature keys (type 0x04), made with core/witness.
const (
	testWitnessKey  = "w.test/1+5407741e+BE3CIVAJ0Jz/Umhw3w+gcjLEQjxfvcttXn0YcDeKy3XZ"
	testWitnessKey2 = "w2.test+5b49000e+BFaoM5DF4sbhyER5paCL5E26YL1KD9GeVVSZSSRN7irY"
)

// A steward's verifier key, as a team administrator's.
const testAdminKey = "joule.test+65c71855+AX9IGY909SJoUmAbc7vJAveoptNkQbgJwcqQ+ugb7qOh"

func testAdminPublic() core.PublicKey {
	k, _, err := identity.ParsePublicKey(testAdminKey)
	if err != nil {
		panic(err)
	}
	return k
}

func TestParse(t *testing.T) {
	home := "/home/u/.joule"
	for _, tt := range []struct {
		name, in string
		want     *Config
		err      string // a part of the error, when it must fail
	}{
		{"empty object", `{}`, &Config{Costs: gate.Costs{}}, ""},
		{"null", `null`, nil, "the file holds a JSON null; want an object"},
		{"everything", `{"costs":{"Bash":"50mJ","Read":"1J"},"lock_timeout":"2s","tiers":{"l0":true},"store":"team.db","exec_fallback":"unconfined",
			"witness":{"files":["w/cp","/abs/../cp"],"command":["witness-cmd","-x"],"timeout":"5s","sync":true}}`,
			&Config{Costs: gate.Costs{"Bash": 50_000, "Read": 1_000_000}, LockTimeout: 2 * time.Second, Tiers: json.RawMessage(`{"l0":true}`),
				Store: "team.db", ExecFallback: "unconfined",
				Witness: Witness{Files: []string{home + "/w/cp", "/cp"}, Command: []string{"witness-cmd", "-x"}, Timeout: 5 * time.Second, Sync: true}}, ""},
		{"empty file", "  \n", nil, "the file is empty; want a JSON object"},
		{"an array", `[]`, nil, "the file holds a JSON array; want an object"},
		{"syntax", "{\n  \"store\": \"x\",\n}", nil, "line 3, column 1: invalid character '}'"},
		{"trailing data", `{} {}`, nil, "invalid character '{' after top-level value"},
		{"unknown key", `{"stor":"x"}`, nil, "stor: unknown field (known: costs, exec_fallback, lock_timeout, store, team, tiers, witness)"},
		{"team admins", `{"team":{"admins":["` + testAdminKey + `"]}}`,
			&Config{Costs: gate.Costs{}, TeamAdmins: grant.Trust{"joule.test": testAdminPublic()}, TeamAdminLines: []string{testAdminKey}}, ""},
		{"team without admins", `{"team":{"admins":[]}}`, nil, "team.admins: want the verifier key of at least one administrator"},
		{"team admin not a key", `{"team":{"admins":["alice"]}}`, nil, "team.admins[0]: want a signed-note verifier key"},
		{"key in another case", `{"Store":"x"}`, nil, "Store: unknown field"},
		{"unknown witness key", `{"witness":{"file":["x"]}}`, nil, "witness.file: unknown field (known: command, files, quorum, sync, timeout, witnesses)"},
		{"witnesses", `{"witness":{"witnesses":[{"name":"w.test/1","url":"http://127.0.0.1:7380","vkey":"` + testWitnessKey + `"},{"url":"https://w2.test/","vkey":"` + testWitnessKey2 + `"}],"quorum":2}}`,
			&Config{Costs: gate.Costs{}, Witness: Witness{Witnesses: []Cosigner{{"w.test/1", "http://127.0.0.1:7380", testWitnessKey}, {"w2.test", "https://w2.test/", testWitnessKey2}}, Quorum: 2}}, ""},
		{"witness without a url", `{"witness":{"witnesses":[{"vkey":"` + testWitnessKey + `"}]}}`, nil, "witness.witnesses[0]: witness URL \"\": want http:// or https://"},
		{"witness with the log's kind of key", `{"witness":{"witnesses":[{"url":"http://w","vkey":"joule.test+65c71855+AX9IGY909SJoUmAbc7vJAveoptNkQbgJwcqQ+ugb7qOh"}]}}`, nil, "witness.witnesses[0]: witness key joule.test: a plain Ed25519 note key"},
		{"witness name not its key's", `{"witness":{"witnesses":[{"name":"other","url":"http://w","vkey":"` + testWitnessKey + `"}]}}`, nil, `witness.witnesses[0].name "other": its vkey names it "w.test/1"`},
		{"witness twice", `{"witness":{"witnesses":[{"url":"http://a","vkey":"` + testWitnessKey + `"},{"url":"http://b","vkey":"` + testWitnessKey + `"}]}}`, nil, "witness.witnesses[1]: w.test/1 is listed twice"},
		{"quorum above the witnesses", `{"witness":{"witnesses":[{"url":"http://a","vkey":"` + testWitnessKey + `"}],"quorum":2}}`, nil, "witness.quorum 2: want 0 to 1"},
		{"negative quorum", `{"witness":{"quorum":-1}}`, nil, "witness.quorum -1: want 0 to 0"},
		{"unknown key of a witness", `{"witness":{"witnesses":[{"key":"x"}]}}`, nil, "witness.witnesses[0].key: unknown field (known: name, url, vkey)"},
		{"cost of the wrong type", `{"costs":{"Bash":50}}`, nil, "costs.Bash: a JSON number; want a string"},
		{"costs not an object", `{"costs":"50mJ"}`, nil, "costs: a JSON string; want an object"},
		{"files not an array", `{"witness":{"files":"x"}}`, nil, "witness.files: a JSON string; want an array of strings"},
		{"sync not a boolean", `{"witness":{"sync":"yes"}}`, nil, "witness.sync: a JSON string; want true or false"},
		{"bad cost", `{"costs":{"Bash":"50 parsecs"}}`, nil, "costs.Bash: "},
		{"bad lock timeout", `{"lock_timeout":"soon"}`, nil, `lock_timeout "soon": want a positive duration`},
		{"negative lock timeout", `{"lock_timeout":"-1s"}`, nil, `lock_timeout "-1s": want a positive duration`},
		{"bad fallback", `{"exec_fallback":"maybe"}`, nil, `exec_fallback "maybe": want "refuse" or "unconfined"`},
		{"empty witness file", `{"witness":{"files":["a",""]}}`, nil, "witness.files[1]: an empty path"},
		{"empty witness program", `{"witness":{"command":[""]}}`, nil, "witness.command[0]: an empty program name"},
		{"bad witness timeout", `{"witness":{"timeout":"0s"}}`, nil, `witness.timeout "0s": want a positive duration`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.in), home)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Parse(%s) = %+v, %v; want an error with %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%s): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Parse(%s) =\n%+v, want\n%+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	home := t.TempDir()
	if c, err := Load(home); err != nil || !reflect.DeepEqual(c, &Config{}) {
		t.Fatalf("Load without a file = %+v, %v; want the defaults", c, err)
	}
	if err := os.WriteFile(filepath.Join(home, File), []byte(`{"lock_timeout":"soon"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(home, File)
	if _, err := Load(home); err == nil || !strings.HasPrefix(err.Error(), path+": lock_timeout") {
		t.Fatalf("Load of a bad file = %v; want an error naming %s and the key", err, path)
	}
	if err := os.Chmod(path, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(path); err == nil {
		t.Skip("running as a user who reads any file")
	}
	if _, err := Load(home); err == nil {
		t.Fatal("Load of an unreadable file: no error")
	}
}

// FuzzParse: any text either parses or fails with an error, never a panic,
// and what parses has only keys the file format knows.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{}`, `{"costs":{"Bash":"5mJ"}}`, `{"witness":{"files":["a"],"timeout":"1s"}}`, `{"tiers":{"l2":{}}}`, `[`, `{"stor":1}`, `null`} {
		f.Add([]byte(s))
	}
	known := map[string]bool{"costs": true, "lock_timeout": true, "tiers": true, "store": true, "exec_fallback": true, "witness": true}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "/home/u/.joule")
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("Parse accepted text that is not a JSON object: %v", err)
		}
		for k := range m {
			if !known[k] {
				t.Fatalf("Parse accepted the unknown key %q", k)
			}
		}
		for _, p := range c.Witness.Files {
			if !filepath.IsAbs(p) {
				t.Fatalf("witness file %q is not absolute", p)
			}
		}
	})
}

// TestTrustDigestTeam: the team's administrators are a trust setting (a
// change takes a receipt), and a home without a team keeps the digest it
// had before there were teams.
func TestTrustDigestTeam(t *testing.T) {
	none, err := Parse([]byte(`{}`), "/h")
	if err != nil {
		t.Fatal(err)
	}
	withTeam, err := Parse([]byte(`{"team":{"admins":["`+testAdminKey+`"]}}`), "/h")
	if err != nil {
		t.Fatal(err)
	}
	if none.TrustDigest() != DefaultTrustDigest() {
		t.Error("a home without a team has another digest than the default")
	}
	if withTeam.TrustDigest() == none.TrustDigest() {
		t.Error("the team's administrators do not change the trust digest")
	}
}

// TestTrustDigestLockTimeout: lock_timeout is a trust setting (raised, a
// decision waits past a host's hook timeout), and a home without it keeps
// the digest it had before it was covered.
func TestTrustDigestLockTimeout(t *testing.T) {
	if got := DefaultTrustDigest().String(); got != "zIaT_nwdXO23lIfAH2eAOw8Uqq5iaq3WpgwoSq-rfpo" {
		t.Errorf("the default digest changed to %s: every home would need 'joule trust accept'", got)
	}
	digests := map[string]bool{}
	for _, cfg := range []string{`{}`, `{"lock_timeout":"2s"}`, `{"lock_timeout":"10m"}`} {
		c, err := Parse([]byte(cfg), "/h")
		if err != nil {
			t.Fatal(err)
		}
		d := c.TrustDigest().String()
		if digests[d] {
			t.Errorf("%s: the same digest as another lock_timeout", cfg)
		}
		digests[d] = true
	}
}

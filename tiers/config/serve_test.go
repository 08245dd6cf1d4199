package config

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseServe(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		want     Serve
		err      string
	}{
		{"both", `{"addr":"127.0.0.1:7411","token":"abc"}`, Serve{Addr: "127.0.0.1:7411", Token: "abc"}, ""},
		{"no address", `{"token":"abc"}`, Serve{Token: "abc"}, ""},
		{"nulls", `{"addr":null,"token":null}`, Serve{}, ""},
		{"unknown key", `{"addr":"127.0.0.1:1","tokn":"abc"}`, Serve{}, "tokn: unknown field (known: addr, token)"},
		{"key in another case", `{"Token":"abc"}`, Serve{}, "Token: unknown field"},
		{"token as a number", `{"token":42}`, Serve{}, "token: a JSON number; want a string"},
		{"an array", `[]`, Serve{}, "the file holds a JSON array; want an object"},
		{"empty", ``, Serve{}, "the file is empty"},
		{"syntax", "{\n\"addr\": \"x\",\n}", Serve{}, "line 3, column 1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseServe([]byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseServe(%s) = %+v, %v; want an error with %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseServe(%s) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestLoadServe(t *testing.T) {
	home := t.TempDir()
	if s, err := LoadServe(home); !errors.Is(err, os.ErrNotExist) || s != (Serve{}) {
		t.Fatalf("LoadServe without a file = %+v, %v; want os.ErrNotExist", s, err)
	}
	path := filepath.Join(home, ServeFile)
	if err := os.WriteFile(path, []byte(`{"addr":"127.0.0.1:1","token":"t","extra":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadServe(home); err == nil || !strings.HasPrefix(err.Error(), path+": extra: unknown field") || errors.Is(err, os.ErrNotExist) {
		t.Fatalf("LoadServe of a bad file = %v; want an error naming %s and the key", err, path)
	}
}

// TestResidentServe follows serve.json through resident installs: the
// first makes a token and takes the default address, a second changes
// nothing, a new address keeps the token, and a broken file stops it.
func TestResidentServe(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home") // SaveServe creates it
	first, changed, err := ResidentServe(home, "")
	if err != nil || !changed || first.Addr != DefaultServeAddr {
		t.Fatalf("first install: %+v %v %v", first, changed, err)
	}
	if tok, err := base64.RawURLEncoding.DecodeString(first.Token); err != nil || len(tok) != 32 {
		t.Fatalf("token %q: %d bytes, %v; want 32 random bytes", first.Token, len(tok), err)
	}
	if other, _, _ := ResidentServe(home, ""); other.Token == first.Token {
		t.Fatal("two homes without a serve.json got the same token")
	}
	if err := SaveServe(home, first); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(home, ServeFile)
	b, err := os.ReadFile(path)
	if want := "{\n  \"addr\": \"" + DefaultServeAddr + "\",\n  \"token\": \"" + first.Token + "\"\n}\n"; err != nil || string(b) != want {
		t.Fatalf("serve.json:\n%s\nwant:\n%s", b, want)
	}
	for p, want := range map[string]os.FileMode{home: 0o700, path: 0o600} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %v", p, st.Mode().Perm(), err, want)
		}
	}
	for _, tt := range []struct {
		addr    string
		want    Serve
		changed bool
	}{
		{"", first, false},
		{DefaultServeAddr, first, false},
		{"127.0.0.1:7500", Serve{Addr: "127.0.0.1:7500", Token: first.Token}, true},
	} {
		got, changed, err := ResidentServe(home, tt.addr)
		if err != nil || got != tt.want || changed != tt.changed {
			t.Errorf("ResidentServe(%q) = %+v, %v, %v; want %+v, %v", tt.addr, got, changed, err, tt.want, tt.changed)
		}
	}
	if err := os.WriteFile(path, []byte(`{"adr":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ResidentServe(home, ""); err == nil || !strings.Contains(err.Error(), path+": adr: unknown field") {
		t.Fatalf("ResidentServe over a broken file = %v; want its error", err)
	}
}

// FuzzParseServe: any text parses or fails, never panics, and what parses
// is a JSON object with no key but addr and token.
func FuzzParseServe(f *testing.F) {
	for _, s := range []string{`{}`, `{"addr":"127.0.0.1:7411","token":"t"}`, `{"token":1}`, `[`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := ParseServe(data); err != nil {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("accepted text that is not a JSON object: %v", err)
		}
		for k := range m {
			if k != "addr" && k != "token" {
				t.Fatalf("accepted the unknown key %q", k)
			}
		}
	})
}

package config

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulehook/joule/core/store"
)

func TestStoreLocation(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	tests := []struct {
		name, env, config string
		want, wantErr     string
	}{
		{"default", "", "", filepath.Join(home, store.DefaultFile), ""},
		{"config path", "", "team.db", filepath.Join(home, "team.db"), ""},
		{"config absolute", "", "/var/lib/joule/joule.db", "/var/lib/joule/joule.db", ""},
		{"config url", "", "postgres://joule:pw@db:5432/joule", "postgres://joule:pw@db:5432/joule", ""},
		{"env wins", "postgresql://u@h/d", "team.db", "postgresql://u@h/d", ""},
		{"env upper case scheme", "POSTGRES://u@h/d", "", "POSTGRES://u@h/d", ""},
		{"env path", "/tmp/x.db", "", "/tmp/x.db", ""},
		{"other scheme", "mysql://u:hunter2@h/d", "", "", `"mysql://" URL is not a store`},
		{"other scheme in config", "", "sqlite://x", "", "config.json: store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(StoreEnv, tt.env)
			got, err := StoreLocation(home, &Config{Store: tt.config})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("error shows the password: %v", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("StoreLocation = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// FuzzStoreLocation: any $JOULE_STORE either resolves or fails with an
// error that does not repeat what follows the scheme (a password).
func FuzzStoreLocation(f *testing.F) {
	for _, s := range []string{"", "joule.db", "/abs/joule.db", "postgres://u:p@h/d", "x://secret", "://", " postgres://a "} {
		f.Add(s)
	}
	home := "/home/u/.local/share/joule"
	f.Fuzz(func(t *testing.T, loc string) {
		if strings.ContainsRune(loc, 0) {
			return // no environment variable holds a NUL
		}
		t.Setenv(StoreEnv, loc)
		got, err := StoreLocation(home, nil)
		if err != nil {
			if i := strings.Index(loc, "://"); i >= 0 && len(loc) > i+3 {
				rest := loc[i+3:]
				if len(rest) >= 4 && strings.Contains(err.Error(), rest) {
					t.Errorf("error repeats the location after the scheme: %v", err)
				}
			}
			return
		}
		if got == "" {
			t.Error("empty location without an error")
		}
	})
}

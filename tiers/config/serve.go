package config

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ServeFile holds joule serve's address and bearer token, in $JOULE_HOME
// (0600); 'joule install HOST --resident' writes it.
const ServeFile = "serve.json"

// DefaultServeAddr is where joule serve listens unless told otherwise: a
// port of its own, apart from joule proxy's (127.0.0.1:7411), so that
// both run at once.
const DefaultServeAddr = "127.0.0.1:7412"

// Serve is serve.json, parsed: where joule serve listens and the token
// every request to it must carry.
type Serve struct {
	Addr  string `json:"addr"`
	Token string `json:"token"`
}

// LoadServe reads home's serve.json. Unlike the other files, a missing one
// is an error (one os.ErrNotExist matches): without it there is no token
// to check requests against.
func LoadServe(home string) (Serve, error) {
	path := filepath.Join(home, ServeFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return Serve{}, err
	}
	s, err := ParseServe(b)
	if err != nil {
		return Serve{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ParseServe reads the text of a serve.json.
func ParseServe(data []byte) (Serve, error) {
	var s Serve
	if err := decode(data, &s); err != nil {
		return Serve{}, err
	}
	return s, nil
}

// ResidentServe is the serve.json a resident install wants: home's, with
// addr in place of its address when addr is not "" (DefaultServeAddr when
// neither says one) and a new random token when it has none. A token once
// made is kept, so installs stay idempotent. changed says it differs from
// the file (or there is none), for SaveServe. The address is not checked:
// the caller decides which ones joule serve may listen on.
func ResidentServe(home, addr string) (s Serve, changed bool, err error) {
	s, err = LoadServe(home)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return s, false, err
	}
	if s.Token == "" {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return s, false, err
		}
		s.Token, changed = base64.RawURLEncoding.EncodeToString(b), true
	}
	if addr != "" && addr != s.Addr {
		s.Addr, changed = addr, true
	}
	if s.Addr == "" {
		s.Addr, changed = DefaultServeAddr, true
	}
	return s, changed, nil
}

// SaveServe writes s as home's serve.json (0600), creating home (0700).
func SaveServe(home string, s Serve) error {
	b, _ := json.MarshalIndent(s, "", "  ")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(home, ServeFile), append(b, '\n'), 0o600)
}

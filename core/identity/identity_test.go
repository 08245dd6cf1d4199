package identity

import (
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

func TestCreateLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "home")
	id, err := Create(dir, "ci.joule.example", false)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("key mode %#o, want 0600", info.Mode().Perm())
	}
	if d, _ := os.Stat(dir); d.Mode().Perm() != 0o700 {
		t.Fatalf("home mode %#o, want 0700", d.Mode().Perm())
	}
	back, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if back.Steward != id.Steward || !back.Key.Equal(id.Key) || back.VerifierKey != id.VerifierKey {
		t.Fatal("loaded identity differs")
	}
	// The same key signs notes that the published verifier key accepts.
	msg := []byte("joule checkpoint\n1\nAAAA\n")
	signed, err := note.Sign(&note.Note{Text: string(msg)}, back.NoteSigner)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := os.ReadFile(filepath.Join(dir, PubKeyFile))
	v, err := note.NewVerifier(strings.TrimSpace(string(pub)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(signed, note.VerifierList(v)); err != nil {
		t.Fatal(err)
	}
	// And the raw key parses from either form.
	raw, name, err := ParsePublicKey(string(pub))
	if err != nil || name != id.Steward || raw != id.Public() {
		t.Fatalf("ParsePublicKey(note) = %v %q %v", raw, name, err)
	}
	raw2, _, err := ParsePublicKey(id.Public().String())
	if err != nil || raw2 != id.Public() {
		t.Fatal(err)
	}
	if !ed25519.Verify(raw[:], []byte("x"), ed25519.Sign(back.Key, []byte("x"))) {
		t.Fatal("raw key does not verify the private key's signature")
	}
}

func TestCreateRefusesOverwrite(t *testing.T) {
	dir := t.TempDir()
	if _, err := Create(dir, "a", false); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(dir, "b", false); !errors.Is(err, ErrExists) {
		t.Fatalf("got %v, want ErrExists", err)
	}
	id, err := Create(dir, "b", true)
	if err != nil || id.Steward != "b" {
		t.Fatalf("force: %v", err)
	}
}

func TestLoadRefusesReadableKey(t *testing.T) {
	dir := t.TempDir()
	if _, err := Create(dir, "a", false); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o644, 0o660} {
		os.Chmod(filepath.Join(dir, KeyFile), mode)
		_, err := Load(dir)
		if err == nil || !strings.Contains(err.Error(), "chmod 600") {
			t.Fatalf("mode %#o: got %v", mode, err)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); !errors.Is(err, ErrNoKey) {
		t.Fatalf("empty home: %v", err)
	}
	secret := "PRIVATE+KEY+a+00000000+AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	for _, content := range []string{"", "garbage", secret} {
		os.WriteFile(filepath.Join(dir, KeyFile), []byte(content), 0o600)
		_, err := Load(dir)
		if err == nil {
			t.Fatalf("%q accepted", content)
		}
		if strings.Contains(err.Error(), "AQAAAA") {
			t.Fatal("error message leaks key material")
		}
	}
}

func TestValidSteward(t *testing.T) {
	for _, name := range []string{"", "a b", "a+b", "a\nb", strings.Repeat("x", 257), "\xff"} {
		if ValidSteward(name) == nil {
			t.Errorf("ValidSteward(%q) accepted", name)
		}
	}
	for _, name := range []string{"joule@host", "steward-01.joule.example", "ü"} {
		if err := ValidSteward(name); err != nil {
			t.Errorf("ValidSteward(%q) = %v", name, err)
		}
	}
}

func TestHome(t *testing.T) {
	t.Setenv("JOULE_HOME", "/x/joule")
	if h, _ := Home(); h != "/x/joule" {
		t.Fatal(h)
	}
	t.Setenv("JOULE_HOME", "")
	t.Setenv("XDG_DATA_HOME", "/data")
	if h, _ := Home(); h != "/data/joule" {
		t.Fatal(h)
	}
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "/home/u")
	if h, _ := Home(); h != "/home/u/.local/share/joule" {
		t.Fatal(h)
	}
}

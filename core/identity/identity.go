// Package identity manages an endpoint's identity: its steward name and the
// Ed25519 key that signs its receipts, kept in $JOULE_HOME.
//
// The key files use the signed-note key encoding of golang.org/x/mod/sumdb/note
// (C2SP signed-note), so the same key signs receipts and log checkpoints:
// steward.key holds "PRIVATE+KEY+<steward>+<hash>+<key>" (mode 0600) and
// steward.pub holds "<steward>+<hash>+<key>".
package identity

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/joulehook/joule/core"

	"github.com/joulehook/joule/core/home"
)

// File names inside $JOULE_HOME.
const (
	KeyFile    = "steward.key"
	PubKeyFile = "steward.pub"
)

// Identity is a loaded endpoint identity.
type Identity struct {
	Steward string
	Key     ed25519.PrivateKey
	// NoteSigner signs log checkpoints with the same key.
	NoteSigner note.Signer
	// VerifierKey is the signed-note verifier key text ("<steward>+<hash>+<key>").
	VerifierKey string
}

// Public returns the raw Ed25519 public key.
func (id *Identity) Public() core.PublicKey {
	var k core.PublicKey
	copy(k[:], id.Key.Public().(ed25519.PublicKey))
	return k
}

// Sealer returns a receipt sealer for this identity.
func (id *Identity) Sealer() (*core.Sealer, error) { return core.NewSealer(id.Steward, id.Key) }

// Home returns $JOULE_HOME, or $XDG_DATA_HOME/joule, or ~/.local/share/joule.
func Home() (string, error) { return home.Dir() }

// ErrExists is returned by Create when a key is already there.
var ErrExists = errors.New("a key already exists")

// ErrKeyUnusable is what Load's error wraps when the key is there but
// cannot be used: a file group or others may read, or one that does not
// parse.
var ErrKeyUnusable = errors.New("key unusable")

type keyError struct{ msg string }

func (e *keyError) Error() string { return e.msg }
func (e *keyError) Unwrap() error { return ErrKeyUnusable }

// ErrNoKey is returned by Load when $JOULE_HOME holds no key.
var ErrNoKey = errors.New("no key")

// ValidSteward checks a steward name: non-empty, at most 256 bytes, valid
// UTF-8, no white space and no '+' (the signed-note key-name rules).
func ValidSteward(name string) error {
	if name == "" || len(name) > 256 || strings.ContainsAny(name, "+ \t\r\n\v\f") || strings.ContainsFunc(name, func(r rune) bool { return r == '\uFFFD' || r < 0x20 }) {
		return fmt.Errorf("steward name %q is invalid: use 1 to 256 characters with no white space or '+'", name)
	}
	return nil
}

// Create generates a key for steward in dir. It refuses to overwrite an
// existing key unless force is set.
func Create(dir, steward string, force bool) (*Identity, error) {
	if err := ValidSteward(steward); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	keyPath := filepath.Join(dir, KeyFile)
	if _, err := os.Lstat(keyPath); err == nil && !force {
		return nil, fmt.Errorf("%s: %w", keyPath, ErrExists)
	}
	skey, vkey, err := note.GenerateKey(rand.Reader, steward)
	if err != nil {
		return nil, err
	}
	if err := writeAtomic(keyPath, []byte(skey+"\n"), 0o600); err != nil {
		return nil, err
	}
	if err := writeAtomic(filepath.Join(dir, PubKeyFile), []byte(vkey+"\n"), 0o644); err != nil {
		return nil, err
	}
	return parse(skey)
}

// Load reads the identity in dir. A private key file that group or others
// can read is refused.
func Load(dir string) (*Identity, error) {
	keyPath := filepath.Join(dir, KeyFile)
	info, err := os.Stat(keyPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", keyPath, ErrNoKey)
	}
	if err != nil {
		return nil, err
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, &keyError{fmt.Sprintf("private key %s is accessible by group or others (mode %#o); run: chmod 600 %s", keyPath, perm, keyPath)}
	}
	b, err := home.ReadFile(keyPath, 64<<10)
	if errors.Is(err, home.ErrNotRegular) {
		return nil, &keyError{fmt.Sprintf("private key %s is not a regular file; restore it from a backup, or run 'joule keygen' for a new key", keyPath)}
	}
	if err != nil {
		return nil, err
	}
	id, err := parse(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, &keyError{fmt.Sprintf("%s: %v", keyPath, err)}
	}
	return id, nil
}

// parse decodes a signed-note private key. The error never echoes the key.
func parse(skey string) (*Identity, error) {
	signer, err := note.NewSigner(skey)
	if err != nil {
		return nil, errors.New("malformed private key (want a signed-note PRIVATE+KEY line)")
	}
	// PRIVATE+KEY+<name>+<hash>+<base64(alg ‖ seed)>
	// The key's base64 may itself hold '+': split off name and hash only.
	fields := strings.SplitN(strings.TrimPrefix(skey, "PRIVATE+KEY+"), "+", 3)
	raw, err := base64.StdEncoding.DecodeString(fields[len(fields)-1])
	if err != nil || len(raw) != 1+ed25519.SeedSize || raw[0] != 1 {
		return nil, errors.New("malformed private key: not an Ed25519 signed-note key")
	}
	key := ed25519.NewKeyFromSeed(raw[1:])
	vkey, err := note.NewEd25519VerifierKey(signer.Name(), key.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	return &Identity{Steward: signer.Name(), Key: key, NoteSigner: signer, VerifierKey: vkey}, nil
}

// ParsePublicKey accepts a raw Ed25519 public key as unpadded base64url (43
// characters), or a signed-note verifier key "<name>+<hash>+<key>", and
// returns the key and, for the latter, the name it carries.
func ParsePublicKey(s string) (core.PublicKey, string, error) {
	s = strings.TrimSpace(s)
	if len(s) == 43 {
		k, err := core.ParsePublicKey(s)
		return k, "", err
	}
	v, err := note.NewVerifier(s)
	if err != nil {
		return core.PublicKey{}, "", fmt.Errorf("public key: %w", err)
	}
	fields := strings.SplitN(s, "+", 3)
	raw, err := base64.StdEncoding.DecodeString(fields[len(fields)-1])
	if err != nil || len(raw) != 33 || raw[0] != 1 {
		return core.PublicKey{}, "", errors.New("public key: not an Ed25519 signed-note verifier key")
	}
	var k core.PublicKey
	copy(k[:], raw[1:])
	return k, v.Name(), nil
}

// writeAtomic writes data to path through a temporary file in the same
// directory, so a crash never leaves a truncated key.
func writeAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Package witness speaks C2SP's transparency log witness protocol
// (https://c2sp.org/tlog-witness) for joule's receipts log: a Client that
// submits the log's checkpoints to a witness elsewhere and checks the
// cosignatures it returns (store.Cosigner), a Server that is such a
// witness (joule witness serve), the Ed25519 cosignatures both use
// (https://c2sp.org/tlog-cosignature, cosignature/v1), and the offline
// proof of one receipt (https://c2sp.org/tlog-proof).
//
// Only Ed25519 cosignatures (verifier key type 0x04) are spoken: what
// litewitness, the witness joule is tested against, signs. ML-DSA-44
// cosignatures (type 0x06) are refused with an error that says so.
package witness

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"
)

// Verifier key types (c2sp.org/signed-note): the first byte of the key.
const (
	algEd25519     = 0x01 // a plain note signature (the log's key)
	algCosignature = 0x04 // Ed25519 cosignature/v1
	algMLDSA44     = 0x06 // ML-DSA-44 cosignature (not spoken here)
)

// cosignatureSize is a cosignature/v1 signature: a big-endian timestamp,
// then the Ed25519 signature.
const cosignatureSize = 8 + ed25519.SignatureSize

// Verifier checks one witness's Ed25519 cosignatures (cosignature/v1) on
// checkpoint notes. It is a note.Verifier: note.Open with it accepts a
// note whose signature line from the witness is a valid cosignature with
// a timestamp.
type Verifier struct {
	name string
	hash uint32
	key  ed25519.PublicKey
}

var _ note.Verifier = (*Verifier)(nil)

// NewVerifier parses a witness's verifier key, "<name>+<hash>+<key>",
// whose key is type 0x04 (an Ed25519 cosignature key).
func NewVerifier(vkey string) (*Verifier, error) {
	name, hash, key, err := parseVerifierKey(vkey)
	if err != nil {
		return nil, err
	}
	switch {
	case len(key) > 0 && key[0] == algMLDSA44:
		return nil, fmt.Errorf("witness key %s: ML-DSA-44 cosignatures (key type 0x06) are not supported; give the witness's Ed25519 cosignature key (type 0x04)", name)
	case len(key) > 0 && key[0] == algEd25519:
		return nil, fmt.Errorf("witness key %s: a plain Ed25519 note key (type 0x01), not a cosignature key (type 0x04): a witness's key is the one it prints, such as litewitness's \"verifier key\" line", name)
	case len(key) != 1+ed25519.PublicKeySize || key[0] != algCosignature:
		return nil, fmt.Errorf("witness key %s: not an Ed25519 cosignature key (type 0x04, 32 bytes)", name)
	}
	if keyHash(name, key) != hash {
		return nil, fmt.Errorf("witness key %s: its key hash %08x does not match its key", name, hash)
	}
	return &Verifier{name: name, hash: hash, key: ed25519.PublicKey(key[1:])}, nil
}

// parseVerifierKey splits a signed-note verifier key into its parts.
func parseVerifierKey(vkey string) (name string, hash uint32, key []byte, err error) {
	vkey = strings.TrimSpace(vkey)
	parts := strings.SplitN(vkey, "+", 3)
	if len(parts) != 3 {
		return "", 0, nil, fmt.Errorf("witness key %q: want NAME+HASH+KEY", clip(vkey))
	}
	name = parts[0]
	if !validName(name) {
		return "", 0, nil, fmt.Errorf("witness key %q: the name must be non-empty, without spaces or '+'", clip(vkey))
	}
	h, err := strconv.ParseUint(parts[1], 16, 32)
	if err != nil || len(parts[1]) != 8 {
		return "", 0, nil, fmt.Errorf("witness key %s: the hash %q is not 8 hex digits", name, clip(parts[1]))
	}
	key, err = base64.StdEncoding.Strict().DecodeString(parts[2])
	if err != nil || len(key) == 0 {
		return "", 0, nil, fmt.Errorf("witness key %s: the key is not base64", name)
	}
	return name, uint32(h), key, nil
}

// validName is a signed-note key name: non-empty UTF-8 without spaces or
// '+'.
func validName(name string) bool {
	return name != "" && utf8.ValidString(name) && strings.IndexFunc(name, unicode.IsSpace) < 0 && !strings.Contains(name, "+")
}

// keyHash is a signed-note key hash: the first four bytes of
// SHA-256(name || "\n" || key), key starting with its type byte.
func keyHash(name string, key []byte) uint32 {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte("\n"))
	h.Write(key)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

func (v *Verifier) Name() string    { return v.name }
func (v *Verifier) KeyHash() uint32 { return v.hash }

// String is the verifier key, "<name>+<hash>+<key>".
func (v *Verifier) String() string {
	return fmt.Sprintf("%s+%08x+%s", v.name, v.hash, base64.StdEncoding.EncodeToString(append([]byte{algCosignature}, v.key...)))
}

// Verify checks sig, a timestamp and an Ed25519 signature, as a
// cosignature of the note text msg. A zero timestamp is refused: a
// witness's cosignature says when it saw the checkpoint
// (c2sp.org/tlog-witness).
func (v *Verifier) Verify(msg, sig []byte) bool {
	if len(sig) != cosignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig)
	if t == 0 || t > math.MaxInt64 {
		return false
	}
	return ed25519.Verify(v.key, cosignedMessage(t, msg), sig[8:])
}

// cosignedMessage is what a cosignature/v1 signs: a header line, the
// time, then the whole checkpoint text.
func cosignedMessage(t uint64, text []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "cosignature/v1\ntime %d\n", t)
	b.Write(text)
	return b.Bytes()
}

// Signer makes a witness's Ed25519 cosignatures: a note.Signer whose
// signatures carry the time they were made.
type Signer struct {
	v   Verifier
	key ed25519.PrivateKey
	now func() time.Time
}

var _ note.Signer = (*Signer)(nil)

// NewSigner returns the cosigner named name with key.
func NewSigner(name string, key ed25519.PrivateKey, now func() time.Time) (*Signer, error) {
	if !validName(name) {
		return nil, fmt.Errorf("witness name %q: want a non-empty name without spaces or '+', such as example.com/witness", clip(name))
	}
	if now == nil {
		now = time.Now
	}
	pub := key.Public().(ed25519.PublicKey)
	return &Signer{v: Verifier{name: name, hash: keyHash(name, append([]byte{algCosignature}, pub...)), key: pub}, key: key, now: now}, nil
}

func (s *Signer) Name() string    { return s.v.name }
func (s *Signer) KeyHash() uint32 { return s.v.hash }

// Verifier returns the verifier of s's cosignatures.
func (s *Signer) Verifier() *Verifier { v := s.v; return &v }

// Sign cosigns the checkpoint text msg now.
func (s *Signer) Sign(msg []byte) ([]byte, error) {
	t := s.now().Unix()
	if t <= 0 {
		return nil, errors.New("cosign: the clock is before 1970")
	}
	sig := binary.BigEndian.AppendUint64(make([]byte, 0, cosignatureSize), uint64(t))
	return append(sig, ed25519.Sign(s.key, cosignedMessage(uint64(t), msg))...), nil
}

// SignatureTime is the time a cosignature says it was made.
func SignatureTime(sig note.Signature) (time.Time, error) {
	b, err := base64.StdEncoding.DecodeString(sig.Base64)
	if err != nil || len(b) != 4+cosignatureSize {
		return time.Time{}, fmt.Errorf("the signature of %s is not a cosignature/v1", sig.Name)
	}
	t := binary.BigEndian.Uint64(b[4:])
	if t == 0 || t > math.MaxInt64 {
		return time.Time{}, fmt.Errorf("the cosignature of %s has no time", sig.Name)
	}
	return time.Unix(int64(t), 0).UTC(), nil
}

// maxSignatureLines bounds what a witness may answer.
const maxSignatureLines = 100

// ParseSignatures parses a body of note signature lines, each
// "— <name> <base64>\n", as a witness answers add-checkpoint.
func ParseSignatures(body []byte) ([]note.Signature, error) {
	if len(body) == 0 || body[len(body)-1] != '\n' {
		return nil, errors.New("signature lines must end in a newline")
	}
	var sigs []note.Signature
	for _, line := range strings.SplitAfter(string(body[:len(body)-1]), "\n") {
		line = strings.TrimSuffix(line, "\n")
		if len(sigs) == maxSignatureLines {
			return nil, fmt.Errorf("more than %d signature lines", maxSignatureLines)
		}
		rest, ok := strings.CutPrefix(line, "— ")
		if !ok {
			return nil, fmt.Errorf("line %q is not a signature line (\"— NAME SIGNATURE\")", clip(line))
		}
		name, b64, ok := strings.Cut(rest, " ")
		if !ok || !validName(name) {
			return nil, fmt.Errorf("signature line %q: bad key name", clip(line))
		}
		raw, err := base64.StdEncoding.Strict().DecodeString(b64)
		if err != nil || len(raw) < 5 {
			return nil, fmt.Errorf("signature line %q: the signature is not base64 of a key hash and a signature", clip(line))
		}
		sigs = append(sigs, note.Signature{Name: name, Hash: binary.BigEndian.Uint32(raw), Base64: b64})
	}
	return sigs, nil
}

// signatureLine formats sig as a note signature line.
func signatureLine(sig note.Signature) string {
	return "— " + sig.Name + " " + sig.Base64 + "\n"
}

// clip shortens untrusted input quoted in an error.
func clip(s string) string {
	const limit = 64
	if len(s) > limit {
		return s[:limit] + "..."
	}
	return s
}

package core

import (
	"encoding/base64"
	"fmt"
	"sync"

	"lukechampine.com/blake3"
)

// ID is a content address: the BLAKE3-256 digest of an object's canonical
// bytes. In CBOR it is a 32-byte string; as text it is unpadded base64url.
type ID [32]byte

// Sum returns the content address of b.
func Sum(b []byte) (id ID) {
	if len(b) <= sumChunk {
		return blake3.Sum256(b)
	}
	// Given more than a chunk at once, blake3 hashes the subtrees in
	// goroutines that each allocate ~16 kB: for the receipts and envelopes
	// hashed here (a few to tens of kB, a metered call's receipt among
	// them) that costs more CPU than it saves, so b goes in a chunk at a
	// time to a pooled hasher. The digest is the same.
	h := hashers.Get().(*blake3.Hasher)
	defer hashers.Put(h)
	h.Reset()
	for len(b) > 0 {
		n := min(len(b), sumChunk)
		h.Write(b[:n])
		b = b[n:]
	}
	h.Sum(id[:0])
	return id
}

// sumChunk is BLAKE3's chunk length.
const sumChunk = 1024

var hashers = sync.Pool{New: func() any { return blake3.New(32, nil) }}

// b64 is the one base64 form used on the wire: URL alphabet, no padding,
// no non-zero trailing bits.
var b64 = base64.RawURLEncoding.Strict()

// String returns the 43-character base64url form.
func (id ID) String() string { return b64.EncodeToString(id[:]) }

// ParseID parses the 43-character base64url form strictly.
func ParseID(s string) (ID, error) {
	var id ID
	if err := parse32(s, (*[32]byte)(&id)); err != nil {
		return ID{}, fmt.Errorf("content address %q: %w", truncate(s), err)
	}
	return id, nil
}

// MarshalText implements encoding.TextMarshaler for JSON.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler for JSON.
func (id *ID) UnmarshalText(b []byte) error {
	v, err := ParseID(string(b))
	*id = v
	return err
}

// UnmarshalCBOR accepts exactly a 32-byte CBOR byte string.
func (id *ID) UnmarshalCBOR(data []byte) error { return unmarshalBytes32(data, (*[32]byte)(id)) }

// PublicKey is a raw Ed25519 verifying key, carried in CBOR as a 32-byte
// string and as base64url in JSON.
type PublicKey [32]byte

func (k PublicKey) String() string { return b64.EncodeToString(k[:]) }

// ParsePublicKey parses the unpadded base64url form of a raw Ed25519 key.
func ParsePublicKey(s string) (PublicKey, error) {
	var k PublicKey
	if err := parse32(s, (*[32]byte)(&k)); err != nil {
		return PublicKey{}, fmt.Errorf("public key %q: %w", truncate(s), err)
	}
	return k, nil
}

func (k PublicKey) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

func (k *PublicKey) UnmarshalText(b []byte) error {
	v, err := ParsePublicKey(string(b))
	*k = v
	return err
}

func (k *PublicKey) UnmarshalCBOR(data []byte) error {
	return unmarshalBytes32(data, (*[32]byte)(k))
}

// Bytes is a byte string: a CBOR byte string, unpadded base64url in JSON.
type Bytes []byte

func (b Bytes) MarshalText() ([]byte, error) { return []byte(b64.EncodeToString(b)), nil }

func (b *Bytes) UnmarshalText(t []byte) error {
	v, err := b64.DecodeString(string(t))
	if err != nil {
		return fmt.Errorf("bytes %q: not canonical unpadded base64url: %w", truncate(string(t)), err)
	}
	*b = v
	return nil
}

// DecodeBase64 decodes the canonical unpadded base64url form.
func DecodeBase64(s string) ([]byte, error) {
	v, err := b64.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%q is not canonical unpadded base64url: %w", truncate(s), err)
	}
	return v, nil
}

// EncodeBase64 encodes b in the canonical unpadded base64url form.
func EncodeBase64(b []byte) string { return b64.EncodeToString(b) }

func parse32(s string, out *[32]byte) error {
	if len(s) != 43 {
		return fmt.Errorf("want 43 base64url characters, got %d", len(s))
	}
	n, err := b64.Decode(out[:], []byte(s))
	if err != nil {
		return fmt.Errorf("not canonical unpadded base64url: %w", err)
	}
	if n != 32 {
		return fmt.Errorf("want 32 bytes, got %d", n)
	}
	return nil
}

func unmarshalBytes32(data []byte, out *[32]byte) error {
	// 0x58 0x20: byte string, one-byte length 32.
	if len(data) != 34 || data[0] != 0x58 || data[1] != 0x20 {
		return fmt.Errorf("want a 32-byte CBOR byte string")
	}
	copy(out[:], data[2:])
	return nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

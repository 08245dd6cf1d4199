package core

import (
	"bytes"
	"errors"
	"fmt"
	"sort"

	"github.com/fxamacker/cbor/v2"
)

var (
	encMode cbor.UserBufferEncMode
	decMode cbor.DecMode
)

func init() {
	var err error
	encMode, err = cbor.EncOptions{
		Sort:          cbor.SortCoreDeterministic, // bytewise over encoded keys: length-first for text
		ShortestFloat: cbor.ShortestFloatNone,
		IndefLength:   cbor.IndefLengthForbidden,
		NilContainers: cbor.NilContainerAsEmpty,
		TagsMd:        cbor.TagsForbidden,
	}.UserBufferEncMode()
	if err != nil {
		panic("core: internal error: " + err.Error())
	}
	decMode, err = cbor.DecOptions{
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		IndefLength:       cbor.IndefLengthForbidden,
		TagsMd:            cbor.TagsForbidden,
		ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
		MaxNestedLevels:   16,
		MaxArrayElements:  1 << 20,
		MaxMapPairs:       1 << 20,
		UTF8:              cbor.UTF8RejectInvalid,
	}.DecMode()
	if err != nil {
		panic("core: internal error: " + err.Error())
	}
}

// ErrNonCanonical reports bytes that decode but are not the canonical
// encoding of what they decode to.
var ErrNonCanonical = errors.New("not canonical CBOR")

// Canonical returns the canonical CBOR encoding of v.
func Canonical(v any) ([]byte, error) {
	return encMode.Marshal(v)
}

// AppendCanonical appends the canonical CBOR encoding of v to buf, for a
// caller that reuses buf: on error, buf may hold part of it.
func AppendCanonical(buf *bytes.Buffer, v any) error {
	return encMode.MarshalToBuffer(v, buf)
}

// DecodeCanonical decodes data into v under the strict rules of this
// package (closed schemas, no duplicate keys, indefinite lengths, tags or
// invalid UTF-8) and fails unless re-encoding v gives back exactly data.
// what names the object in error messages. Other packages' canonical cores
// (grants, session receipts) decode through it.
func DecodeCanonical(what string, data []byte, v any) error { return decodeCanonical(what, data, v) }

// decodeCanonical is DecodeCanonical.
func decodeCanonical(what string, data []byte, v any) error {
	if err := decMode.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", what, describeDecodeError(err))
	}
	again, err := encMode.Marshal(v)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if !bytes.Equal(again, data) {
		return fmt.Errorf("%s: %w", what, explainNonCanonical(data))
	}
	return nil
}

// describeDecodeError turns the library's errors into messages that name the
// rule broken.
func describeDecodeError(err error) error {
	var unknown *cbor.UnknownFieldError
	var dup *cbor.DupMapKeyError
	switch {
	case errors.As(err, &unknown):
		return fmt.Errorf("unknown key (closed schema): %v", err)
	case errors.As(err, &dup):
		return fmt.Errorf("duplicate map key: %v", err)
	}
	return err
}

// explainNonCanonical says what is off with bytes that decoded but did not
// round-trip: a missing key, or a non-canonical encoding.
func explainNonCanonical(data []byte) error {
	var m map[string]cbor.RawMessage
	if decMode.Unmarshal(data, &m) == nil {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return fmt.Errorf("%w (keys present: %q; a required key may be missing, or keys, integers or lengths are not in canonical form)", ErrNonCanonical, keys)
	}
	return ErrNonCanonical
}

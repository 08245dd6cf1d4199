package sandbox

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// decodePolicy parses a policy file in the form Encode writes it
// (json.Marshal of a Policy): one object with Policy's fields, each at most
// once and spelled exactly, string lists as arrays or null, then nothing
// but white space. Anything else is refused, so it accepts a subset of what
// encoding/json would, and reads that subset the same way (the tests check
// both). It is joule-exec's own because encoding/json builds its
// reflection caches on first use, which cost about a millisecond on the
// start of every contained command, for a file of a dozen string lists.
func decodePolicy(b []byte) (Policy, error) {
	d := jsonReader{b: b}
	var p Policy
	err := d.object(func(key string) error {
		var err error
		switch key {
		case "links":
			p.Links, err = d.links()
		case "roots":
			p.Roots, err = d.strings()
		case "home":
			p.Home, err = d.stringOrNull()
		case "protected":
			p.Protected, err = d.strings()
		case "private":
			p.Private, err = d.strings()
		case "not_after":
			p.NotAfter, err = d.int64OrNull()
		default:
			return fmt.Errorf("json: unknown field %q", key)
		}
		return err
	})
	if err != nil {
		return Policy{}, err
	}
	if d.space(); d.i != len(b) {
		return Policy{}, d.fail("data after the policy")
	}
	return p, nil
}

type jsonReader struct {
	b []byte
	i int
}

func (d *jsonReader) fail(what string) error {
	return fmt.Errorf("json: %s at offset %d", what, d.i)
}

func (d *jsonReader) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, 0 at the end.
func (d *jsonReader) peek() byte {
	if d.space(); d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *jsonReader) expect(c byte) error {
	if d.peek() != c {
		return d.fail(fmt.Sprintf("want %q", c))
	}
	d.i++
	return nil
}

// null consumes a null literal if one is next.
func (d *jsonReader) null() bool {
	if d.peek() == 'n' && len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "null" {
		d.i += 4
		return true
	}
	return false
}

// object reads an object, calling field for each key with the reader at
// its value; a key seen twice is refused.
func (d *jsonReader) object(field func(key string) error) error {
	if err := d.expect('{'); err != nil {
		return err
	}
	if d.peek() == '}' {
		d.i++
		return nil
	}
	seen := map[string]bool{}
	for {
		key, err := d.string()
		if err != nil {
			return err
		}
		if seen[key] {
			return d.fail(fmt.Sprintf("field %q twice", key))
		}
		seen[key] = true
		if err := d.expect(':'); err != nil {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return nil
		default:
			return d.fail("want ',' or '}'")
		}
	}
}

// array reads an array (null is nil), calling elem for each element.
func (d *jsonReader) array(elem func() error) (isNull bool, err error) {
	if d.null() {
		return true, nil
	}
	if err := d.expect('['); err != nil {
		return false, err
	}
	if d.peek() == ']' {
		d.i++
		return false, nil
	}
	for {
		if err := elem(); err != nil {
			return false, err
		}
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			return false, nil
		default:
			return false, d.fail("want ',' or ']'")
		}
	}
}

func (d *jsonReader) strings() ([]string, error) {
	out := []string{} // an empty array is an empty list, as encoding/json reads it
	isNull, err := d.array(func() error {
		s, err := d.string()
		out = append(out, s)
		return err
	})
	if isNull {
		return nil, err
	}
	return out, err
}

func (d *jsonReader) links() ([]PolicyLink, error) {
	out := []PolicyLink{}
	isNull, err := d.array(func() error {
		var l PolicyLink
		err := d.object(func(key string) error {
			var err error
			switch key {
			case "allow":
				l.Allow, err = d.strings()
			case "ask":
				l.Ask, err = d.strings()
			case "deny":
				l.Deny, err = d.strings()
			default:
				return fmt.Errorf("json: unknown field %q", key)
			}
			return err
		})
		out = append(out, l)
		return err
	})
	if isNull {
		return nil, err
	}
	return out, err
}

func (d *jsonReader) stringOrNull() (string, error) {
	if d.null() {
		return "", nil
	}
	return d.string()
}

// int64OrNull reads an integer as json.Marshal writes an int64: an
// optional minus and decimal digits, no leading zero.
func (d *jsonReader) int64OrNull() (int64, error) {
	if d.null() {
		return 0, nil
	}
	d.space()
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	digits := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	if d.i == digits || (d.b[digits] == '0' && d.i-digits > 1) {
		return 0, d.fail("want an integer")
	}
	if d.i < len(d.b) && (d.b[d.i] == '.' || d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		return 0, d.fail("want an integer")
	}
	n, err := strconv.ParseInt(string(d.b[start:d.i]), 10, 64)
	if err != nil {
		return 0, d.fail("integer out of range")
	}
	return n, nil
}

// string reads a string: valid UTF-8, no control characters, the escapes
// of JSON (a \u escape of half a surrogate pair on its own is refused).
func (d *jsonReader) string() (string, error) {
	if err := d.expect('"'); err != nil {
		return "", err
	}
	start := d.i
	for d.i < len(d.b) && d.b[d.i] != '"' && d.b[d.i] != '\\' && d.b[d.i] >= 0x20 {
		d.i++
	}
	if d.i < len(d.b) && d.b[d.i] == '"' { // no escapes: the common case
		s := d.b[start:d.i]
		d.i++
		if !utf8.Valid(s) {
			return "", d.fail("invalid UTF-8 in a string")
		}
		return string(s), nil
	}
	out := append([]byte(nil), d.b[start:d.i]...)
	for {
		if d.i >= len(d.b) {
			return "", d.fail("unterminated string")
		}
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			if !utf8.Valid(out) {
				return "", d.fail("invalid UTF-8 in a string")
			}
			return string(out), nil
		case c < 0x20:
			return "", d.fail("control character in a string")
		case c != '\\':
			out = append(out, c)
			d.i++
			continue
		}
		if d.i+1 >= len(d.b) {
			return "", d.fail("unterminated string")
		}
		e := d.b[d.i+1]
		d.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, err := d.hex4()
			if err != nil {
				return "", err
			}
			if utf16.IsSurrogate(r) {
				if len(d.b)-d.i < 2 || d.b[d.i] != '\\' || d.b[d.i+1] != 'u' {
					return "", d.fail("half a surrogate pair")
				}
				d.i += 2
				r2, err := d.hex4()
				if err != nil {
					return "", err
				}
				if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
					return "", d.fail("half a surrogate pair")
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", d.fail("invalid escape")
		}
	}
}

func (d *jsonReader) hex4() (rune, error) {
	if len(d.b)-d.i < 4 {
		return 0, errors.New("json: short \\u escape")
	}
	var r rune
	for _, c := range d.b[d.i : d.i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, d.fail("invalid \\u escape")
		}
	}
	d.i += 4
	return r, nil
}

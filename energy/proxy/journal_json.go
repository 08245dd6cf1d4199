package proxy

import (
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/joulehook/joule/energy"
)

// appendLine appends l as encoding/json's Encoder (SetEscapeHTML(false))
// writes it, byte for byte, newline included: a call is journaled twice,
// and reflection made that ~3.5 µs of the few dozen a metered call may add
// (docs/meter.md, "Overhead"). FuzzAppendLine holds it to encoding/json's
// output; a time encoding/json refuses goes to encoding/json, for its error.
func appendLine(dst []byte, l journalLine) ([]byte, error) {
	if l.Seal == nil {
		return appendDone(dst, l.Done), nil
	}
	return appendSeal(dst, l.Seal.Written, &l.Seal.Record, l.Done)
}

// appendDone appends the line {"done":nonce}, or {} for no nonce.
func appendDone(dst []byte, nonce string) []byte {
	dst = append(dst, '{')
	if nonce != "" {
		dst = append(dst, `"done":`...)
		dst = appendString(dst, nonce)
	}
	return append(dst, '}', '\n')
}

// appendSeal appends the line of a pending seal of r, written at written
// (and, in a line no journal writes but encoding/json would, done).
func appendSeal(dst []byte, written time.Time, r *energy.Record, done string) ([]byte, error) {
	dst = append(dst, `{"seal":{"written":`...)
	dst, err := appendTime(dst, written)
	if err != nil {
		return dst, err
	}
	dst = append(dst, `,"record":{"Session":`...)
	dst = appendString(dst, r.Session)
	dst = append(dst, `,"Unit":`...)
	dst = appendString(dst, r.Unit)
	dst = append(dst, `,"Model":`...)
	dst = appendString(dst, r.Model)
	dst = appendUsage(append(dst, `,"Usage":`...), r.Usage)
	dst = append(dst, `,"Estimate":{"UJ":`...)
	dst = strconv.AppendUint(dst, r.Estimate.UJ, 10)
	dst = append(dst, `,"Class":`...)
	dst = appendString(dst, string(r.Estimate.Class))
	dst = append(dst, `,"Provenance":`...)
	dst = appendString(dst, string(r.Estimate.Provenance))
	dst = append(dst, `,"Basis":`...)
	dst = appendString(dst, r.Estimate.Basis)
	dst = append(dst, `},"MeasuredUJ":`...)
	if r.MeasuredUJ == nil {
		dst = append(dst, "null"...)
	} else {
		dst = strconv.AppendUint(dst, *r.MeasuredUJ, 10)
	}
	dst = append(dst, `,"Coverage":`...)
	dst = appendString(dst, r.Coverage)
	dst = append(dst, `,"Complete":`...)
	dst = strconv.AppendBool(dst, r.Complete)
	dst = append(dst, `,"Note":`...)
	dst = appendString(dst, r.Note)
	dst = append(dst, `,"Grants":`...)
	if r.Grants == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, g := range r.Grants {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, g)
		}
		dst = append(dst, ']')
	}
	if dst, err = appendTime(append(dst, `,"Time":`...), r.Time); err != nil {
		return dst, err
	}
	dst = append(dst, `,"Reservation":`...)
	if r.Reservation == nil {
		dst = append(dst, "null"...)
	} else {
		dst = strconv.AppendInt(dst, *r.Reservation, 10)
	}
	dst = append(dst, `,"SettleUJ":`...)
	dst = strconv.AppendUint(dst, r.SettleUJ, 10)
	dst = append(dst, `,"Draw":`...)
	if r.Draw == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, `{"Reservation":`...)
		dst = strconv.AppendInt(dst, r.Draw.Reservation, 10)
		dst = append(dst, `,"ReleaseUJ":`...)
		dst = strconv.AppendUint(dst, r.Draw.ReleaseUJ, 10)
		dst = append(dst, `,"ChargeUJ":`...)
		dst = strconv.AppendUint(dst, r.Draw.ChargeUJ, 10)
		dst = append(dst, '}')
	}
	dst = append(dst, `,"Nonce":`...)
	dst = appendString(dst, r.Nonce)
	dst = append(dst, `,"MaxOutputRequested":`...)
	dst = strconv.AppendUint(dst, r.MaxOutputRequested, 10)
	dst = append(dst, `,"MaxOutputFitted":`...)
	dst = strconv.AppendUint(dst, r.MaxOutputFitted, 10)
	dst = append(dst, "}}"...)
	if done != "" {
		dst = append(dst, `,"done":`...)
		dst = appendString(dst, done)
	}
	return append(dst, '}', '\n'), nil
}

// appendTime appends t as time.Time's MarshalJSON does, without its
// allocation.
func appendTime(dst []byte, t time.Time) ([]byte, error) {
	dst, err := t.AppendText(append(dst, '"'))
	if err != nil {
		return dst, fmt.Errorf("json: error calling MarshalJSON for type time.Time: %w", err)
	}
	return append(dst, '"'), nil
}

func appendUsage(dst []byte, u energy.Usage) []byte {
	dst = append(dst, `{"input_tokens":`...)
	dst = strconv.AppendUint(dst, u.Input, 10)
	dst = append(dst, `,"cached_input_tokens":`...)
	dst = strconv.AppendUint(dst, u.CachedInput, 10)
	dst = append(dst, `,"cache_write_tokens":`...)
	dst = strconv.AppendUint(dst, u.CacheWrite, 10)
	dst = append(dst, `,"output_tokens":`...)
	dst = strconv.AppendUint(dst, u.Output, 10)
	return append(dst, '}')
}

// appendString appends s as a JSON string the way encoding/json does
// without HTML escaping: invalid UTF-8 as U+FFFD, U+2028 and U+2029
// escaped.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xf])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(append(dst, s[start:]...), '"')
}

package proxy

import (
	"bytes"
	"errors"
	"io"
	"sync"
)

// Framing of a response body.
type framing int

const (
	framingJSON   framing = iota // one JSON document, parsed at the end
	framingSSE                   // text/event-stream: parse each data line as it passes
	framingNDJSON                // application/x-ndjson: parse each line as it passes
)

// maxParsedLine bounds one SSE or NDJSON line the meter parses; longer lines
// still pass through, unparsed.
const maxParsedLine = 4 << 20

// maxParsedJSON bounds a non-streamed body the meter keeps to read usage
// from; a longer body passes through, and its usage is estimated.
const maxParsedJSON = 32 << 20

// tap passes an upstream body through to the client unchanged while the
// meter reads usage from it. It never holds more than one line (or, for a
// non-streamed body, the body up to maxParsedJSON).
//
// With dropUsageOnly, the usage-only Chat Completions chunk the proxy asked
// for is held back from the client: events are then released whole, as each
// ends, instead of byte by byte.
type tap struct {
	body    io.ReadCloser
	framing framing
	onData  func(data []byte) (drop bool) // an SSE data payload or NDJSON line
	onJSON  func(body []byte)
	onEnd   func(t *tap) // called once, at Close
	// onUpstreamEnd is called once, when the upstream body ends, before
	// its last bytes are passed on: the client cannot have the whole
	// response before it runs.
	onUpstreamEnd func()

	dropUsageOnly bool

	mu       sync.Mutex
	line     []byte // current partial line
	overlong bool   // current line exceeded maxParsedLine
	event    []byte // current SSE event (dropUsageOnly only)
	drop     bool   // current event is to be dropped
	out      []byte // event bytes ready for the client (dropUsageOnly only)
	doc      []byte // non-streamed body
	docFull  bool
	bytes    int64
	eof      bool
	readErr  error
	closed   bool
	upstream bool // upstream body finished (EOF or error)
}

func (t *tap) Read(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.dropUsageOnly {
		n, err := t.body.Read(p)
		t.consume(p[:n])
		t.note(err)
		return n, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	for len(t.out) == 0 {
		if t.upstream {
			if t.readErr != nil {
				return 0, t.readErr
			}
			// Release what is left of an unterminated last event.
			if len(t.event) > 0 && !t.drop {
				t.out, t.event = append(t.out, stripNullUsage(t.event)...), nil
				continue
			}
			return 0, io.EOF
		}
		// consume copies what it keeps, so p can hold the read until
		// the events it completes are copied back into it below.
		n, err := t.body.Read(p)
		t.consume(p[:n])
		t.note(err)
	}
	n := copy(p, t.out)
	t.out = t.out[n:]
	if len(t.out) == 0 {
		t.out = nil
	}
	return n, nil
}

func (t *tap) note(err error) {
	if err == nil {
		return
	}
	if !t.upstream && t.onUpstreamEnd != nil {
		t.onUpstreamEnd()
	}
	t.upstream = true
	if errors.Is(err, io.EOF) {
		t.eof = true
	} else if t.readErr == nil {
		t.readErr = err
	}
}

// consume feeds bytes that passed to the parsers.
func (t *tap) consume(b []byte) {
	t.bytes += int64(len(b))
	if t.framing == framingJSON {
		if !t.docFull {
			if len(t.doc)+len(b) > maxParsedJSON {
				t.docFull, t.doc = true, nil
			} else {
				if t.doc == nil && len(b) > 0 {
					t.doc = (*docBuffers.Get().(*[]byte))[:0]
				}
				t.doc = append(t.doc, b...)
			}
		}
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i+1]
		}
		b = b[len(chunk):]
		if t.dropUsageOnly {
			t.event = append(t.event, chunk...)
		}
		if !t.overlong {
			if len(t.line)+len(chunk) > maxParsedLine {
				t.overlong, t.line = true, t.line[:0]
			} else {
				t.line = append(t.line, chunk...)
			}
		}
		if i < 0 {
			return
		}
		if !t.overlong {
			t.handleLine(bytes.TrimRight(t.line, "\r\n"))
		}
		t.line, t.overlong = t.line[:0], false
	}
}

func (t *tap) handleLine(line []byte) {
	switch t.framing {
	case framingNDJSON:
		if len(bytes.TrimSpace(line)) > 0 {
			t.onData(line)
		}
	case framingSSE:
		if len(line) == 0 { // end of an SSE event
			if t.dropUsageOnly {
				if !t.drop {
					t.out = append(t.out, stripNullUsage(t.event)...)
				}
				t.event, t.drop = nil, false
			}
			return
		}
		if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = bytes.TrimPrefix(data, []byte(" "))
			if t.onData(data) && t.dropUsageOnly {
				t.drop = true
			}
		}
	}
}

// Close ends the body and reports what was seen, exactly once.
func (t *tap) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	if t.framing == framingJSON && !t.docFull && t.eof && t.onJSON != nil {
		t.onJSON(t.doc) // which keeps nothing of it
	} else if t.framing != framingJSON && t.eof && len(t.line) > 0 && !t.overlong {
		t.handleLine(bytes.TrimRight(t.line, "\r\n")) // a last line without its newline
	}
	if t.doc != nil && cap(t.doc) <= maxPooledDoc {
		d := t.doc[:0]
		docBuffers.Put(&d)
	}
	t.doc, t.docFull = nil, true // a Read after Close keeps nothing
	t.mu.Unlock()
	err := t.body.Close()
	t.onEnd(t)
	return err
}

// docBuffers hold non-streamed bodies while they pass, up to
// maxPooledDoc: most are a few hundred bytes, and a metered call would
// otherwise grow a fresh one.
var docBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

const maxPooledDoc = 64 << 10

// stripNullUsage removes the "usage":null member that asking for stream
// usage adds to every chunk, so the client sees the chunks it asked for.
// Inside a JSON string the quotes would be escaped, so the raw bytes can
// only be a member.
func stripNullUsage(event []byte) []byte {
	event = bytes.ReplaceAll(event, []byte(`,"usage":null`), nil)
	return bytes.ReplaceAll(event, []byte(`"usage":null,`), nil)
}

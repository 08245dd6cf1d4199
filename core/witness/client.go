package witness

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/joulehook/joule/core/store"
)

// What a witness answered, as errors a Client returns. Each is wrapped
// in an *Error naming the witness, its URL and its answer.
var (
	// ErrUnknownLog: the witness does not know the log's origin (404,
	// or 403 "unknown log" from litewitness). Its operator must add it.
	ErrUnknownLog = errors.New("the witness does not know this log")
	// ErrForbidden: the witness does not trust the key that signed the
	// checkpoint (403).
	ErrForbidden = errors.New("the witness refuses the log's signature")
	// ErrBadRequest: the witness could not read the request (400).
	ErrBadRequest = errors.New("the witness could not read the request")
	// ErrInconsistent: the consistency proof does not lead from what the
	// witness cosigned to the checkpoint (422).
	ErrInconsistent = errors.New("the witness refuses the checkpoint as inconsistent with what it cosigned")
	// ErrUnreachable: no answer (refused, timed out, reset).
	ErrUnreachable = errors.New("the witness cannot be reached")
	// ErrBadAnswer: an answer outside the protocol, or a cosignature that
	// does not verify with the witness's key.
	ErrBadAnswer = errors.New("the witness answered outside the protocol")
)

// Error is a witness's failure to cosign.
type Error struct {
	Witness string // its key name
	URL     string
	Status  int    // the HTTP status; 0 when there was no answer
	Detail  string // what it said, or why there was no answer
	err     error
}

func (e *Error) Error() string {
	s := e.err.Error()
	if e.Status != 0 {
		s += fmt.Sprintf(" (%s answered %d", e.URL, e.Status)
	} else {
		s += " (" + e.URL
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s + ")"
}

func (e *Error) Unwrap() error { return e.err }

// ConflictError is a 409: the witness last cosigned a log of Known
// leaves, not the old size the request named.
type ConflictError struct{ Known int64 }

func (e *ConflictError) Error() string {
	return fmt.Sprintf("the witness last cosigned a log of size %d", e.Known)
}

// DefaultTimeout bounds one request to a witness.
const DefaultTimeout = 5 * time.Second

// Client submits checkpoints to one witness's add-checkpoint endpoint.
// It is a store.Cosigner.
type Client struct {
	// URL is the witness's submission prefix; add-checkpoint is under it.
	URL string
	// Key verifies the witness's cosignatures.
	Key *Verifier
	// Timeout bounds one request (default DefaultTimeout).
	Timeout time.Duration
	// HTTP sends the requests; nil: a client of its own, keeping
	// connections alive as the protocol asks.
	HTTP *http.Client
}

var _ store.Cosigner = (*Client)(nil)

// NewClient checks the witness's URL and key.
func NewClient(rawURL, vkey string, timeout time.Duration) (*Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("witness URL %q: want http:// or https:// and a host", rawURL)
	}
	k, err := NewVerifier(vkey)
	if err != nil {
		return nil, err
	}
	return &Client{URL: strings.TrimSuffix(rawURL, "/"), Key: k, Timeout: timeout}, nil
}

func (c *Client) Verifier() note.Verifier { return c.Key }

var defaultHTTP = &http.Client{Transport: &http.Transport{
	Proxy:               http.ProxyFromEnvironment,
	MaxIdleConnsPerHost: 4,
	IdleConnTimeout:     90 * time.Second,
}}

func (c *Client) fail(status int, detail string, err error) *Error {
	return &Error{Witness: c.Key.Name(), URL: c.Where() + "/add-checkpoint", Status: status, Detail: detail, err: err}
}

// Where is the witness's URL as it may be shown: without a password, for
// an error ends up in a receipt's reason.
func (c *Client) Where() string {
	u, err := url.Parse(c.URL)
	if err != nil {
		return "(a witness URL that does not parse)"
	}
	return u.Redacted()
}

// printable keeps what a witness said fit for a message and a receipt:
// valid UTF-8 without control characters.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
}

// AddCheckpoint sends one add-checkpoint request and returns the
// witness's cosignature lines on the checkpoint, verified with its key.
// A 409 is an *Error wrapping a *ConflictError with the size the witness
// knows.
func (c *Client) AddCheckpoint(ctx context.Context, r AddCheckpoint) ([]byte, error) {
	text, ok := noteText(r.Checkpoint)
	if !ok {
		return nil, errors.New("add-checkpoint: the checkpoint is not a signed note")
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL+"/add-checkpoint", bytes.NewReader(r.Body()))
	if err != nil {
		return nil, c.fail(0, err.Error(), ErrUnreachable)
	}
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	resp, err := hc.Do(req)
	if err != nil {
		detail := strings.ReplaceAll(err.Error(), c.URL, c.Where())
		if errors.Is(err, context.DeadlineExceeded) {
			detail = fmt.Sprintf("no answer within %v", timeout)
		}
		return nil, c.fail(0, detail, ErrUnreachable)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, c.fail(resp.StatusCode, "reading the answer: "+err.Error(), ErrUnreachable)
	}
	said := printable(strings.TrimSpace(clip(string(body))))
	switch resp.StatusCode {
	case http.StatusOK:
		return c.cosignatures(text, body)
	case http.StatusConflict:
		n, err := strconv.ParseInt(strings.TrimSuffix(string(body), "\n"), 10, 64)
		if err != nil || n < 0 || !strings.HasSuffix(string(body), "\n") {
			return nil, c.fail(resp.StatusCode, fmt.Sprintf("409 without a tree size: %q", said), ErrBadAnswer)
		}
		return nil, c.fail(resp.StatusCode, said, &ConflictError{Known: n})
	case http.StatusNotFound:
		return nil, c.fail(resp.StatusCode, said, ErrUnknownLog)
	case http.StatusForbidden:
		if strings.Contains(said, "unknown log") {
			// litewitness answers an unknown origin with 403.
			return nil, c.fail(resp.StatusCode, said, ErrUnknownLog)
		}
		return nil, c.fail(resp.StatusCode, said, ErrForbidden)
	case http.StatusBadRequest:
		return nil, c.fail(resp.StatusCode, said, ErrBadRequest)
	case http.StatusUnprocessableEntity:
		return nil, c.fail(resp.StatusCode, said, ErrInconsistent)
	}
	return nil, c.fail(resp.StatusCode, said, ErrBadAnswer)
}

// cosignatures picks, from a witness's answer, its own signature lines
// that verify as cosignatures of text: at least one, or an error.
func (c *Client) cosignatures(text, body []byte) ([]byte, error) {
	sigs, err := ParseSignatures(body)
	if err != nil {
		return nil, c.fail(http.StatusOK, err.Error(), ErrBadAnswer)
	}
	var out []byte
	for _, s := range sigs {
		if s.Name != c.Key.Name() || s.Hash != c.Key.KeyHash() {
			continue // another key of the witness's: ignored, as the protocol says
		}
		raw, err := base64.StdEncoding.DecodeString(s.Base64)
		if err != nil || !c.Key.Verify(text, raw[4:]) {
			return nil, c.fail(http.StatusOK, "a cosignature from its key does not verify", ErrBadAnswer)
		}
		out = append(out, signatureLine(s)...)
	}
	if out == nil {
		return nil, c.fail(http.StatusOK, fmt.Sprintf("no cosignature from its key %s", c.Key), ErrBadAnswer)
	}
	return out, nil
}

// noteText is the text of a signed note: up to and including the
// newline before the empty line.
func noteText(msg []byte) ([]byte, bool) {
	i := bytes.Index(msg, []byte("\n\n"))
	if i < 0 {
		return nil, false
	}
	return msg[:i+1], true
}

// Cosign has the witness cosign signed, a checkpoint of size: it sends
// the consistency proof from known, and when the witness answers that it
// knows another size, sends it again from that size (a witness that
// cosigned a larger log is a *store.AheadError). A witness that refuses
// the proof from a size it named itself holds a log this one does not
// extend: that error wraps store.ErrRolledBack.
func (c *Client) Cosign(ctx context.Context, signed []byte, size, known int64, prove func(old int64) (tlog.TreeProof, error)) ([]byte, error) {
	old := known
	if old > size {
		old = 0 // not a size this log could have been cosigned at: ask
	}
	told := false // old is the witness's own word
	for attempt := 0; ; attempt++ {
		var proof tlog.TreeProof
		if old > 0 && old < size {
			p, err := prove(old)
			if err != nil {
				return nil, fmt.Errorf("consistency proof from %d to %d: %w", old, size, err)
			}
			proof = p
		}
		lines, err := c.AddCheckpoint(ctx, AddCheckpoint{OldSize: old, Proof: proof, Checkpoint: signed})
		var conflict *ConflictError
		switch {
		case err == nil:
			return lines, nil
		case errors.As(err, &conflict) && conflict.Known > size:
			return nil, &store.AheadError{Witness: c.Key.Name(), Known: conflict.Known, Size: size}
		case errors.As(err, &conflict) && conflict.Known != old && attempt < 3:
			old, told = conflict.Known, true
			continue
		case errors.Is(err, ErrInconsistent) && (told || old == known && known > 0):
			what := fmt.Sprintf("the log of size %d is not an extension of the one the witness cosigned at size %d", size, old)
			if old == size {
				what = fmt.Sprintf("the log of size %d is not the one the witness cosigned at that size", size)
			}
			return nil, fmt.Errorf("%w: %s: %w", store.ErrRolledBack, what, err)
		}
		return nil, err
	}
}

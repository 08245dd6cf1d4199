package witness

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/joulehook/joule/core/store"
)

// step is one add-checkpoint request and what a witness must answer.
type step struct {
	name   string
	body   func(l *memLog) []byte
	status int
	answer string // a substring of the answer; for 409 the whole answer
}

func add(old int64, proof tlog.TreeProof, cp []byte) []byte {
	return AddCheckpoint{OldSize: old, Proof: proof, Checkpoint: cp}.Body()
}

// protocolSteps walks a witness through c2sp.org/tlog-witness's
// add-checkpoint rules, in order (each step sees the state the previous
// left): the log grows 0 → 3 → 5 → 8 and every refusal leaves the
// witness where it was. unknownLog is the status the witness gives an
// origin it does not know (404 by the spec; litewitness says 403).
func protocolSteps(unknownLog int) []step {
	other := func(l *memLog) *memLog {
		o := newMemLog(l.t)
		o.origin, o.salt = l.origin, " of another log"
		o.append(int(l.size()))
		return o
	}
	return []step{
		{"unknown origin", func(l *memLog) []byte {
			cp := l.sign(store.Checkpoint{Origin: "another log", Size: 3, Root: l.root(3)})
			return add(0, nil, cp)
		}, unknownLog, ""},
		{"a key the witness does not trust", func(l *memLog) []byte { return add(0, nil, other(l).checkpoint(3)) }, http.StatusForbidden, ""},
		{"old size above the checkpoint's", func(l *memLog) []byte { return add(4, nil, l.checkpoint(3)) }, http.StatusBadRequest, ""},
		{"first checkpoint", func(l *memLog) []byte { return add(0, nil, l.checkpoint(3)) }, http.StatusOK, "— "},
		{"old size 0 once it knows 3", func(l *memLog) []byte { return add(0, nil, l.checkpoint(5)) }, http.StatusConflict, "3\n"},
		{"old size it does not know", func(l *memLog) []byte { return add(2, l.prove(2, 5), l.checkpoint(5)) }, http.StatusConflict, "3\n"},
		{"no proof", func(l *memLog) []byte { return add(3, nil, l.checkpoint(5)) }, http.StatusUnprocessableEntity, ""},
		{"a proof that does not lead there", func(l *memLog) []byte {
			p := l.prove(3, 5)
			p[0][0] ^= 1
			return add(3, p, l.checkpoint(5))
		}, http.StatusUnprocessableEntity, ""},
		{"a fork at 5", func(l *memLog) []byte {
			o := other(l)
			return add(3, o.prove(3, 5), l.sign(store.Checkpoint{Origin: l.origin, Size: 5, Root: o.root(5)}))
		}, http.StatusUnprocessableEntity, ""},
		{"same size, same root", func(l *memLog) []byte { return add(3, nil, l.checkpoint(3)) }, http.StatusOK, "— "},
		{"grows to 5", func(l *memLog) []byte { return add(3, l.prove(3, 5), l.checkpoint(5)) }, http.StatusOK, "— "},
		{"same size, another root", func(l *memLog) []byte {
			return add(5, nil, l.sign(store.Checkpoint{Origin: l.origin, Size: 5, Root: l.root(4)}))
		}, http.StatusUnprocessableEntity, ""},
		{"a stale checkpoint", func(l *memLog) []byte { return add(3, l.prove(3, 4), l.checkpoint(4)) }, http.StatusConflict, "5\n"},
		{"grows to 8", func(l *memLog) []byte { return add(5, l.prove(5, 8), l.checkpoint(8)) }, http.StatusOK, "— "},
		{"not a request", func(l *memLog) []byte { return []byte("hello\n\nworld\n") }, http.StatusBadRequest, ""},
	}
}

// runSteps posts each step to url and checks the answers and, for a
// 200, the cosignature with key.
func runSteps(t *testing.T, url string, key *Verifier, l *memLog, steps []step) {
	l.append(8 - int(l.size()))
	for _, s := range steps {
		body := s.body(l)
		resp, err := http.Post(url+"/add-checkpoint", "text/plain", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != s.status {
			t.Fatalf("%s: status %d (%q), want %d", s.name, resp.StatusCode, got, s.status)
		}
		switch s.status {
		case http.StatusConflict:
			if string(got) != s.answer || resp.Header.Get("Content-Type") != "text/x.tlog.size" {
				t.Fatalf("%s: 409 answer %q (%s), want %q (text/x.tlog.size)", s.name, got, resp.Header.Get("Content-Type"), s.answer)
			}
		case http.StatusOK:
			req, err := ParseAddCheckpoint(body)
			if err != nil {
				t.Fatal(err)
			}
			text, _ := noteText(req.Checkpoint)
			c := &Client{URL: url, Key: key}
			if _, err := c.cosignatures(text, got); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
		}
	}
}

func newServer(t *testing.T, l *memLog) (*Server, *httptest.Server) {
	dir := t.TempDir()
	if _, err := InitServer(dir, "joule.test/witness"); err != nil {
		t.Fatal(err)
	}
	srv, err := OpenServer(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.AddLog(l.origin, []string{l.vkey}); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return srv, hs
}

func TestServerProtocol(t *testing.T) {
	l := newMemLog(t)
	srv, hs := newServer(t, l)
	runSteps(t, hs.URL, srv.Verifier(), l, protocolSteps(http.StatusNotFound))

	// The monitoring endpoint serves the last checkpoint cosigned, with
	// the log's signature and the witness's.
	resp, err := http.Get(hs.URL + "/" + originHash(l.origin) + "/checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	cp, err := store.OpenCosigned(got, l.origin, mustVerifier(t, l.vkey), srv.Verifier())
	if err != nil || cp.Size != 8 {
		t.Fatalf("monitoring checkpoint %+v, %v:\n%s", cp, err, got)
	}
	for _, path := range []string{"/" + originHash("another log") + "/checkpoint", "/nothex/checkpoint", "/"} {
		if resp, err := http.Get(hs.URL + path); err != nil || resp.StatusCode != http.StatusNotFound {
			t.Fatalf("GET %s: %v %v", path, resp.Status, err)
		}
	}
	if resp, err := http.Get(hs.URL + "/add-checkpoint"); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET /add-checkpoint: %v %v", resp.Status, err)
	}
	big := bytes.Repeat([]byte("A"), MaxRequestSize+1)
	if resp, err := http.Post(hs.URL+"/add-checkpoint", "text/plain", bytes.NewReader(big)); err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a request of %d bytes: %v %v", len(big), resp.Status, err)
	}

	// The state survives the process, and its files are the owner's.
	again, err := OpenServer(srv.dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	logs, err := again.Logs()
	if err != nil || len(logs) != 1 || logs[0].Size != 8 {
		t.Fatalf("logs after reopening: %+v, %v", logs, err)
	}
	for _, f := range []string{filepath.Join(srv.dir, KeyFile), again.logPath(l.origin)} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", f, fi.Mode(), err)
		}
	}
	if _, err := InitServer(srv.dir, "again"); err == nil {
		t.Fatal("init over an existing key")
	}
	// A zero-size checkpoint must have the empty tree's root.
	z := newMemLog(t)
	if err := srv.AddLog(z.origin+" z", []string{z.vkey}); err != nil {
		t.Fatal(err)
	}
	z.origin += " z"
	z.append(1)
	_, _, err = srv.AddCheckpoint(add(0, nil, z.sign(store.Checkpoint{Origin: z.origin, Size: 0, Root: z.root(1)})))
	var ref *refusal
	if !errors.As(err, &ref) || ref.status != http.StatusUnprocessableEntity {
		t.Fatalf("size 0 with a root: %v", err)
	}
}

// The client against joule's own witness: the 409 dance, a witness
// ahead of the checkpoint, a fork, a witness that does not answer, and
// one that is not there.
func TestClient(t *testing.T) {
	ctx := context.Background()
	l := newMemLog(t)
	srv, hs := newServer(t, l)
	c, err := NewClient(hs.URL+"/", srv.Verifier().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l.append(5)
	// known 0, the witness knows 0: no conflict.
	lines, err := c.Cosign(ctx, l.checkpoint(3), 3, 0, l.prover(3))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.OpenCosigned(append(l.checkpoint(3), lines...), l.origin, mustVerifier(t, l.vkey), srv.Verifier()); err != nil {
		t.Fatalf("cosigned note does not verify: %v", err)
	}
	// known 0 (a lost file), the witness knows 3: it says so, and the
	// client sends the proof from 3.
	if _, err := c.Cosign(ctx, l.checkpoint(5), 5, 0, l.prover(5)); err != nil {
		t.Fatal(err)
	}
	// A checkpoint older than what the witness cosigned.
	_, err = c.Cosign(ctx, l.checkpoint(4), 4, 3, l.prover(4))
	var ahead *store.AheadError
	if !errors.As(err, &ahead) || ahead.Known != 5 || ahead.Size != 4 {
		t.Fatalf("stale checkpoint: %v", err)
	}
	// A log that forked from the one the witness cosigned: rolled back.
	fork := newMemLog(t)
	fork.signer, fork.vkey, fork.salt = l.signer, l.vkey, " forked"
	fork.append(7)
	_, err = c.Cosign(ctx, fork.checkpoint(7), 7, 0, fork.prover(7))
	if !errors.Is(err, store.ErrRolledBack) || !errors.Is(err, ErrInconsistent) {
		t.Fatalf("fork: %v", err)
	}
	// Unknown log.
	other := newMemLog(t)
	other.origin = "joule receipts log someone.else"
	other.append(1)
	if _, err := c.Cosign(ctx, other.checkpoint(1), 1, 0, other.prover(1)); !errors.Is(err, ErrUnknownLog) {
		t.Fatalf("unknown log: %v", err)
	}
	// A witness that does not answer in time.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // so that the server notices the client leave
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	c2 := &Client{URL: slow.URL, Key: srv.Verifier(), Timeout: 100 * time.Millisecond}
	start := time.Now()
	if _, err := c2.Cosign(ctx, l.checkpoint(5), 5, 0, l.prover(5)); !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "no answer within 100ms") {
		t.Fatalf("slow witness: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("the timeout took %v", d)
	}
	// A witness that is not there.
	c3 := &Client{URL: "http://127.0.0.1:1", Key: srv.Verifier()}
	if _, err := c3.Cosign(ctx, l.checkpoint(5), 5, 0, l.prover(5)); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("closed port: %v", err)
	}
	// A witness that answers with another key's cosignature.
	liar := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, _ := ParseAddCheckpoint(body)
		n, _ := note.Open(req.Checkpoint, note.VerifierList(mustVerifier(t, l.vkey)))
		impostor := newTestSigner(t, srv.Verifier().Name())
		signed, _ := note.Sign(&note.Note{Text: n.Text}, impostor)
		_, sigs, _ := bytes.Cut(signed, []byte("\n\n"))
		w.Write(sigs)
	}))
	defer liar.Close()
	c4 := &Client{URL: liar.URL, Key: srv.Verifier()}
	if _, err := c4.Cosign(ctx, l.checkpoint(5), 5, 0, l.prover(5)); !errors.Is(err, ErrBadAnswer) {
		t.Fatalf("impostor: %v", err)
	}
	if _, err := NewClient("ftp://w", srv.Verifier().String(), 0); err == nil {
		t.Fatal("ftp URL accepted")
	}
}

func TestAddCheckpointBody(t *testing.T) {
	l := newMemLog(t)
	l.append(9)
	r := AddCheckpoint{OldSize: 3, Proof: l.prove(3, 9), Checkpoint: l.checkpoint(9)}
	got, err := ParseAddCheckpoint(r.Body())
	if err != nil || got.OldSize != 3 || len(got.Proof) != len(r.Proof) || !bytes.Equal(got.Checkpoint, r.Checkpoint) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	h := l.root(1).String()
	for _, tc := range []struct{ name, body, err string }{
		{"no empty line", "old 0\n" + h + "\n", "no empty line"},
		{"no checkpoint", "old 0\n\n", "no checkpoint"},
		{"no old line", h + "\n\ncp\n", "not \"old SIZE\""},
		{"leading zero", "old 03\n\ncp\n", "canonical"},
		{"negative", "old -1\n\ncp\n", "canonical"},
		{"plus sign", "old +1\n\ncp\n", "canonical"},
		{"short hash", "old 1\nAAAA\n\ncp\n", "canonical base64"},
		{"unpadded hash", "old 1\n" + strings.TrimSuffix(h, "=") + "\n\ncp\n", "canonical base64"},
		{"64 proof lines", "old 1\n" + strings.Repeat(h+"\n", 64) + "\ncp\n", "at most 63"},
		{"too large", "old 1\n\n" + strings.Repeat("x", MaxRequestSize), "limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseAddCheckpoint([]byte(tc.body)); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
		})
	}
	if _, err := ParseAddCheckpoint([]byte("old 1\n" + strings.Repeat(h+"\n", 63) + "\ncp\n")); err != nil {
		t.Fatalf("63 proof lines: %v", err)
	}
}

// What a witness says, and where it is, end up in messages and in a
// receipt's reason: no password from the URL, no control characters or
// invalid UTF-8 from the answer.
func TestClientErrorIsPrintable(t *testing.T) {
	l := newMemLog(t)
	l.append(1)
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte("no\x1b[31m\xff way\n"))
	}))
	defer bad.Close()
	u := strings.Replace(bad.URL, "http://", "http://user:s3cret@", 1)
	c, err := NewClient(u, newTestSigner(t, "w.test").Verifier().String(), 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Cosign(context.Background(), l.checkpoint(1), 1, 0, l.prover(1))
	if !errors.Is(err, ErrForbidden) {
		t.Fatalf("%v", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "s3cret") || strings.ContainsAny(msg, "\x1b\xff") || !strings.Contains(msg, "no?[31m? way") {
		t.Fatalf("error %q", msg)
	}
	c.URL = "http://user:s3cret@127.0.0.1:1"
	if _, err := c.Cosign(context.Background(), l.checkpoint(1), 1, 0, l.prover(1)); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("unreachable: %v", err)
	}
}

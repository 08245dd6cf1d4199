package witness

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/joulehook/joule/core/store"
)

// A Server is a witness (c2sp.org/tlog-witness): for each log it knows
// (an origin and the keys that sign its checkpoints) it keeps the latest
// checkpoint it cosigned, and cosigns a new one only with a consistency
// proof from that one. Its state is a directory: the witness's key
// (KeyFile) and one file a log under logs/, each rewritten whole (temp
// file, fsync, rename) under a lock before the cosignature is returned.
type Server struct {
	dir    string
	signer *Signer
	mu     sync.Mutex // one add-checkpoint at a time in this process
	// OnRequest, when set, is told each add-checkpoint's outcome.
	OnRequest func(origin string, status int, detail string)
}

// KeyFile holds the witness's private key in the state directory: a
// signed-note private key, "PRIVATE+KEY+<name>+<hash>+<key>" (mode 0600).
const KeyFile = "witness.key"

// InitServer creates a witness named name in dir, with a new key, and
// returns the verifier key of its cosignatures. It refuses a dir that
// holds a key already.
func InitServer(dir, name string) (*Verifier, error) {
	if !validName(name) {
		return nil, fmt.Errorf("witness name %q: want a non-empty name without spaces or '+', such as example.com/witness", clip(name))
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o700); err != nil {
		return nil, err
	}
	skey, _, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, KeyFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("%s holds a witness key already", dir)
	}
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteString(skey + "\n"); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	s, err := OpenServer(dir, nil)
	if err != nil {
		return nil, err
	}
	return s.signer.Verifier(), nil
}

// OpenServer opens the witness whose state is in dir.
func OpenServer(dir string, now func() time.Time) (*Server, error) {
	b, err := os.ReadFile(filepath.Join(dir, KeyFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no witness key in %s: create one with 'joule witness init --name NAME --state %s'", dir, dir)
	}
	if err != nil {
		return nil, err
	}
	name, key, err := parsePrivateKey(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, KeyFile), err)
	}
	signer, err := NewSigner(name, key, now)
	if err != nil {
		return nil, err
	}
	return &Server{dir: dir, signer: signer}, nil
}

// parsePrivateKey reads a signed-note Ed25519 private key.
func parsePrivateKey(skey string) (string, ed25519.PrivateKey, error) {
	rest, ok := strings.CutPrefix(skey, "PRIVATE+KEY+")
	parts := strings.SplitN(rest, "+", 3)
	if !ok || len(parts) != 3 {
		return "", nil, errors.New("not a signed-note private key (PRIVATE+KEY+NAME+HASH+KEY)")
	}
	raw, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(raw) != 1+ed25519.SeedSize || raw[0] != algEd25519 {
		return "", nil, errors.New("not an Ed25519 signed-note private key")
	}
	return parts[0], ed25519.NewKeyFromSeed(raw[1:]), nil
}

// Verifier returns the verifier of the witness's cosignatures.
func (s *Server) Verifier() *Verifier { return s.signer.Verifier() }

// logState is what the witness keeps of one log.
type logState struct {
	Origin string   `json:"origin"`
	Keys   []string `json:"keys"` // signed-note verifier keys of the log
	Size   int64    `json:"size"`
	Root   string   `json:"root"` // base64
	// Checkpoint is the latest checkpoint cosigned: the log's
	// signatures and the witness's cosignature; empty before the first.
	Checkpoint string `json:"checkpoint,omitempty"`
}

func (s *Server) logPath(origin string) string {
	return filepath.Join(s.dir, "logs", originHash(origin)+".json")
}

// originHash names a log as the monitoring URL does: the lowercase hex
// SHA-256 of its origin.
func originHash(origin string) string {
	h := sha256.Sum256([]byte(origin))
	return hex.EncodeToString(h[:])
}

// emptyRoot is the root of the empty tree: SHA-256 of nothing (RFC 6962).
var emptyRoot = tlog.Hash(sha256.Sum256(nil))

// AddLog makes the witness know the log origin, whose checkpoints the
// verifier keys vkeys sign, starting at size 0; for a log it knows, it
// adds the keys. A log is never removed: a witness that forgot a log
// could be made to cosign a fork of it.
func (s *Server) AddLog(origin string, vkeys []string) error {
	if origin == "" || strings.ContainsAny(origin, "\n") {
		return errors.New("add log: the origin must be one non-empty line")
	}
	for _, k := range vkeys {
		if _, err := note.NewVerifier(k); err != nil {
			return fmt.Errorf("add log: key %q: %v", clip(k), err)
		}
	}
	return s.update(origin, func(st *logState, exists bool) error {
		if !exists {
			*st = logState{Origin: origin, Size: 0, Root: emptyRoot.String()}
		}
		for _, k := range vkeys {
			if !slices.Contains(st.Keys, k) {
				st.Keys = append(st.Keys, k)
			}
		}
		return nil
	})
}

// Logs lists the logs the witness knows.
func (s *Server) Logs() ([]logState, error) {
	ents, err := os.ReadDir(filepath.Join(s.dir, "logs"))
	if err != nil {
		return nil, err
	}
	var out []logState
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		st, err := readLog(filepath.Join(s.dir, "logs", e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

func readLog(path string) (logState, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return logState{}, err
	}
	var st logState
	if err := json.Unmarshal(b, &st); err != nil {
		return logState{}, fmt.Errorf("%s: %v", path, err)
	}
	return st, nil
}

// update runs f on origin's state under its lock, and writes the state
// back (temp file, fsync, rename, directory fsync) unless f fails.
func (s *Server) update(origin string, f func(st *logState, exists bool) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	path := s.logPath(origin)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	unlock, err := lockFile(path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	st, err := readLog(path)
	exists := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if exists && st.Origin != origin {
		return fmt.Errorf("%s holds the log %q, not %q", path, st.Origin, origin)
	}
	if err := f(&st, exists); err != nil {
		return err
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return writeDurably(path, append(b, '\n'))
}

func writeDurably(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o600)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ServeHTTP answers POST /add-checkpoint and GET /<origin hash>/checkpoint.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/add-checkpoint" && r.Method == http.MethodPost:
		s.serveAdd(w, r)
	case r.URL.Path == "/add-checkpoint":
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "add-checkpoint takes a POST", http.StatusMethodNotAllowed)
	case strings.HasSuffix(r.URL.Path, "/checkpoint") && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		s.serveCheckpoint(w, strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/"), "/checkpoint"))
	default:
		http.NotFound(w, r)
	}
}

// refusal is an add-checkpoint answered with an error status.
type refusal struct {
	status int
	msg    string
	known  int64 // for 409
}

func (e *refusal) Error() string { return e.msg }

func (s *Server) serveAdd(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestSize))
	var sigs []byte
	origin := ""
	if err != nil {
		err = &refusal{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("request larger than %d bytes", MaxRequestSize)}
	} else {
		sigs, origin, err = s.AddCheckpoint(body)
	}
	var ref *refusal
	switch {
	case err == nil:
		s.told(origin, http.StatusOK, "cosigned")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write(sigs)
	case errors.As(err, &ref) && ref.status == http.StatusConflict:
		s.told(origin, ref.status, ref.msg)
		w.Header().Set("Content-Type", "text/x.tlog.size")
		w.WriteHeader(http.StatusConflict)
		fmt.Fprintf(w, "%d\n", ref.known)
	case errors.As(err, &ref):
		s.told(origin, ref.status, ref.msg)
		http.Error(w, ref.msg, ref.status)
	default:
		s.told(origin, http.StatusInternalServerError, err.Error())
		http.Error(w, "internal error", http.StatusInternalServerError)
	}
}

func (s *Server) told(origin string, status int, detail string) {
	if s.OnRequest != nil {
		s.OnRequest(origin, status, detail)
	}
}

// AddCheckpoint processes one add-checkpoint request body: the
// cosignature lines to answer with, the log's origin, or an error that
// carries the status to answer with.
func (s *Server) AddCheckpoint(body []byte) (sigs []byte, origin string, err error) {
	req, err := ParseAddCheckpoint(body)
	if err != nil {
		return nil, "", &refusal{status: http.StatusBadRequest, msg: err.Error()}
	}
	first, _, _ := bytes.Cut(req.Checkpoint, []byte("\n"))
	origin = string(first)
	st, err := readLog(s.logPath(origin))
	if errors.Is(err, os.ErrNotExist) || err == nil && len(st.Keys) == 0 {
		return nil, origin, &refusal{status: http.StatusNotFound, msg: "unknown log"}
	}
	if err != nil {
		return nil, origin, err
	}
	var vs []note.Verifier
	for _, k := range st.Keys {
		v, err := note.NewVerifier(k)
		if err != nil {
			return nil, origin, fmt.Errorf("log %q: key %q: %v", origin, k, err)
		}
		vs = append(vs, v)
	}
	n, err := note.Open(req.Checkpoint, note.VerifierList(vs...))
	var unverified *note.UnverifiedNoteError
	var invalid *note.InvalidSignatureError
	switch {
	case errors.As(err, &unverified), errors.As(err, &invalid):
		return nil, origin, &refusal{status: http.StatusForbidden, msg: "invalid signature: no valid signature from a key of the log"}
	case err != nil:
		return nil, origin, &refusal{status: http.StatusBadRequest, msg: "malformed checkpoint note: " + err.Error()}
	}
	cp, err := store.ParseCheckpoint([]byte(n.Text))
	if err != nil {
		return nil, origin, &refusal{status: http.StatusBadRequest, msg: err.Error()}
	}
	if req.OldSize > cp.Size {
		return nil, origin, &refusal{status: http.StatusBadRequest, msg: fmt.Sprintf("old size %d is larger than the checkpoint's %d", req.OldSize, cp.Size)}
	}
	if cp.Size == 0 && cp.Root != emptyRoot {
		return nil, origin, &refusal{status: http.StatusUnprocessableEntity, msg: "a checkpoint of size 0 must have the empty tree's root"}
	}
	err = s.update(origin, func(st *logState, exists bool) error {
		if !exists || len(st.Keys) == 0 {
			return &refusal{status: http.StatusNotFound, msg: "unknown log"}
		}
		if req.OldSize != st.Size {
			return &refusal{status: http.StatusConflict, msg: fmt.Sprintf("known tree size %d, not the old size %d", st.Size, req.OldSize), known: st.Size}
		}
		oldRoot, err := tlog.ParseHash(st.Root)
		if err != nil {
			return fmt.Errorf("log %q: stored root: %v", origin, err)
		}
		switch {
		case req.OldSize == 0 && len(req.Proof) > 0:
			return &refusal{status: http.StatusUnprocessableEntity, msg: "bad consistency proof: a proof from size 0 must be empty"}
		case req.OldSize == 0:
		case req.OldSize == cp.Size:
			if len(req.Proof) > 0 || cp.Root != oldRoot {
				return &refusal{status: http.StatusUnprocessableEntity, msg: "bad consistency proof: the same size with another root"}
			}
		default:
			if err := tlog.CheckTree(req.Proof, cp.Size, cp.Root, req.OldSize, oldRoot); err != nil {
				return &refusal{status: http.StatusUnprocessableEntity, msg: "bad consistency proof: " + err.Error()}
			}
		}
		signed, err := note.Sign(&note.Note{Text: n.Text}, s.signer)
		if err != nil {
			return err
		}
		_, lines, _ := bytes.Cut(signed, []byte("\n\n"))
		// Keep the log's verified signatures with the cosignature.
		var kept bytes.Buffer
		kept.WriteString(n.Text + "\n")
		for _, sig := range n.Sigs {
			kept.WriteString(signatureLine(sig))
		}
		kept.Write(lines)
		st.Size, st.Root, st.Checkpoint = cp.Size, cp.Root.String(), kept.String()
		sigs = lines
		return nil
	})
	if err != nil {
		return nil, origin, err
	}
	return sigs, origin, nil
}

// serveCheckpoint answers the monitoring request for the log whose origin
// hashes to hash: its latest checkpoint with the cosignature.
func (s *Server) serveCheckpoint(w http.ResponseWriter, hash string) {
	if len(hash) != 64 || strings.Trim(hash, "0123456789abcdef") != "" {
		http.NotFound(w, nil)
		return
	}
	st, err := readLog(filepath.Join(s.dir, "logs", hash+".json"))
	if err != nil || st.Checkpoint == "" {
		http.Error(w, "no checkpoint cosigned for this log", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, st.Checkpoint)
}

package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// A witness file in the same home catches accidents, but whoever can roll
// the store back can roll the file back too. Cosigners are witnesses
// elsewhere (another host, another user) that speak c2sp.org/tlog-witness:
// after each append the store sends them the new checkpoint with a
// consistency proof from the last one each cosigned, and keeps each
// cosigned checkpoint (the log's signature and the witness's cosignature)
// in a file beside the home's witness. Each seal checks the store extends
// the newest cosigned checkpoint, verified, as it does the witness file.
//
// With a Quorum, an action is allowed only once that many cosigners have
// cosigned the log: a seal that asks for it (SealRequest.RequireWitness)
// first brings the witnesses up to the log as it is, and the gate waits,
// after sealing, for the log that holds its receipt (AwaitWitness). A
// witness that cannot be reached, or that has cosigned a log this store no
// longer extends, then makes every allow a deny.

// ErrWitnessUnreachable reports that fewer witnesses than the quorum
// cosigned the log, none of them because the store is behind it.
var ErrWitnessUnreachable = errors.New("witness quorum not reached")

// Cosigner is a witness elsewhere that cosigns the log's checkpoints
// (c2sp.org/tlog-witness); core/witness.Client is one.
type Cosigner interface {
	// Verifier checks the witness's cosignatures; its name and key hash
	// are those of the witness's signature lines.
	Verifier() note.Verifier
	// Cosign asks the witness to cosign signed, a checkpoint of size
	// signed by the log. known is the size the witness is believed to
	// have cosigned last (0: unknown); prove returns the consistency
	// proof from an older size to size. It returns the witness's
	// cosignature lines, verified, or an error: *AheadError when the
	// witness has cosigned a larger log, an error wrapping ErrRolledBack
	// when its log is not one this log extends.
	Cosign(ctx context.Context, signed []byte, size, known int64, prove func(old int64) (tlog.TreeProof, error)) ([]byte, error)
}

// AheadError is a witness that has cosigned a larger log than the
// checkpoint it was sent: a newer one another process sent, or a log this
// store has lost.
type AheadError struct {
	Witness     string
	Known, Size int64
}

func (e *AheadError) Error() string {
	return fmt.Sprintf("witness %s has cosigned a log of size %d, larger than the checkpoint of size %d sent", e.Witness, e.Known, e.Size)
}

// CosignerError is one witness's failure to cosign.
type CosignerError struct {
	Witness string
	Err     error
}

func (e *CosignerError) Error() string { return "witness " + e.Witness + ": " + e.Err.Error() }
func (e *CosignerError) Unwrap() error { return e.Err }

// QuorumError reports a round of cosigning in which some witness failed:
// Got of the witnesses cosigned the log of Size, Need were required.
type QuorumError struct {
	Need, Got, Of int
	Size          int64
	Failures      []error // a *CosignerError for each witness that failed
	behind        bool    // some witness holds a log this store does not extend
}

func (e *QuorumError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d witnesses cosigned the log of size %d", e.Got, e.Of, e.Size)
	if e.Need > 0 {
		fmt.Fprintf(&b, ", %d required", e.Need)
	}
	for _, f := range e.Failures {
		b.WriteString("; ")
		b.WriteString(f.Error())
	}
	return b.String()
}

// Met reports whether the quorum was reached despite the failures.
func (e *QuorumError) Met() bool { return e.Got >= e.Need }

// Behind reports whether a witness holds a log the store does not extend.
func (e *QuorumError) Behind() bool { return e.behind }

func (e *QuorumError) Unwrap() error {
	if e.behind {
		return ErrRolledBack
	}
	return ErrWitnessUnreachable
}

// cosignRetry is how long a failed round of cosigning stands before the
// witnesses are asked again: a resident gate under a burst of decisions
// asks a witness that is down once, not once a decision. (A variable for
// the tests.)
var cosignRetry = time.Second

// cosignState serializes rounds of cosigning in this process and keeps
// the last failure.
type cosignState struct {
	mu       sync.Mutex
	failedAt time.Time
	failed   error
}

// cachedError is a failure of a round that ran less than cosignRetry ago.
type cachedError struct{ error }

func (e cachedError) Unwrap() error { return e.error }

// CosignedFile is where the newest checkpoint c cosigned is kept: beside
// the home's witness, named after the witness's key.
func (w *Witness) CosignedFile(c Cosigner) string {
	v := c.Verifier()
	return fmt.Sprintf("%s.cosigned.%s.%08x", w.Files[0], fileSafe(v.Name()), v.KeyHash())
}

// fileSafe keeps letters, digits, dot and dash of a key name.
func fileSafe(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-':
			return r
		}
		return '_'
	}, name)
}

// ReadCosignedFile reads and verifies a cosigned checkpoint file: a
// checkpoint of origin signed by the log (logV) and cosigned by the
// witness (cosV). nil, nil when the file does not exist.
func ReadCosignedFile(path, origin string, logV, cosV note.Verifier) (*Checkpoint, []byte, error) {
	return readCosigned(path, origin, logV, cosV, true)
}

func readCosigned(path, origin string, logV, cosV note.Verifier, locked bool) (*Checkpoint, []byte, error) {
	msg, err := readWitnessBytes(path, locked)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	invalid := func(problem string) (*Checkpoint, []byte, error) {
		return nil, nil, &WitnessError{File: path, StoreSize: -1, Problem: problem, err: ErrWitnessInvalid}
	}
	if err != nil {
		return invalid("the cosigned checkpoint cannot be read: " + err.Error())
	}
	cp, err := OpenCosigned(msg, origin, logV, cosV)
	if err != nil {
		return invalid(err.Error())
	}
	return &cp, msg, nil
}

// OpenCosigned verifies that msg is a checkpoint of origin signed by the
// log (logV) and cosigned by the witness (cosV), and parses it.
func OpenCosigned(msg []byte, origin string, logV, cosV note.Verifier) (Checkpoint, error) {
	n, err := note.Open(msg, note.VerifierList(logV, cosV))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("not a checkpoint signed by %s and cosigned by %s: %v", logV.Name(), cosV.Name(), err)
	}
	var logSigned, cosigned bool
	for _, s := range n.Sigs {
		logSigned = logSigned || s.Name == logV.Name() && s.Hash == logV.KeyHash()
		cosigned = cosigned || s.Name == cosV.Name() && s.Hash == cosV.KeyHash()
	}
	if !logSigned || !cosigned {
		return Checkpoint{}, fmt.Errorf("not a checkpoint signed by %s and cosigned by %s", logV.Name(), cosV.Name())
	}
	cp, err := ParseCheckpoint([]byte(n.Text))
	if err != nil {
		return Checkpoint{}, err
	}
	if cp.Origin != origin {
		return Checkpoint{}, fmt.Errorf("a checkpoint of %q, not of %q", cp.Origin, origin)
	}
	return cp, nil
}

// quorumSize is the largest log size at least Quorum cosigners have
// cosigned, by what this process knows: -1 when not that many have.
func quorumSize(cos []*Checkpoint, quorum int) int64 {
	if quorum <= 0 {
		return 1<<63 - 1
	}
	sizes := make([]int64, 0, len(cos))
	for _, cp := range cos {
		if cp != nil {
			sizes = append(sizes, cp.Size)
		}
	}
	if len(sizes) < quorum {
		return -1
	}
	// The quorum-th largest.
	for i := range quorum {
		for j := i + 1; j < len(sizes); j++ {
			if sizes[j] > sizes[i] {
				sizes[i], sizes[j] = sizes[j], sizes[i]
			}
		}
	}
	return sizes[quorum-1]
}

// AwaitWitness returns nil once the witness quorum has cosigned the log
// through size (-1: the log as it is now): at once when it has, else after
// a round of cosigning the log as it is now. Its error wraps
// ErrWitnessUnreachable or, when a witness holds a log this store does not
// extend, ErrRolledBack. Without a quorum it returns nil.
func (s *Store) AwaitWitness(ctx context.Context, size int64) error {
	w := s.wit.w
	if w == nil || w.Quorum == 0 {
		return nil
	}
	if size < 0 {
		n, err := s.LogSize(ctx)
		if err != nil {
			return err
		}
		size = n
	}
	v := s.witnessed(false)
	if v.err != nil {
		return v.err
	}
	if size == 0 || quorumSize(v.cos, w.Quorum) >= size {
		return nil // an empty log needs no witness
	}
	err := s.cosignNow(ctx)
	if v = s.witnessed(false); v.err == nil && quorumSize(v.cos, w.Quorum) >= size {
		return nil
	}
	var qe *QuorumError
	if err == nil || errors.As(err, &qe) && qe.Met() {
		// Cosigned, but not a log as large as size: the store is smaller
		// than the receipt the caller sealed.
		return &WitnessError{StoreSize: -1, Problem: fmt.Sprintf("the witnesses cosigned a log smaller than %d receipts", size), err: ErrRolledBack}
	}
	return err
}

// Cosign brings every cosigner up to the log as it is now, and returns
// nil, or a *QuorumError naming each witness that failed (Met says whether
// the quorum was reached all the same). A round that failed less than a
// second ago is not run again: its error is returned.
func (s *Store) Cosign(ctx context.Context) error {
	if s.wit.w == nil || len(s.wit.w.Cosigners) == 0 {
		return nil
	}
	return s.cosignNow(ctx)
}

func (s *Store) cosignNow(ctx context.Context) error {
	size, err := s.LogSize(ctx)
	if err != nil {
		return err
	}
	// A witness that cosigned more than the log holds now needs no asking.
	v := s.witnessed(false)
	if v.err != nil {
		return v.err
	}
	if cp, file := v.newestCosigned(s.wit.w); cp != nil && cp.Size > size {
		return &WitnessError{File: file, Witnessed: cp, StoreSize: size, err: ErrRolledBack,
			Problem: fmt.Sprintf("the store holds %d receipts, fewer than the %d a witness cosigned: it was wiped, truncated or replaced by an older copy", size, cp.Size)}
	}
	root, err := s.TreeHash(ctx, size)
	if err != nil {
		return err
	}
	return s.cosign(ctx, size, root)
}

// cosign has every cosigner that has not cosigned a log of size yet
// cosign the checkpoint of size and root, in parallel, and keeps each
// cosigned checkpoint in its file.
func (s *Store) cosign(ctx context.Context, size int64, root tlog.Hash) error {
	w := s.wit.w
	if size == 0 {
		return nil // nothing to witness
	}
	cs := &s.cos
	cs.mu.Lock()
	defer cs.mu.Unlock()
	v := s.witnessed(false)
	if v.err != nil {
		return v.err
	}
	todo := false
	for _, cp := range v.cos {
		todo = todo || cp == nil || cp.Size < size
	}
	if !todo {
		return nil
	}
	if cs.failed != nil && time.Since(cs.failedAt) < cosignRetry {
		return cachedError{cs.failed}
	}
	errs := make([]error, len(w.Cosigners))
	var wg sync.WaitGroup
	for i, c := range w.Cosigners {
		if v.cos[i] != nil && v.cos[i].Size >= size {
			continue
		}
		var known int64
		if v.cos[i] != nil {
			known = v.cos[i].Size
		}
		wg.Go(func() {
			if err := s.cosignOne(ctx, i, c, size, root, known); err != nil {
				errs[i] = &CosignerError{Witness: c.Verifier().Name(), Err: err}
			}
		})
	}
	wg.Wait()
	qe := &QuorumError{Need: w.Quorum, Of: len(w.Cosigners), Size: size}
	for _, err := range errs {
		if err == nil {
			qe.Got++
			continue
		}
		qe.Failures = append(qe.Failures, err)
		qe.behind = qe.behind || errors.Is(err, ErrRolledBack)
	}
	if len(qe.Failures) == 0 {
		cs.failed = nil
		return nil
	}
	cs.failed, cs.failedAt = qe, time.Now()
	return qe
}

// cosignOne has cosigner i cosign the checkpoint of size and root. A
// witness that has cosigned a larger log is asked again with the log as
// it is now, when the store holds that many receipts (another process
// appended and cosigned meanwhile); else the store is behind it.
func (s *Store) cosignOne(ctx context.Context, i int, c Cosigner, size int64, root tlog.Hash, known int64) error {
	w := s.wit.w
	for attempt := 0; ; attempt++ {
		cp := Checkpoint{Origin: w.Origin, Size: size, Root: root}
		msg, err := signNote(cp, w.Signer)
		if err != nil {
			return fmt.Errorf("sign: %w", err)
		}
		lines, err := c.Cosign(ctx, msg, size, known, func(old int64) (tlog.TreeProof, error) {
			return s.ProveTree(ctx, old, size)
		})
		var ahead *AheadError
		if errors.As(err, &ahead) {
			cur, serr := s.LogSize(ctx)
			if serr != nil {
				return serr
			}
			if cur < ahead.Known {
				return &WitnessError{File: w.CosignedFile(c), StoreSize: cur, err: ErrRolledBack,
					Problem: fmt.Sprintf("it has cosigned a log of %d receipts, but the store holds %d: the store was wiped, truncated or replaced by an older copy", ahead.Known, cur)}
			}
			if attempt == 0 {
				if root, err = s.TreeHash(ctx, cur); err != nil {
					return err
				}
				size, known = cur, ahead.Known
				continue
			}
		}
		if err != nil {
			return err
		}
		return s.keepCosigned(ctx, i, c, append(msg, lines...), size)
	}
}

// keepCosigned verifies a cosigned checkpoint of size and writes it to
// cosigner i's file, unless that holds a larger one, and, on a team's
// store, to the checkpoints table for the other machines
// (RecordCosigned).
func (s *Store) keepCosigned(ctx context.Context, i int, c Cosigner, msg []byte, size int64) error {
	w := s.wit.w
	cp, err := OpenCosigned(msg, w.Origin, w.Verifier, c.Verifier())
	if err != nil {
		return err
	}
	if err := s.RecordCosigned(ctx, &cp, msg); err != nil {
		return err
	}
	file := w.CosignedFile(c)
	if err := writeWitnessFile(file, msg, size, false, !w.NoSync); err != nil {
		return fmt.Errorf("keep its cosignature in %s: %w", file, err)
	}
	st := &s.wit
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.err == nil && len(st.cos) == len(w.Cosigners) && (st.cos[i] == nil || st.cos[i].Size < size) {
		st.cos[i] = &cp
		if k := len(w.Files) + i; k < len(st.stamps) {
			// What this process wrote is not read back.
			st.stamps[k] = stampOf(file)
		}
	}
	return nil
}

// Cosigned returns, for a log of at least size receipts, the newest
// checkpoint the cosigners cosigned and every cosignature on it: the
// signed note, its size and the names of the witnesses whose signatures
// it carries. A checkpoint cosigned by more witnesses wins over a larger
// one cosigned by fewer. nil when none has cosigned a log of size.
func (s *Store) Cosigned(size int64) ([]byte, *Checkpoint, []string, error) {
	w := s.wit.w
	if w == nil {
		return nil, nil, nil, nil
	}
	v := s.witnessed(true)
	if v.err != nil {
		return nil, nil, nil, v.err
	}
	type group struct {
		cp    *Checkpoint
		notes [][]byte
		names []string
	}
	var best *group
	groups := map[int64]*group{}
	for i, c := range w.Cosigners {
		cp := v.cos[i]
		if cp == nil || cp.Size < size {
			continue
		}
		_, msg, err := ReadCosignedFile(w.CosignedFile(c), w.Origin, w.Verifier, c.Verifier())
		if err != nil {
			return nil, nil, nil, err
		}
		g := groups[cp.Size]
		if g == nil {
			g = &group{cp: cp}
			groups[cp.Size] = g
		}
		if g.cp.Root != cp.Root {
			return nil, nil, nil, fmt.Errorf("two cosigned checkpoints of size %d with different roots", cp.Size)
		}
		g.notes = append(g.notes, msg)
		g.names = append(g.names, c.Verifier().Name())
		if best == nil || len(g.names) > len(best.names) || len(g.names) == len(best.names) && g.cp.Size > best.cp.Size {
			best = g
		}
	}
	if best == nil {
		return nil, nil, nil, nil
	}
	return mergeSignatures(best.notes), best.cp, best.names, nil
}

// mergeSignatures joins notes of one text into one note carrying every
// distinct signature line, in the order first seen.
func mergeSignatures(notes [][]byte) []byte {
	text, _, _ := bytes.Cut(notes[0], []byte("\n\n"))
	out := append(append([]byte{}, text...), "\n\n"...)
	seen := map[string]bool{}
	for _, n := range notes {
		_, sigs, _ := bytes.Cut(n, []byte("\n\n"))
		for _, line := range bytes.SplitAfter(sigs, []byte("\n")) {
			if len(line) > 0 && !seen[string(line)] {
				seen[string(line)] = true
				out = append(out, line...)
			}
		}
	}
	return out
}

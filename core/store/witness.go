package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	jhome "github.com/joulehook/joule/core/home"
)

// The witness keeps the log's newest signed checkpoint outside the
// database, so that a store wiped, truncated, rolled back to an older copy
// or replaced by another store is refused instead of silently trusted. Any
// process that can write the database file can also rewrite the witness
// file beside it, so a local witness catches accidents and careless
// tampering; a witness file on another disk, or a Command that posts each
// checkpoint to another host, is what holds against the store's own user.
//
// After each committed append the store signs a checkpoint of the new log
// and writes it to every witness file (temp file, fsync, rename, under a
// lock file, never replacing a newer checkpoint with an older one) and runs
// Command. Inside every seal's transaction, the store checks that the log
// it is about to extend still holds, at the witnessed size, the witnessed
// root: a log that is smaller, or whose first leaves hash to another root,
// makes the seal fail with ErrRolledBack, and nothing is written.

var (
	// ErrRolledBack reports a store that is smaller than, or not an
	// extension of, the checkpoint last witnessed outside it. Decisions
	// must be refused until the loss is accepted (AcceptLoss).
	ErrRolledBack = errors.New("store rolled back")
	// ErrWitnessInvalid reports a witness file that cannot be trusted:
	// unreadable, not a checkpoint signed by this endpoint, or missing
	// beside a store that records having been witnessed.
	ErrWitnessInvalid = errors.New("witness invalid")
)

// WitnessError says what the witness remembers and what the store holds.
type WitnessError struct {
	File      string      // the witness file
	Witnessed *Checkpoint // what it remembers; nil when unreadable or missing
	StoreSize int64       // the log's size now; -1 when not read
	Bound     string      // for ErrStoreMoved: the location the witness is bound to
	Problem   string
	err       error // ErrRolledBack or ErrWitnessInvalid
}

func (e *WitnessError) Error() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%v: %s", e.err, e.Problem)
	if e.Witnessed != nil {
		fmt.Fprintf(&b, " (witness %s: log size %d, root %s)", e.File, e.Witnessed.Size, e.Witnessed.Root)
	} else if e.File != "" {
		fmt.Fprintf(&b, " (witness %s)", e.File)
	}
	return b.String()
}

func (e *WitnessError) Unwrap() error { return e.err }

// Witness configures where a store's checkpoints are kept outside it.
type Witness struct {
	// Origin names the log in its checkpoints.
	Origin string
	// Signer signs each checkpoint; Verifier checks witnessed ones.
	Signer   note.Signer
	Verifier note.Verifier
	// Files are where the newest checkpoint is kept, each the signed note
	// alone. Files[0] is the home's own witness; the rest are further
	// copies (another disk, a mounted share). A missing file is created
	// at the next append.
	Files []string
	// Command, when set, runs after each append with the signed note on
	// its standard input (posting it to a team's server, say), for at
	// most CommandTimeout (default 10s).
	Command        []string
	CommandTimeout time.Duration
	// Marker names this witness in the store's settings: once a store has
	// been witnessed under Marker, a missing witness file is refused
	// instead of started afresh. Empty: a missing witness is started
	// afresh at the store's current state.
	Marker string
	// NoSync skips the fsync of each witness file before its rename.
	NoSync bool
	// OnError reports a witness file or command that could not be written
	// or run after a decision was committed; nil ignores it.
	OnError func(error)
	// Deferred publishes each checkpoint from a goroutine after Seal
	// returns, instead of before: for a long-running process (the
	// resident gate) that answers as soon as the decision is durable in
	// the store. Checkpoints that queue meanwhile are coalesced (the
	// witness keeps only the newest, and Command runs for it). A crash
	// before one is written leaves the witness behind the store, which
	// the store extends, as a crash between a commit and its publish
	// always could. FlushWitness and Close wait for the queue.
	Deferred bool
	// Cosigners are witnesses elsewhere that cosign each checkpoint
	// (cosign.go); the newest each cosigned is kept in CosignedFile.
	Cosigners []Cosigner
	// Quorum is how many Cosigners must have cosigned the log before an
	// action is allowed (SealRequest.RequireWitness, AwaitWitness); 0:
	// they cosign when they can, and a failure is only reported.
	Quorum int
	// Location names the store this witness is bound to (a path, or a
	// URL without its password): each checkpoint records it, and a
	// store opened at another location is refused with ErrStoreMoved
	// until the move is recorded (AcceptLoss re-binds it).
	Location string
	// Chains are sessions whose heads each checkpoint records (the
	// trust chains, core/trust): a store whose chain is behind what was
	// witnessed lost signed receipts of it (CheckChains).
	Chains []string
}

// watched lists the files a witness reads: its files, then each
// cosigner's.
func (w *Witness) watched() []string {
	files := append([]string(nil), w.Files...)
	for _, c := range w.Cosigners {
		files = append(files, w.CosignedFile(c))
	}
	return files
}

// witnessState is what the store knows of its witness.
type witnessState struct {
	mu     sync.Mutex
	w      *Witness
	loaded bool
	cp     *Checkpoint   // the newest checkpoint witnessed; nil: none
	file   string        // where cp was read or written
	cos    []*Checkpoint // per cosigner, the newest it cosigned; nil: none kept
	err    error         // why the witness could not be read
	// stamps are the witness files as last read or written: a file that
	// changed since (another process, or an edit) is read again.
	stamps []fileStamp
	// queue holds the checkpoint a Deferred witness has yet to publish.
	queue deferredWitness
}

// deferredWitness is the newest checkpoint a Deferred witness has yet to
// publish, and whether a goroutine is publishing.
type deferredWitness struct {
	mu      sync.Mutex
	next    *pendingWitness
	running bool
	idle    *sync.Cond
}

// fileStamp identifies one version of a file: a rename replaces it with a
// new inode, an edit in place changes its time or size.
type fileStamp struct {
	fi  os.FileInfo // nil: the file did not exist
	err bool
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{err: !errors.Is(err, os.ErrNotExist)}
	}
	return fileStamp{fi: fi}
}

func (a fileStamp) same(b fileStamp) bool {
	if a.fi == nil || b.fi == nil {
		return a.fi == nil && b.fi == nil && !a.err && !b.err
	}
	return os.SameFile(a.fi, b.fi) && a.fi.ModTime().Equal(b.fi.ModTime()) && a.fi.Size() == b.fi.Size()
}

// changed reports whether any witness file changed since it was last read
// or written. The caller holds st.mu.
func (st *witnessState) changed() bool {
	files := st.w.watched()
	if len(st.stamps) != len(files) {
		return true
	}
	for i, f := range files {
		if !st.stamps[i].same(stampOf(f)) {
			return true
		}
	}
	return false
}

// SetWitness makes the store check every seal against w and keep w up to
// date after each append. Call it before the store is used.
func (s *Store) SetWitness(w *Witness) error {
	if w == nil {
		s.wit.w = nil
		return nil
	}
	if err := checkLine("origin", w.Origin); err != nil {
		return fmt.Errorf("store: witness: %w", err)
	}
	if w.Signer == nil || w.Verifier == nil || len(w.Files) == 0 {
		return errors.New("store: witness: want a signer, a verifier and at least one file")
	}
	if w.Marker != "" {
		if err := checkID("setting", witnessMarkerKey(w.Marker)); err != nil {
			return fmt.Errorf("store: witness: marker: %w", err)
		}
	}
	if w.Quorum < 0 || w.Quorum > len(w.Cosigners) {
		return fmt.Errorf("store: witness: a quorum of %d out of %d witnesses", w.Quorum, len(w.Cosigners))
	}
	seen := map[string]bool{}
	for _, c := range w.Cosigners {
		v := c.Verifier()
		if v.Name() == w.Verifier.Name() {
			return fmt.Errorf("store: witness: the witness %s has the log's own key name", v.Name())
		}
		if f := w.CosignedFile(c); seen[f] {
			return fmt.Errorf("store: witness: the witness %s is listed twice", v.Name())
		} else {
			seen[f] = true
		}
	}
	s.wit.w = w
	s.wit.loaded = false
	return nil
}

// Witness returns the store's witness configuration, or nil.
func (s *Store) Witness() *Witness { return s.wit.w }

func witnessMarkerKey(m string) string { return "witness:" + m }

// ReadWitnessFile reads and verifies one witness file: nil, nil when it
// does not exist.
func ReadWitnessFile(path, origin string, v note.Verifier) (*Checkpoint, []byte, error) {
	return openWitnessFile(path, origin, v, true)
}

// openWitnessFile is ReadWitnessFile, which takes the file's lock, or, unless
// locked, a read without the lock of a note that is whole (a seal reads
// the witness so; one that does not verify is read again, locked). Either
// way the note's signature is verified before its figures are used.
func openWitnessFile(path, origin string, v note.Verifier, locked bool) (*Checkpoint, []byte, error) {
	msg, err := readWitnessBytes(path, locked)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, &WitnessError{File: path, StoreSize: -1, Problem: "the witness cannot be read: " + err.Error(), err: ErrWitnessInvalid}
	}
	cp, err := OpenCheckpoint(msg, origin, v)
	if err != nil {
		return nil, nil, &WitnessError{File: path, StoreSize: -1, Problem: err.Error(), err: ErrWitnessInvalid}
	}
	return &cp, msg, nil
}

// OpenCheckpoint verifies a signed checkpoint note of origin with v and
// parses it.
func OpenCheckpoint(msg []byte, origin string, v note.Verifier) (Checkpoint, error) {
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("not a checkpoint signed by %s: %v", v.Name(), err)
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

// readWitnessBytes reads a witness file under its lock, shared, so that
// it is never seen half rewritten.
// Unless locked is set, a read that finds a whole note (ending in a
// newline) is taken without the lock: a seal that reads a note torn in a
// way that still parses finds it does not match and reads it again,
// locked and verified.
func readWitnessBytes(path string, locked bool) ([]byte, error) {
	if !locked {
		b, err := readSmall(path)
		if err != nil || bytes.HasSuffix(b, []byte("\n")) {
			return b, err
		}
	} else if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	unlock, err := lockFile(path+".lock", false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return readSmall(path)
}

// readSmall reads a witness file: a regular file of at most 64 KiB (a FIFO
// in its place is refused, never waited on).
func readSmall(path string) ([]byte, error) { return jhome.ReadFile(path, 64<<10) }

// loadWitness reads and verifies every witness file and keeps the newest
// checkpoint, and each cosigner's file. Unless locked, whole notes are
// read without taking their locks. The caller holds s.wit.mu.
func (s *Store) loadWitness(locked bool) {
	st := &s.wit
	w := st.w
	st.loaded, st.cp, st.file, st.err = true, nil, "", nil
	st.cos = make([]*Checkpoint, len(w.Cosigners))
	st.stamps = st.stamps[:0]
	for _, f := range w.watched() {
		st.stamps = append(st.stamps, stampOf(f))
	}
	for _, f := range w.Files {
		cp, _, err := openWitnessFile(f, w.Origin, w.Verifier, locked)
		if err != nil {
			st.err = err
			return
		}
		if cp != nil && (st.cp == nil || cp.Size > st.cp.Size) {
			st.cp, st.file = cp, f
		}
	}
	for i, c := range w.Cosigners {
		cp, _, err := readCosigned(w.CosignedFile(c), w.Origin, w.Verifier, c.Verifier(), locked)
		if err != nil {
			st.err = err
			return
		}
		st.cos[i] = cp
	}
}

// witnessView is what the store knows of its witness at one moment.
type witnessView struct {
	cp   *Checkpoint // the newest checkpoint in a witness file; nil: none
	file string      // where cp was read or written
	cos  []*Checkpoint
	err  error
}

// newestCosigned is the largest checkpoint a cosigner cosigned, and its
// file; nil when none.
func (v witnessView) newestCosigned(w *Witness) (*Checkpoint, string) {
	var best *Checkpoint
	file := ""
	for i, cp := range v.cos {
		if cp != nil && (best == nil || cp.Size > best.Size) {
			best, file = cp, w.CosignedFile(w.Cosigners[i])
		}
	}
	return best, file
}

// witnessed returns what the witness holds, reading its files (their
// signatures verified) the first time, when they changed, or when reload
// is set: then under their locks.
func (s *Store) witnessed(reload bool) witnessView {
	st := &s.wit
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.loaded || reload || st.changed() {
		s.loadWitness(reload)
	}
	return witnessView{cp: st.cp, file: st.file, cos: append([]*Checkpoint(nil), st.cos...), err: st.err}
}

// WitnessState checks the store against its witness now, outside any
// write: the checkpoint witnessed (nil if none), its file, and nil or an
// error wrapping ErrRolledBack or ErrWitnessInvalid.
func (s *Store) WitnessState(ctx context.Context) (*Checkpoint, string, error) {
	if s.wit.w == nil {
		return nil, "", nil
	}
	v := s.witnessed(true)
	cp, file := v.cp, v.file
	if v.err != nil {
		return nil, file, v.err
	}
	err := s.read(ctx, func(tx conn) error {
		size, err := logSize(ctx, tx)
		if err != nil {
			return err
		}
		if err := s.checkCosigned(v, size, hashReader{ctx, tx}); err != nil {
			return err
		}
		if cp == nil {
			return s.witnessMissing(ctx, tx, size)
		}
		if err := s.checkWitnessed(cp, file, size, hashReader{ctx, tx}); err != nil {
			return err
		}
		return s.checkChains(ctx, tx, cp, file)
	})
	return cp, file, err
}

// checkWitnessed checks that a log of size, read through r, extends cp.
func (s *Store) checkWitnessed(cp *Checkpoint, file string, size int64, r tlog.HashReader) error {
	if err := s.wit.w.checkLocation(cp, file, size); err != nil {
		return err
	}
	if size < cp.Size {
		return &WitnessError{File: file, Witnessed: cp, StoreSize: size,
			Problem: fmt.Sprintf("the store holds %d receipts, fewer than the %d witnessed: it was wiped, truncated or replaced by an older copy", size, cp.Size), err: ErrRolledBack}
	}
	root, err := tlog.TreeHash(cp.Size, r)
	if err != nil {
		return err
	}
	if root != cp.Root {
		return &WitnessError{File: file, Witnessed: cp, StoreSize: size,
			Problem: fmt.Sprintf("the store's first %d receipts are not the ones witnessed (root %s): it was replaced by another store or rewritten", cp.Size, root), err: ErrRolledBack}
	}
	return nil
}

// checkCosigned checks that a log of size, read through r, extends the
// newest checkpoint a cosigner cosigned, unless that is the one witnessed
// in the files (checked already).
func (s *Store) checkCosigned(v witnessView, size int64, r tlog.HashReader) error {
	cos, file := v.newestCosigned(s.wit.w)
	if cos == nil || v.cp != nil && v.cp.Size == cos.Size && v.cp.Root == cos.Root {
		return nil
	}
	return s.checkWitnessed(cos, file, size, r)
}

// witnessMissing decides about a store without a witness file: refused
// when its settings record that this witness kept it, else fine (the first
// append starts the witness).
func (s *Store) witnessMissing(ctx context.Context, q querier, size int64) error {
	w := s.wit.w
	if w.Marker == "" {
		return nil
	}
	var v string
	err := q.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = ?`, witnessMarkerKey(w.Marker)).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return &WitnessError{File: w.Files[0], StoreSize: size,
		Problem: fmt.Sprintf("the witness file is missing, but the store records being witnessed there since log size %s", v), err: ErrWitnessInvalid}
}

// pendingWitness is a checkpoint to publish once its transaction commits.
type pendingWitness struct {
	cp    Checkpoint
	force bool // replace a newer witness (AcceptLoss)
}

// witnessTx runs inside a seal's write transaction, after the seals
// appended the log's leaves first..next-1 (read through r): it checks that
// the log they extended still holds what was witnessed, and returns the
// checkpoint to publish after the commit. A failure returns an error and the
// transaction must roll back.
func (s *Store) witnessTx(ctx context.Context, tx conn, r tlog.HashReader, first, next int64) (*pendingWitness, error) {
	w := s.wit.w
	if w == nil || next <= first {
		return nil, nil
	}
	for attempt := 0; ; attempt++ {
		v := s.witnessed(attempt > 0)
		cp, file, err := v.cp, v.file, v.err
		if err == nil {
			err = s.checkCosigned(v, first, r)
		}
		if err == nil && cp == nil {
			err = s.witnessMissing(ctx, tx, first)
			if err == nil && w.Marker != "" {
				// Start the witness at the log before these seals, then
				// record that it was started: a crash after the commit
				// leaves a witness that the store extends.
				if err = s.startWitness(ctx, tx, r, first); err != nil {
					return nil, err
				}
			}
		} else if err == nil {
			err = s.checkWitnessed(cp, file, first, r)
		}
		var we *WitnessError
		if err != nil && errors.As(err, &we) && attempt == 0 {
			// Another process may have accepted a loss and re-anchored
			// the witness since this one read it.
			continue
		}
		if err != nil {
			return nil, err
		}
		break
	}
	root, err := tlog.TreeHash(next, r)
	if err != nil {
		return nil, err
	}
	return &pendingWitness{cp: Checkpoint{Origin: w.Origin, Size: next, Root: root}}, nil
}

// withSpent adds to p, once the transaction's writes are all applied (a
// batch writes its grants last), every grant's spent total, the head of
// each of the witness's Chains and the store's Location.
func (s *Store) withSpent(ctx context.Context, q querier, p *pendingWitness) error {
	if p == nil {
		return nil
	}
	spent, err := spentExtensions(ctx, q)
	if err != nil {
		return err
	}
	w := s.wit.w
	chains, err := chainExtensions(ctx, q, w.Chains)
	if err != nil {
		return err
	}
	p.cp.Extensions = append(spent, chains...)
	if w.Location != "" {
		p.cp.Extensions = append(p.cp.Extensions, locationPrefix+base64.RawURLEncoding.EncodeToString([]byte(w.Location)))
	}
	return nil
}

// spentPrefix starts the witness's extension line for one grant's spent
// total: "joule-spent <grant id> <µJ>".
const spentPrefix = "joule-spent "

// spentExtensions lists every grant's spent total as witness extension
// lines, in the transaction that sealed: a ledger rewritten below what was
// witnessed outside the database is then a store fault on the decision
// path, not only in store check.
func spentExtensions(ctx context.Context, q querier) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, spent_uj FROM grants WHERE spent_uj > 0 ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		var spent int64
		if err := rows.Scan(&id, &spent); err != nil {
			return nil, err
		}
		if checkLine("grant id", id) != nil || strings.ContainsRune(id, ' ') {
			continue // not a grant id joule writes; store check reports it
		}
		out = append(out, spentPrefix+id+" "+strconv.FormatInt(spent, 10))
	}
	return out, rows.Err()
}

// witnessedSpent is what the witness outside the database recorded as
// grant id's spent total, and whether it recorded one.
func (cp *Checkpoint) witnessedSpent(id string) (uint64, bool) {
	for _, e := range cp.Extensions {
		rest, ok := strings.CutPrefix(e, spentPrefix+id+" ")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(rest, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// startWitness writes the first witness of a log of size n and records in
// the store's settings that it is witnessed.
func (s *Store) startWitness(ctx context.Context, tx conn, r tlog.HashReader, n int64) error {
	w := s.wit.w
	root, err := tlog.TreeHash(n, r)
	if err != nil {
		return err
	}
	cp := Checkpoint{Origin: w.Origin, Size: n, Root: root}
	msg, err := signNote(cp, w.Signer)
	if err != nil {
		return fmt.Errorf("witness: sign: %w", err)
	}
	if err := writeWitnessFile(w.Files[0], msg, n, false, !w.NoSync); err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`,
		witnessMarkerKey(w.Marker), strconv.FormatInt(n, 10))
	return err
}

// committed publishes p once its transaction committed: now, or for a
// Deferred witness from the goroutine that publishes its queue. A forced
// checkpoint (AcceptLoss) is always published before Seal returns, after
// the queue.
func (s *Store) committed(p *pendingWitness) {
	if p == nil {
		return
	}
	if !s.wit.w.Deferred || p.force {
		s.FlushWitness()
		s.publish(p)
		return
	}
	q := &s.wit.queue
	q.mu.Lock()
	if q.next == nil || p.cp.Size > q.next.cp.Size {
		q.next = p
	}
	if q.running {
		q.mu.Unlock()
		return
	}
	q.running = true
	q.mu.Unlock()
	go s.drainWitness()
}

func (s *Store) drainWitness() {
	q := &s.wit.queue
	for {
		q.mu.Lock()
		p := q.next
		q.next = nil
		if p == nil {
			q.running = false
			if q.idle != nil {
				q.idle.Broadcast()
			}
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		s.publish(p)
	}
}

// FlushWitness waits until every checkpoint a Deferred witness queued is
// published.
func (s *Store) FlushWitness() {
	q := &s.wit.queue
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.idle == nil {
		q.idle = sync.NewCond(&q.mu)
	}
	for q.running {
		q.idle.Wait()
	}
}

// publish signs p's checkpoint and writes it to every witness, after its
// transaction committed. Failures go to OnError: the decision stands.
func (s *Store) publish(p *pendingWitness) {
	if p == nil {
		return
	}
	w := s.wit.w
	msg, err := signNote(p.cp, w.Signer)
	if err != nil {
		s.witnessFailed(fmt.Errorf("witness: sign: %w", err))
		return
	}
	wrote := false
	for _, f := range w.Files {
		if err := writeWitnessFile(f, msg, p.cp.Size, p.force, !w.NoSync); err != nil {
			s.witnessFailed(fmt.Errorf("witness %s: %w", f, err))
			continue
		}
		wrote = true
	}
	if wrote {
		st := &s.wit
		st.mu.Lock()
		if st.err == nil && (p.force || st.cp == nil || p.cp.Size > st.cp.Size) {
			cp := p.cp
			st.cp, st.file = &cp, w.Files[0]
			// What this process wrote is not read back; a file another
			// process replaced meanwhile is.
			st.stamps = st.stamps[:0]
			for _, f := range w.Files {
				st.stamps = append(st.stamps, stampOf(f))
			}
		}
		st.mu.Unlock()
	}
	if len(w.Command) > 0 {
		if err := runWitnessCommand(w, msg); err != nil {
			s.witnessFailed(err)
		}
	}
	if len(w.Cosigners) > 0 {
		// The witnesses elsewhere cosign the checkpoint without its
		// extension lines: a witness vouches for the tree alone, and the
		// grants' figures are nobody else's business.
		err := s.cosign(context.Background(), p.cp.Size, p.cp.Root)
		var cached cachedError
		if err != nil && !errors.As(err, &cached) {
			s.witnessFailed(err)
		}
	}
}

func signNote(cp Checkpoint, signer note.Signer) ([]byte, error) {
	return note.Sign(&note.Note{Text: string(cp.Text())}, signer)
}

func (s *Store) witnessFailed(err error) {
	if f := s.wit.w.OnError; f != nil {
		f(err)
	}
}

func runWitnessCommand(w *Witness, msg []byte) error {
	timeout := w.CommandTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.Command[0], w.Command[1:]...)
	cmd.Stdin = bytes.NewReader(msg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("witness command %s: %v: %s", w.Command[0], err, clip(bytes.TrimSpace(stderr.Bytes())))
	}
	return nil
}

// writeWitnessFile replaces path's contents with msg, a checkpoint of
// size, unless it already holds a checkpoint at least as large (and force
// is not set). Writers and readers take a lock file beside it (exclusive,
// shared), so concurrent writers never let an older checkpoint replace a
// newer one and a reader never sees a note half written.
//
// An existing file is rewritten in place: one write of a few hundred
// bytes at offset 0, inside one disk sector, then a truncate only if the
// note got shorter. That allocates nothing and renames nothing, so it adds
// no metadata for the store's next fsync to commit; a rename of a new file
// costs about half a decision more (docs/receipts.md, "The witness"). A new
// file, and a forced replacement, are written to a temp file and renamed.
func writeWitnessFile(path string, msg []byte, size int64, force, sync bool) error {
	unlock, err := lockFile(path+".lock", true)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		unlock, err = lockFile(path+".lock", true)
	}
	if err != nil {
		return err
	}
	defer unlock()
	if !force {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err == nil {
			defer f.Close()
			return rewriteWitness(f, msg, size, sync)
		}
		if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	var suffix [6]byte
	rand.Read(suffix[:])
	tmp := path + ".tmp-" + hex.EncodeToString(suffix[:])
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(msg)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// rewriteWitness rewrites the open witness file f in place with msg,
// unless it holds a checkpoint at least as large as size.
func rewriteWitness(f *os.File, msg []byte, size int64, sync bool) error {
	var buf [4096]byte
	n, err := f.ReadAt(buf[:], 0)
	if err != nil && err != io.EOF {
		return err
	}
	if cur, ok := noteSize(buf[:n]); ok && cur >= size {
		return nil
	}
	if _, err := f.WriteAt(msg, 0); err != nil {
		return err
	}
	if n > len(msg) {
		if err := f.Truncate(int64(len(msg))); err != nil {
			return err
		}
	}
	if sync {
		return f.Sync()
	}
	return nil
}

// noteSize reads the tree size of a witness file without checking its
// signature: only to keep the larger of two checkpoints.
func noteSize(msg []byte) (int64, bool) {
	_, rest, ok := bytes.Cut(msg, []byte("\n"))
	if !ok {
		return 0, false
	}
	line, _, ok := bytes.Cut(rest, []byte("\n"))
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(line), 10, 64)
	return n, err == nil && n >= 0
}

// AcceptLoss is the recovery from ErrRolledBack or ErrWitnessInvalid: it
// seals req (whose Build is given the checkpoint witnessed, nil if none,
// and the log as it is now) without checking the witness, then re-anchors
// every witness file at the log that now ends with that receipt, keeping
// each replaced witness file beside it as FILE.lost-UNIXNANO.
func (s *Store) AcceptLoss(ctx context.Context, session string, build func(pos Position, witnessed *Checkpoint, now Checkpoint) ([]byte, error)) (Entry, []string, error) {
	w := s.wit.w
	if w == nil {
		return Entry{}, nil, errors.New("store: accept loss: the store has no witness")
	}
	v := s.witnessed(true)
	witnessed, werr := v.cp, v.err
	if werr != nil && !errors.Is(werr, ErrWitnessInvalid) {
		return Entry{}, nil, werr
	}
	if cos, _ := v.newestCosigned(w); cos != nil && (witnessed == nil || cos.Size > witnessed.Size) {
		witnessed = cos
	}
	var (
		cur  Checkpoint
		kept []string
	)
	req := SealRequest{Session: session, force: true, System: strings.HasPrefix(session, SystemPrefix)}
	req.Build = func(pos Position, _ error) ([]byte, bool, error) {
		env, err := build(pos, witnessed, cur)
		return env, false, err
	}
	req.before = func(ctx context.Context, tx conn, r tlog.HashReader, size int64) error {
		root, err := tlog.TreeHash(size, r)
		if err != nil {
			return err
		}
		cur = Checkpoint{Origin: w.Origin, Size: size, Root: root}
		return nil
	}
	if err := req.check(); err != nil {
		return Entry{}, nil, fmt.Errorf("store: accept loss: %w", err)
	}
	stamp := strconv.FormatInt(time.Now().UnixNano(), 10)
	for _, f := range w.Files {
		if b, err := os.ReadFile(f); err == nil {
			lost := f + ".lost-" + stamp
			if err := os.WriteFile(lost, b, 0o600); err != nil {
				return Entry{}, nil, fmt.Errorf("store: accept loss: keep %s: %w", f, err)
			}
			kept = append(kept, lost)
		}
	}
	// A cosigned checkpoint cannot be re-anchored here: the witness that
	// cosigned it keeps it. Its file is set aside, so that this store is
	// no longer checked against it; the witness itself will refuse the
	// log until its operator deals with it (docs/receipts.md).
	for _, c := range w.Cosigners {
		f := w.CosignedFile(c)
		if _, err := os.Stat(f); err == nil {
			lost := f + ".lost-" + stamp
			if err := os.Rename(f, lost); err != nil {
				return Entry{}, kept, fmt.Errorf("store: accept loss: set aside %s: %w", f, err)
			}
			kept = append(kept, lost)
		}
	}
	s.wit.mu.Lock()
	s.wit.loaded = false
	s.wit.mu.Unlock()
	e, err := s.sealOne(ctx, req)
	if err != nil {
		return Entry{}, kept, fmt.Errorf("store: accept loss: %w", err)
	}
	if w.Marker != "" {
		if err := s.SetSetting(ctx, witnessMarkerKey(w.Marker), strconv.FormatInt(e.Index+1, 10)); err != nil {
			return e, kept, err
		}
	}
	return e, kept, nil
}

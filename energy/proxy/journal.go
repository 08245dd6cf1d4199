package proxy

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/veraison/go-cose"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/energy"
)

// The proxy answers a call before it seals the call's receipt, so that no
// call waits for the store's fsync. The journal makes that safe against a
// proxy that is killed: before a receipt goes to the store, one write(2)
// appends what it will say to the proxy's own journal file, and once it is
// sealed a second write marks it done. The kernel keeps both through the
// death of the process, so the next proxy to start seals whatever a dead one
// answered but did not seal, exactly once (the receipt's nonce tells), and
// gives back the dead proxy's leases. A power loss can still take the last
// writes with it: syncing the journal per call would cost what answering
// first saves.

// Where it can (journal_unix.go), the journal file is mapped into memory
// and a line is copied into the mapping rather than written: the pages are
// the kernel's, so they outlive the process exactly as a write(2) does,
// for a copy instead of a system call per admitted call. The mapped file
// is longer than its lines; the first NUL byte ends them.

// JournalDir is the directory of the journals, inside $JOULE_HOME.
const JournalDir = "proxy-journal"

// journalCompactAt is the size past which a journal with nothing pending is
// emptied.
const journalCompactAt = 1 << 20

// journalLine is one line of a journal: a receipt about to be sealed, or
// the nonce of one that was.
type journalLine struct {
	Seal *pendingSeal `json:"seal,omitempty"`
	Done string       `json:"done,omitempty"`
}

// pendingSeal is what a call's receipt will say, as the proxy passes it to
// the recorder.
type pendingSeal struct {
	Written time.Time     `json:"written"`
	Record  energy.Record `json:"record"`
}

// lineBuffers hold journal lines being encoded.
var lineBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// journal is one proxy's journal, locked for as long as the proxy runs.
// Its lines are in one file, the current segment. Past journalCompactAt
// bytes, the lines still pending are copied into a second file, which
// becomes the current one, and the first is emptied: under a load that
// never leaves nothing pending the journal stays bounded, and its pages
// are reused rather than faulted in afresh (a new page of a shared file
// mapping costs more than the line written to it).
type journal struct {
	mu sync.Mutex
	*segment
	spare    *segment            // the other file, empty; nil until first needed
	spareErr error               // why the spare could not be opened: not tried again
	pending  map[string]lineSpan // nonces written and not yet done, at their latest line
	// held is done lines not yet written: they go out with the next
	// line, in its write. One lost to a kill costs nothing, since recovery
	// skips a receipt the session already has under its nonce.
	held  []byte
	moved []byte // pending lines being copied to the spare
	// encMu guards batch, the buffer beginAll encodes a round's lines in,
	// and ends, where each of them ends.
	encMu sync.Mutex
	batch []byte
	ends  []int
}

// lineSpan is where a line is in the current segment.
type lineSpan struct{ off, n int64 }

// segment is one journal file, locked, and mapped where the system can.
type segment struct {
	f    *os.File
	path string
	size int64
	// m is the file mapped into memory, lines from its start and NUL
	// bytes after them; nil where lines are written to f instead.
	m []byte
}

// mapJournal maps a new journal's file; a test replaces it to have lines
// written instead.
var mapJournal = mapFile

// journalMapSize is the length a journal file is mapped with at first;
// it doubles when lines still pending fill it.
const journalMapSize = 4 << 20

// openJournal creates a journal of this process in dir and locks it.
func openJournal(dir string) (*journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var id [6]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	s, err := openSegment(filepath.Join(dir, strconv.Itoa(os.Getpid())+"-"+hex.EncodeToString(id[:])+".jsonl"))
	if err != nil {
		return nil, err
	}
	return &journal{segment: s, pending: map[string]lineSpan{}}, nil
}

// openSegment creates the journal file path and locks it.
func openSegment(path string) (*segment, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("locking journal %s: %w", path, err)
	}
	s := &segment{f: f, path: path}
	if m, err := mapJournal(f, journalMapSize); err == nil {
		s.m = m
	}
	return s, nil
}

// write appends first then then, in one write(2) or one copy into the
// mapping, and returns the offset first landed at. first's array may be
// reused for the write.
func (s *segment) write(first, then []byte) (int64, error) {
	start := s.size
	if s.m == nil {
		out := append(first, then...)
		w, err := s.f.Write(out)
		s.size += int64(w)
		return start, err
	}
	if need := s.size + int64(len(first)+len(then)); need > int64(len(s.m)) {
		size := int64(len(s.m))
		for size < need {
			size *= 2
		}
		m, err := remapFile(s.f, s.m, size)
		if err != nil {
			return start, fmt.Errorf("growing the journal to %d bytes: %w", size, err)
		}
		s.m = m
	}
	s.size += int64(copy(s.m[s.size:], first))
	s.size += int64(copy(s.m[s.size:], then))
	return start, nil
}

// line is the line at sp.
func (s *segment) line(sp lineSpan) ([]byte, error) {
	if s.m != nil {
		return s.m[sp.off : sp.off+sp.n], nil
	}
	b := make([]byte, sp.n)
	_, err := s.f.ReadAt(b, sp.off)
	return b, err
}

// empty removes every line. A mapped file keeps its length in NULs, and is
// cleared from its start: killed meanwhile, it reads as empty.
func (s *segment) empty() error {
	if s.m != nil {
		clear(s.m[:s.size])
	} else if err := s.f.Truncate(0); err != nil {
		return err
	}
	s.size = 0
	return nil
}

// close unmaps and closes the file, as the death of the process would.
func (s *segment) close() {
	if s.m != nil {
		unmapFile(s.m)
		s.m = nil
	}
	s.f.Close()
	s.f = nil
}

// closeLocked closes the journal's files as the death of the process
// would; j.mu is held.
func (j *journal) closeLocked() {
	j.segment.close()
	if j.spare != nil {
		j.spare.close()
	}
}

// begin journals rec, which must carry its nonce, before it is sealed.
func (j *journal) begin(rec energy.Record) error {
	bp := lineBuffers.Get().(*[]byte)
	defer lineBuffers.Put(bp)
	b, err := appendSeal((*bp)[:0], time.Now(), &rec, "")
	if err != nil {
		return err
	}
	*bp = b
	return j.write(b, []energy.Record{rec}, []int{len(b)})
}

// beginAll journals recs, each carrying its nonce, in one write of whole
// lines. The sealing loop journals its rounds here, into a buffer the
// journal keeps: a round's lines are up to a few hundred kB, which a
// sync.Pool would hand back to the collector at every cycle.
func (j *journal) beginAll(recs []energy.Record) error {
	if len(recs) == 0 {
		return nil
	}
	j.encMu.Lock()
	defer j.encMu.Unlock()
	b, ends, now := j.batch[:0], j.ends[:0], time.Now()
	for i := range recs {
		var err error
		if b, err = appendSeal(b, now, &recs[i], ""); err != nil {
			return err
		}
		ends = append(ends, len(b))
	}
	j.batch, j.ends = b, ends
	return j.write(b, recs, ends)
}

// write appends lines, the held-back done lines first, and marks recs
// pending at their lines, which end at ends within lines: a process that
// dies leaves whole lines.
func (j *journal) write(lines []byte, recs []energy.Record, ends []int) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return errors.New("journal closed")
	}
	at, err := j.flushLocked(lines)
	if err != nil {
		return err
	}
	for i := range recs {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		j.pending[recs[i].Nonce] = lineSpan{at + int64(start), int64(ends[i] - start)}
	}
	return nil
}

// done marks the receipt of nonce sealed.
func (j *journal) done(nonce string) error { return j.doneAll([]string{nonce}) }

// doneAll marks the receipts of nonces sealed. Done lines are held back
// and written with the next begin (or once 4 kB are held): losing them in
// a crash only makes the next proxy find the receipts already sealed.
func (j *journal) doneAll(nonces []string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return errors.New("journal closed")
	}
	for _, n := range nonces {
		delete(j.pending, n)
	}
	if j.size+int64(len(j.held)) > journalCompactAt {
		// Only the pending lines are still needed: nothing held is.
		if len(j.pending) == 0 {
			if err := j.segment.empty(); err == nil {
				j.held = j.held[:0]
				return nil
			}
		} else if err := j.rotateLocked(); err == nil {
			return nil
		}
		// Kept, and written to: past the bound rather than lost.
	}
	for _, n := range nonces {
		j.held = appendDone(j.held, n)
	}
	if len(j.held) < 4<<10 {
		return nil
	}
	_, err := j.flushLocked(nil)
	return err
}

// rotateLocked copies the pending lines, in the order they were written,
// into the spare segment, makes it the current one and empties the other;
// j.mu is held. Killed at any point, the journal's files hold every
// pending line at least once; recovery seals each receipt once whatever
// number of files names it.
func (j *journal) rotateLocked() error {
	if j.spare == nil {
		if j.spareErr != nil {
			return j.spareErr
		}
		s, err := openSegment(strings.TrimSuffix(j.path, ".jsonl") + ".1.jsonl")
		if err != nil {
			j.spareErr = err
			return err
		}
		j.spare = s
	}
	type pendingLine struct {
		nonce string
		at    lineSpan
	}
	order := make([]pendingLine, 0, len(j.pending))
	for n, at := range j.pending {
		order = append(order, pendingLine{n, at})
	}
	slices.SortFunc(order, func(a, b pendingLine) int { return cmp.Compare(a.at.off, b.at.off) })
	buf := j.moved[:0]
	for i := range order {
		line, err := j.segment.line(order[i].at)
		if err != nil {
			return err
		}
		order[i].at.off = int64(len(buf))
		buf = append(buf, line...)
	}
	j.moved = buf
	base, err := j.spare.write(buf, nil)
	if err != nil {
		j.spare.empty()
		return err
	}
	for _, p := range order {
		j.pending[p.nonce] = lineSpan{base + p.at.off, p.at.n}
	}
	j.segment, j.spare = j.spare, j.segment
	j.held = j.held[:0]
	return j.spare.empty()
}

// flushLocked writes the done lines held back, then lines, and returns
// where lines start; j.mu is held.
func (j *journal) flushLocked(lines []byte) (int64, error) {
	if j.f == nil || len(j.held)+len(lines) == 0 {
		return j.size, nil
	}
	start, err := j.segment.write(j.held, lines)
	start += int64(len(j.held))
	j.held = j.held[:0]
	return start, err
}

// close closes the journal and removes its files when nothing in them is
// pending; otherwise the next proxy seals what is.
func (j *journal) close() (pending int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return 0
	}
	pending = len(j.pending)
	if pending == 0 {
		os.Remove(j.path)
	} else {
		j.flushLocked(nil)
	}
	if j.spare != nil && (pending == 0 || j.spare.size == 0) {
		os.Remove(j.spare.path)
	}
	j.closeLocked()
	return pending
}

// Recovered is what Recover did.
type Recovered struct {
	Journals int // journals of dead proxies read and removed
	Sealed   int // receipts sealed from them
	Already  int // receipts they listed that had been sealed before the proxy died
	Leases   int // leases of dead proxies given back
}

// Recover seals the receipts that proxies which died left unsealed in their
// journals in dir, each exactly once, then gives back those proxies' leases
// and removes their journals. A journal whose proxy is still running is
// locked and left alone. Run it before a proxy starts taking calls.
func Recover(ctx context.Context, dir string, rec *energy.Recorder, ledger Ledger) (Recovered, error) {
	var r Recovered
	paths, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(paths) == 0 {
		return r, err
	}
	sort.Strings(paths)
	for _, path := range paths {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if errors.Is(err, os.ErrNotExist) {
			continue // another proxy recovered it meanwhile
		}
		if err != nil {
			return r, err
		}
		if err := lockFile(f); err != nil {
			f.Close()
			if errors.Is(err, errLocked) {
				continue // a live proxy's
			}
			return r, fmt.Errorf("locking journal %s: %w", path, err)
		}
		err = recoverJournal(ctx, f, rec, ledger, &r)
		if err == nil {
			// Removed while locked: another proxy that opened it
			// meanwhile finds it gone or locks an orphan with nothing in it.
			err = os.Remove(path)
			r.Journals++
		}
		f.Close()
		if err != nil {
			return r, fmt.Errorf("recovering journal %s: %w", path, err)
		}
	}
	return r, nil
}

func recoverJournal(ctx context.Context, f *os.File, rec *energy.Recorder, ledger Ledger, r *Recovered) error {
	var (
		order   []string
		pending = map[string]*pendingSeal{}
		leases  = map[int64]bool{}
	)
	sc := bufio.NewScanner(untilNUL{f})
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var l journalLine
		if err := json.Unmarshal(line, &l); err != nil {
			// Only a torn last line (a power loss) can be damaged: what
			// it named was never sealed from here nor marked done.
			continue
		}
		switch {
		case l.Seal != nil:
			if !core.ValidNonce(l.Seal.Record.Nonce) {
				continue
			}
			if pending[l.Seal.Record.Nonce] == nil {
				order = append(order, l.Seal.Record.Nonce)
			}
			pending[l.Seal.Record.Nonce] = l.Seal
			if d := l.Seal.Record.Draw; d != nil {
				leases[d.Reservation] = true
			}
		case l.Done != "":
			delete(pending, l.Done)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	// Each session's receipts sealed since its earliest pending line are
	// read once.
	earliest := map[string]time.Time{}
	for _, ps := range pending {
		if t, ok := earliest[ps.Record.Session]; !ok || ps.Written.Before(t) {
			earliest[ps.Record.Session] = ps.Written
		}
	}
	sealedBySession := map[string]map[string]bool{}
	for _, nonce := range order {
		ps := pending[nonce]
		if ps == nil {
			continue
		}
		sealed, ok := sealedBySession[ps.Record.Session]
		if !ok {
			var err error
			if sealed, err = sealedNonces(ctx, rec.Store, ps.Record.Session, earliest[ps.Record.Session]); err != nil {
				return err
			}
			sealedBySession[ps.Record.Session] = sealed
		}
		if sealed[nonce] {
			r.Already++
			continue
		}
		withDraw := ps.Record
		_, _, err := rec.Seal(ctx, withDraw)
		if err != nil && withDraw.Draw != nil && !errors.Is(err, store.ErrLocked) {
			// The lease is gone (released as stale, say): seal the receipt
			// alone, saying so, as a live proxy does.
			alone := ps.Record
			alone.Draw = nil
			alone.Note = ps.Record.Note + "; sealed after the proxy died, and charging the call's lease failed: " + err.Error()
			_, _, err = rec.Seal(ctx, alone)
		}
		if err != nil {
			return err
		}
		r.Sealed++
	}
	for id := range leases {
		if err := ledger.Release(ctx, id); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		r.Leases++
	}
	return nil
}

// sealedNonces returns the nonces of session's receipts sealed since a
// journal line written at written: a receipt is sealed after its line, so
// only those are read (with a minute of clock slack), found by bisection
// from the session's end, since receipts are sealed in sequence order.
func sealedNonces(ctx context.Context, st *store.Store, session string, written time.Time) (map[string]bool, error) {
	nonces := map[string]bool{}
	last, err := lastSeq(ctx, st, session)
	if err != nil || last == 0 {
		return nonces, err
	}
	since := written.Add(-time.Minute)
	lo, hi := uint64(0), last // the first one sealed since is in (lo, hi]
	for lo+1 < hi {
		mid := lo + (hi-lo)/2
		es, err := st.SessionRange(ctx, session, mid-1, 1)
		if err != nil {
			return nil, err
		}
		if len(es) == 0 || !es[0].Time.Before(since) {
			hi = mid
		} else {
			lo = mid
		}
	}
	for after := lo; ; {
		es, err := st.SessionRange(ctx, session, after, 256)
		if err != nil || len(es) == 0 {
			return nonces, err
		}
		for _, e := range es {
			for _, n := range noncesOf(e.Envelope) {
				nonces[n] = true
			}
			after = e.Seq
		}
	}
}

func lastSeq(ctx context.Context, st *store.Store, session string) (uint64, error) {
	infos, err := st.Sessions(ctx)
	if err != nil {
		return 0, err
	}
	for _, in := range infos {
		if in.ID == session {
			return in.Count, nil
		}
	}
	return 0, nil
}

// noncesOf are the nonces of an efficiency receipt's envelope, its calls'
// included. The envelope comes from this store; its signature is not what
// is asked here.
func noncesOf(envelope []byte) []string {
	var msg cose.Sign1Message
	if err := msg.UnmarshalCBOR(envelope); err != nil {
		return nil
	}
	a, err := receipts.Decode(msg.Payload)
	if err != nil || a.Efficiency == nil {
		return nil
	}
	return a.Efficiency.Nonces()
}

// untilNUL reads r up to its first NUL byte: a mapped journal's lines end
// there.
type untilNUL struct{ r io.Reader }

func (u untilNUL) Read(p []byte) (int, error) {
	n, err := u.r.Read(p)
	if i := bytes.IndexByte(p[:n], 0); i >= 0 {
		return i, io.EOF
	}
	return n, err
}

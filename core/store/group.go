package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/mod/sumdb/tlog"
)

// Group commit: the decisions of many goroutines share one transaction and
// one sync. A Seal that finds no transaction in progress runs its own;
// Seals that arrive meanwhile queue, and the next transaction takes them
// all (up to maxGroup). Inside it one whose Build fails (or whose envelope
// is a duplicate) is left out alone while the others commit: on SQLite the
// group is one batch (batch.go), which a decision joins only once it has
// succeeded; on PostgreSQL, and on SQLite when a decision fails after
// writing, each decision runs in a savepoint. Each still sees the positions and grant state
// the decisions before it in the group left: the same outcomes, in the same
// order, as separate transactions, for one fsync. On SQLite this turns
// "one writer, one fsync per decision" into one fsync per group; on
// PostgreSQL, one round of lock waits and one WAL flush per group.

// maxGroup bounds one group, so a Build that is slow for some reason holds
// the lock for a bounded time.
const maxGroup = 64

type sealCall struct {
	ctx  context.Context
	req  SealRequest
	done chan struct{}
	e    Entry
	err  error
}

// sealGroup queues the Seals of one Store.
type sealGroup struct {
	mu      sync.Mutex
	pending []*sealCall
	running bool
	grouped atomic.Int64 // decisions sealed in groups of two or more
	// resealed counts groups sealed again in savepoints after one of
	// their decisions failed having written (see batch.go).
	resealed atomic.Int64
	off      bool // one transaction per Seal: the baseline benchmarks compare with
	// savepoints seals groups the old way on SQLite too, each decision in
	// a savepoint: what tests compare batches with.
	savepoints bool
}

// seal runs req in the next group and waits for its outcome.
func (g *sealGroup) seal(ctx context.Context, s *Store, req SealRequest) (Entry, error) {
	if g.off {
		return s.sealOne(ctx, req)
	}
	g.mu.Lock()
	if !g.running && len(g.pending) == 0 {
		// Nobody is writing: no one to share a transaction with.
		g.running = true
		g.mu.Unlock()
		e, err := s.sealOne(ctx, req)
		g.next(s)
		return e, err
	}
	c := &sealCall{ctx: ctx, req: req, done: make(chan struct{})}
	g.pending = append(g.pending, c)
	lead := !g.running
	if lead {
		g.running = true
	}
	g.mu.Unlock()
	if lead {
		g.runGroup(s)
	}
	<-c.done
	return c.e, c.err
}

// next starts the group that queued behind the transaction that just
// ended, or marks the queue idle.
func (g *sealGroup) next(s *Store) {
	g.mu.Lock()
	if len(g.pending) == 0 {
		g.running = false
		g.mu.Unlock()
		return
	}
	g.mu.Unlock()
	go g.runGroup(s)
}

// runGroup seals the queued calls in one transaction, then hands over.
func (g *sealGroup) runGroup(s *Store) {
	g.mu.Lock()
	calls := g.pending
	if len(calls) > maxGroup {
		calls = calls[:maxGroup:maxGroup]
	}
	g.pending = g.pending[len(calls):]
	g.mu.Unlock()

	live := calls[:0:0]
	for _, c := range calls {
		if err := c.ctx.Err(); err != nil {
			c.err = err
			close(c.done)
			continue
		}
		live = append(live, c)
	}
	switch len(live) {
	case 0:
	case 1:
		c := live[0]
		c.e, c.err = s.sealOne(c.ctx, c.req)
		close(c.done)
	default:
		s.sealGroup(live)
		g.grouped.Add(int64(len(live)))
	}
	g.next(s)
}

// MaxSealBatch bounds the decisions SealBatch commits in one transaction.
const MaxSealBatch = 256

// SealBatch seals reqs, in order, with the outcome each would have had
// from Seal called one after another: its own position, debit outcome and
// error (errs[i], nil when entries[i] was sealed). They are committed
// together, up to MaxSealBatch in one transaction and one sync, rather than
// by as many goroutines waiting on Seal's group commit: for a caller that
// already holds many decisions to seal (a metering proxy's finished calls).
// Every decision's ctx is ctx; a decision the store could not commit (its
// lock timed out, say) gets that error, as it would from Seal.
func (s *Store) SealBatch(ctx context.Context, reqs []SealRequest) (entries []Entry, errs []error) {
	entries = make([]Entry, len(reqs))
	errs = make([]error, len(reqs))
	var calls []*sealCall
	var at []int
	for i, req := range reqs {
		if err := req.check(); err != nil {
			errs[i] = fmt.Errorf("store: seal: %w", err)
			continue
		}
		if req.RequireWitness {
			if err := s.AwaitWitness(ctx, -1); err != nil {
				errs[i] = fmt.Errorf("store: seal session %q: %w", req.Session, err)
				continue
			}
		}
		calls = append(calls, &sealCall{ctx: ctx, req: req, done: make(chan struct{})})
		at = append(at, i)
	}
	for len(calls) > 0 {
		n := min(len(calls), MaxSealBatch)
		chunk := calls[:n]
		if err := ctx.Err(); err != nil {
			for _, c := range chunk {
				c.err = err
			}
		} else if n == 1 {
			chunk[0].e, chunk[0].err = s.sealOne(ctx, chunk[0].req)
		} else {
			s.sealGroup(chunk)
			s.group.grouped.Add(int64(n))
		}
		for k, c := range chunk {
			i := at[k]
			if c.err != nil {
				errs[i] = fmt.Errorf("store: seal session %q: %w", c.req.Session, c.err)
			} else {
				entries[i] = c.e
			}
		}
		calls, at = calls[n:], at[n:]
	}
	return entries, errs
}

// sealGroup seals calls in one transaction: on SQLite as one batch
// (batch.go), falling back to a savepoint per decision when a decision
// fails after writing; on PostgreSQL always a savepoint per decision.
func (s *Store) sealGroup(calls []*sealCall) {
	reqs := make([]SealRequest, len(calls))
	for i, c := range calls {
		reqs[i] = c.req
	}
	entries := make([]Entry, len(calls))
	errs := make([]error, len(calls))
	// The group is not any one caller's: it is bounded by the lock
	// timeout, and a caller whose context ends meanwhile still gets the
	// outcome of what was done in its name.
	var (
		err error
		wit *pendingWitness
	)
	if !s.pg && !s.group.savepoints {
		err = s.write(context.Background(), func(ctx context.Context, tx conn) error {
			return s.sealBatch(ctx, tx, reqs, entries, errs, &wit)
		})
	}
	if !s.pg && errors.Is(err, errSavepoints) {
		s.group.resealed.Add(1)
	}
	if s.pg || s.group.savepoints || errors.Is(err, errSavepoints) {
		err = s.write(context.Background(), func(ctx context.Context, tx conn) error {
			if err := s.sealSavepoints(ctx, tx, reqs, entries, errs); err != nil {
				return err
			}
			var err error
			if wit, err = s.witnessGroup(ctx, tx, hashReader{ctx, tx}, entries, errs); err != nil {
				return err
			}
			return s.withSpent(ctx, tx, wit)
		})
	}
	if err == nil {
		s.committed(wit)
	}
	for i, c := range calls {
		if err != nil {
			c.err = err
		} else {
			c.e, c.err = entries[i], errs[i]
		}
		close(c.done)
	}
}

// sealBatch seals reqs as one batch, setting entries[i] or errs[i] for
// each. A decision that fails without having written anything is left out
// of the batch; one that fails after writing returns errSavepoints.
func (s *Store) sealBatch(ctx context.Context, tx conn, reqs []SealRequest, entries []Entry, errs []error, wit **pendingWitness) error {
	clear(entries)
	clear(errs)
	*wit = nil
	b := newBatch(s, tx)
	for i, req := range reqs {
		e, err := b.seal(ctx, req)
		if err == nil {
			entries[i] = e
			continue
		}
		if !perCall(err) {
			return err
		}
		if b.wrote {
			return errSavepoints
		}
		errs[i] = err
	}
	var err error
	if *wit, err = s.witnessGroup(ctx, tx, b, entries, errs); err != nil {
		return err
	}
	if err := b.flush(ctx); err != nil {
		if perCall(err) {
			// Not the store's failure but a row's: find out whose.
			return fmt.Errorf("%w: %w", errSavepoints, err)
		}
		return err
	}
	return s.withSpent(ctx, tx, *wit)
}

// sealSavepoints seals reqs in one transaction, each in its own savepoint,
// setting entries[i] or errs[i] for each.
func (s *Store) sealSavepoints(ctx context.Context, tx conn, reqs []SealRequest, entries []Entry, errs []error) error {
	clear(entries)
	clear(errs)
	if _, err := lockSeal(ctx, tx, reqs); err != nil {
		return err
	}
	for i, req := range reqs {
		if _, err := tx.ExecContext(ctx, `SAVEPOINT seal`); err != nil {
			return err
		}
		// Grants are read afresh: an earlier decision of the group
		// may have spent from them.
		e, err := s.sealTx(ctx, tx, req, nil)
		if err != nil {
			if _, rbErr := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT seal`); rbErr != nil {
				// The transaction itself is gone (a lost
				// connection, say): the whole group fails.
				return errors.Join(err, rbErr)
			}
			if !perCall(err) {
				return err
			}
			errs[i] = err
		} else {
			entries[i] = e
		}
		if _, err := tx.ExecContext(ctx, `RELEASE SAVEPOINT seal`); err != nil {
			return err
		}
	}
	return nil
}

// witnessGroup is witnessTx for the seals of a group that succeeded.
func (s *Store) witnessGroup(ctx context.Context, tx conn, r tlog.HashReader, entries []Entry, errs []error) (*pendingWitness, error) {
	if s.wit.w == nil {
		return nil, nil
	}
	first, next := int64(-1), int64(-1)
	for i, e := range entries {
		if errs[i] != nil {
			continue
		}
		if first < 0 || e.Index < first {
			first = e.Index
		}
		if e.Index+1 > next {
			next = e.Index + 1
		}
	}
	if first < 0 {
		return nil, nil
	}
	return s.witnessTx(ctx, tx, r, first, next)
}

// perCall reports whether an error, after its savepoint was rolled back,
// belongs to that one decision of a group (its Build failed, its envelope
// was a duplicate or too big, its reservation was gone) rather than to the
// store: corruption, a busy or locked database, a serialization failure or
// a lost connection fail the whole group, as they would each decision
// alone, and the group is retried or reported as one.
func perCall(err error) bool {
	switch {
	case errors.Is(err, ErrCorrupt), errors.Is(err, ErrLocked), errors.Is(err, ErrUnavailable),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		isBusy(err), pgRetry(err), pgConnLost(err):
		return false
	}
	return true
}

package proxy

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/joulehook/joule/core/store"
)

// A durable reservation per call put an fsync'd transaction in front of
// every model call. Instead the proxy reserves a lease once for many calls
// of one grant chain and admits each call against it in memory; a call's
// receipt then draws its share from the lease in the transaction that seals
// it (store.Draw). Everything another process can see stays true: the lease
// is a real reservation, so hooks and other proxies spending the same
// grants never see budget this proxy has promised away.
const (
	// leaseCalls is how many calls of the estimate at hand a new lease is
	// sized for at least. The next lease is reserved in the background once
	// half of the current one is promised, so calls rarely wait for the
	// store.
	leaseCalls = 64
	// A busy chain gets leases sized for the calls it admits in
	// leaseHorizon, up to leaseMaxCalls: the background reservation then
	// has half that long to get through the store's write lock, which a
	// burst of receipts being sealed holds for tens of milliseconds at a
	// time, before the current lease runs dry and calls wait for it.
	leaseHorizon  = time.Second
	leaseMaxCalls = 4096
	// leaseIdle is how long an unused lease holds budget before it is
	// given back.
	leaseIdle = 2 * time.Second
	// LeaseMaxAge bounds how long any lease admits calls, so a reservation
	// older than StaleLease can only be a crashed proxy's (or one under a
	// single call that has streamed for an hour).
	LeaseMaxAge = time.Minute
	StaleLease  = 60 * LeaseMaxAge
)

// lease is one durable reservation, shared in memory by the calls admitted
// against it.
type lease struct {
	key     string
	id      int64  // the store reservation
	size    uint64 // what the reservation still holds in the store
	held    uint64 // estimates of admitted calls not yet sealed
	calls   int    // admitted calls not yet sealed
	retired bool   // no more admissions; released once calls reaches 0
	used    time.Time
	made    time.Time
}

func (l *lease) free() uint64 { return l.size - l.held }

// chainKey names the grant chain grants (root first) in leases' maps.
func chainKey(grants []string) string { return strings.Join(grants, "\x00") }

// chain is the leasing state of one grant chain.
type chain struct {
	grants []string
	cur    *lease        // admitting calls
	next   *lease        // reserved ahead, admitting once cur is short
	refill chan struct{} // non-nil while a reservation is being made; closed when done
	err    error         // what the last reservation made for a waiting call failed with
	tight  time.Time     // until then, reserve per call: the budget is nearly spent

	admitted uint64    // calls admitted since rateFrom: the chain's pace
	rateFrom time.Time // when the last reservation was started
}

// ticket is one admitted call's claim on a lease.
type ticket struct {
	l     *lease
	est   uint64
	ended *bool // the call's response ended (leases.ending); guarded by leases.mu
}

// leases admits calls against per-chain leases.
type leases struct {
	ledger Ledger
	logf   func(string, ...any)

	mu     sync.Mutex
	chains map[string]*chain
	stop   chan struct{}
	closed sync.Once
	reaper sync.WaitGroup
	bg     sync.WaitGroup // reservations and releases in flight

	// Calls per chain whose responses ended but whose receipts are not
	// yet sealed, and a channel closed (then replaced) whenever one is.
	ended   map[string]int
	settled chan struct{}
}

// settleWait bounds how long a call the budget cannot pay waits for
// answered calls of its chain to be sealed and give back what they did
// not use.
const settleWait = 10 * time.Second

func newLeases(ledger Ledger, logf func(string, ...any)) *leases {
	ls := &leases{ledger: ledger, logf: logf, chains: map[string]*chain{}, stop: make(chan struct{}),
		ended: map[string]int{}, settled: make(chan struct{})}
	ls.reaper.Add(1)
	go ls.reap()
	return ls
}

// admit claims est µJ for a call paid by grants. It waits for the store
// only when no lease of the chain can cover the call; a call the grants
// cannot pay fails with the store's *BudgetError.
func (ls *leases) admit(ctx context.Context, grants []string, est uint64) (ticket, error) {
	key := chainKey(grants)
	ls.mu.Lock()
	defer ls.mu.Unlock()
	var c *chain
	waited := false
	for {
		if c == nil || ls.chains[key] != c {
			// New, or given back while this call waited.
			if c = ls.chains[key]; c == nil {
				c = &chain{grants: grants, rateFrom: time.Now()}
				ls.chains[key] = c
			}
		}
		if l := c.cur; l != nil && l.free() >= est && time.Since(l.made) < LeaseMaxAge {
			l.held += est
			l.calls++
			l.used = time.Now()
			c.admitted++
			if l.free() < l.size/2 && c.next == nil && c.refill == nil && time.Now().After(c.tight) {
				ls.reserveLocked(c, key, est, false)
			}
			return ticket{l, est, new(bool)}, nil
		}
		if c.next != nil {
			if c.cur != nil {
				ls.retireLocked(c.cur)
			}
			c.cur, c.next = c.next, nil
			continue
		}
		if c.refill == nil {
			if waited && c.err != nil {
				err := c.err
				c.err = nil
				return ticket{}, err
			}
			ls.reserveLocked(c, key, est, true)
		}
		done := c.refill
		waited = true
		ls.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			ls.mu.Lock()
			return ticket{}, ctx.Err()
		}
		ls.mu.Lock()
	}
}

// free is the most one call of grants can be admitted for from the
// chain's leases without a new reservation, for fitting a call to them.
func (ls *leases) free(grants []string) uint64 {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	c := ls.chains[chainKey(grants)]
	if c == nil {
		return 0
	}
	var f uint64
	for _, l := range []*lease{c.cur, c.next} {
		if l != nil && !l.retired && time.Since(l.made) < LeaseMaxAge {
			f = max(f, l.free())
		}
	}
	return f
}

// reserveLocked reserves the chain's next lease in the background. needed
// says a call is waiting for it: then a failure is reported to that call,
// and the proxy's own idle lease is given back first if that is what
// stands in the way.
func (ls *leases) reserveLocked(c *chain, key string, est uint64, needed bool) {
	done := make(chan struct{})
	c.refill, c.err = done, nil
	calls := c.leaseCalls(time.Now())
	chunk := est * calls
	// Near the end of a budget a lease would strand what it does not use,
	// so there each call reserves exactly its own estimate, as if there
	// were no leases at all.
	if chunk/calls != est || time.Now().Before(c.tight) {
		chunk = est
	}
	idle := c.cur
	ls.bg.Add(1)
	go func() {
		defer ls.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), lockedRetryFor)
		defer cancel()
		reserve := func(amount uint64) (id int64, err error) {
			err = retryLocked(func() (err error) { id, err = ls.ledger.Reserve(ctx, c.grants, amount); return err })
			return id, err
		}
		id, err := reserve(chunk)
		var be *store.BudgetError
		if small := est * leaseCalls; errors.As(err, &be) && chunk > small && small/leaseCalls == est {
			// The chain's pace asked for more than the budget has left,
			// which does not yet mean the budget is nearly spent.
			chunk = small
			id, err = reserve(chunk)
		}
		if errors.As(err, &be) && chunk > est {
			ls.mu.Lock()
			c.tight = time.Now().Add(leaseIdle)
			ls.mu.Unlock()
			if !needed {
				ls.finishReserve(c, nil, nil, done)
				return
			}
			chunk = est
			id, err = reserve(chunk)
		}
		if errors.As(err, &be) && needed && ls.giveBackIdle(c, idle) {
			id, err = reserve(chunk)
		}
		if err != nil {
			if needed {
				ls.finishReserve(c, nil, err, done)
			} else {
				ls.logf("reserve the next lease: %v", err)
				ls.finishReserve(c, nil, nil, done)
			}
			return
		}
		now := time.Now()
		ls.finishReserve(c, &lease{key: key, id: id, size: chunk, used: now, made: now}, nil, done)
	}()
}

// leaseCalls is how many calls the chain's next lease is sized for: what
// it would admit in leaseHorizon at its pace since the previous
// reservation, bounded to [leaseCalls, leaseMaxCalls]. A pace is only
// trusted from half a minimal lease of calls, so one large call cannot
// pass for a burst. Integer arithmetic: the size of a reservation is a
// budget decision.
func (c *chain) leaseCalls(now time.Time) uint64 {
	n := uint64(leaseCalls)
	if el := now.Sub(c.rateFrom); el > 0 && c.admitted >= leaseCalls/2 {
		pace := uint64(leaseMaxCalls) // also keeps the product below from overflowing
		if c.admitted <= leaseMaxCalls {
			pace = c.admitted * uint64(leaseHorizon) / uint64(el)
		}
		n = min(max(n, pace), leaseMaxCalls)
	}
	c.admitted, c.rateFrom = 0, now
	return n
}

func (ls *leases) finishReserve(c *chain, l *lease, err error, done chan struct{}) {
	ls.mu.Lock()
	if l != nil {
		if c.next != nil || ls.chains[l.key] != c {
			// Given back meanwhile: this one is not wanted either.
			l.retired = true
			ls.mu.Unlock()
			ls.release(l)
			ls.mu.Lock()
		} else {
			c.next = l
		}
	}
	c.err = err
	c.refill = nil
	ls.mu.Unlock()
	close(done)
}

// giveBackIdle releases the chain's current lease if nothing is in flight
// on it, reporting whether it did.
func (ls *leases) giveBackIdle(c *chain, l *lease) bool {
	ls.mu.Lock()
	if l == nil || c.cur != l || l.calls > 0 {
		ls.mu.Unlock()
		return false
	}
	c.cur = nil
	l.retired = true
	ls.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), lockedRetryFor)
	defer cancel()
	if err := retryLocked(func() error { return ls.ledger.Release(ctx, l.id) }); err != nil {
		ls.logf("release lease %d: %v", l.id, err)
		return false
	}
	return true
}

// draw is what the call's receipt takes from its lease.
func (t ticket) draw(actual uint64) *store.Draw {
	return &store.Draw{Reservation: t.l.id, ReleaseUJ: t.est, ChargeUJ: actual}
}

// done records that the call's receipt was sealed (drawn is whether its
// draw was part of it) and gives back a retired lease nobody uses.
func (ls *leases) done(t ticket, drawn bool) {
	ls.mu.Lock()
	l := t.l
	if t.ended != nil && *t.ended {
		if ls.ended[l.key]--; ls.ended[l.key] <= 0 {
			delete(ls.ended, l.key)
		}
		close(ls.settled)
		ls.settled = make(chan struct{})
	}
	l.held -= t.est
	l.calls--
	if drawn {
		l.size -= min(t.est, l.size)
	}
	release := l.retired && l.calls == 0
	ls.mu.Unlock()
	if release {
		ls.release(l)
	}
}

// ending records that t's call was answered: its receipt is about to be
// sealed, giving back what the call did not use.
func (ls *leases) ending(t ticket) {
	if t.l == nil || t.ended == nil {
		return
	}
	ls.mu.Lock()
	if !*t.ended {
		*t.ended = true
		ls.ended[t.l.key]++
	}
	ls.mu.Unlock()
}

// waitEnding waits, until by at the latest, for an answered call of
// grants to be sealed. It reports false at once when there is none, or
// when ctx or by ended the wait: only then is a short budget final.
func (ls *leases) waitEnding(ctx context.Context, grants []string, by time.Time) bool {
	ls.mu.Lock()
	n, settled := ls.ended[chainKey(grants)], ls.settled
	ls.mu.Unlock()
	if n == 0 {
		return false
	}
	t := time.NewTimer(time.Until(by))
	defer t.Stop()
	select {
	case <-settled:
		return true
	case <-ctx.Done():
	case <-t.C:
	}
	return false
}

// retireLocked stops admissions on l and releases it once its calls are
// sealed (now, in the background, if there are none).
func (ls *leases) retireLocked(l *lease) {
	l.retired = true
	if l.calls == 0 {
		ls.bg.Add(1)
		go func() {
			defer ls.bg.Done()
			ls.release(l)
		}()
	}
}

func (ls *leases) release(l *lease) {
	ctx, cancel := context.WithTimeout(context.Background(), lockedRetryFor)
	defer cancel()
	err := retryLocked(func() error { return ls.ledger.Release(ctx, l.id) })
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		ls.logf("release lease %d: %v", l.id, err)
	}
}

// reap gives back leases nobody has used for leaseIdle, so budget a proxy
// no longer needs returns to everyone else.
func (ls *leases) reap() {
	defer ls.reaper.Done()
	tick := time.NewTicker(leaseIdle / 2)
	defer tick.Stop()
	for {
		select {
		case <-ls.stop:
			return
		case <-tick.C:
		}
		ls.mu.Lock()
		for key, c := range ls.chains {
			if c.refill != nil || c.cur != nil && time.Since(c.cur.used) < leaseIdle {
				continue
			}
			ls.dropLocked(key, c)
		}
		ls.mu.Unlock()
	}
}

// dropLocked retires every lease of the chain and forgets it.
func (ls *leases) dropLocked(key string, c *chain) {
	for _, l := range []*lease{c.cur, c.next} {
		if l != nil {
			ls.retireLocked(l)
		}
	}
	c.cur, c.next = nil, nil
	delete(ls.chains, key)
}

// giveBack retires every lease; those with calls in flight are released
// when their last call is sealed, the others now.
func (ls *leases) giveBack() {
	ls.mu.Lock()
	for key, c := range ls.chains {
		ls.dropLocked(key, c)
	}
	ls.mu.Unlock()
	ls.bg.Wait() // the releases just started, and any reservation in flight
}

// close stops the reaper and gives every lease back.
func (ls *leases) close() {
	ls.closed.Do(func() { close(ls.stop) })
	ls.reaper.Wait()
	ls.giveBack()
}

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
	// sized for.
	leaseCalls = 32
	// leaseIdle is how long an unused lease holds budget before it is
	// given back.
	leaseIdle = 2 * time.Second
)

// lease is one durable reservation, shared in memory by the calls admitted
// against it.
type lease struct {
	key     string
	grants  []string
	id      int64  // the store reservation
	size    uint64 // what the reservation still holds in the store
	held    uint64 // estimates of admitted calls not yet sealed
	calls   int    // admitted calls not yet sealed
	retired bool   // no more admissions; released once calls reaches 0
	used    time.Time
}

// ticket is one admitted call's claim on a lease.
type ticket struct {
	l   *lease
	est uint64
}

// leases admits calls against per-chain leases.
type leases struct {
	ledger Ledger
	logf   func(string, ...any)

	mu     sync.Mutex
	active map[string]*lease
	tight  map[string]time.Time // chains reserving per call until then
	stop   chan struct{}
	closed sync.Once
	bg     sync.WaitGroup // the reaper and releases in flight
}

func newLeases(ledger Ledger, logf func(string, ...any)) *leases {
	ls := &leases{ledger: ledger, logf: logf, active: map[string]*lease{}, tight: map[string]time.Time{}, stop: make(chan struct{})}
	ls.bg.Add(1)
	go ls.reap()
	return ls
}

// admit claims est µJ for a call paid by grants. It reserves a new lease
// only when the current one cannot cover the call; a call the grants
// cannot pay fails with the store's *BudgetError.
func (ls *leases) admit(ctx context.Context, grants []string, est uint64) (ticket, error) {
	key := strings.Join(grants, "\x00")
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l := ls.active[key]; l != nil && l.size-l.held >= est {
		l.held += est
		l.calls++
		l.used = time.Now()
		return ticket{l, est}, nil
	}
	// The reservation is made under the lock so that concurrent calls of
	// one chain wait for one new lease instead of each making their own.
	// Near the end of a budget a lease would strand what it does not use,
	// so there each call reserves exactly its own estimate, as if there
	// were no leases at all.
	chunk := est * leaseCalls
	if chunk/leaseCalls != est || time.Now().Before(ls.tight[key]) {
		chunk = est
	}
	id, err := ls.ledger.Reserve(ctx, grants, chunk)
	var be *store.BudgetError
	if errors.As(err, &be) && chunk > est {
		ls.tight[key] = time.Now().Add(leaseIdle)
		chunk = est
		id, err = ls.ledger.Reserve(ctx, grants, chunk)
	}
	if errors.As(err, &be) && ls.releaseIdleLocked(ctx, key) {
		// This proxy's own lease held what the call needs.
		id, err = ls.ledger.Reserve(ctx, grants, chunk)
	}
	if err != nil {
		return ticket{}, err
	}
	if old := ls.active[key]; old != nil {
		ls.retireLocked(old)
	}
	l := &lease{key: key, grants: grants, id: id, size: chunk, held: est, calls: 1, used: time.Now()}
	ls.active[key] = l
	return ticket{l, est}, nil
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

func (ls *leases) retireLocked(l *lease) {
	l.retired = true
	if ls.active[l.key] == l {
		delete(ls.active, l.key)
	}
	if l.calls == 0 {
		ls.bg.Add(1)
		go func() {
			defer ls.bg.Done()
			ls.release(l)
		}()
	}
}

// releaseIdleLocked retires the chain's lease if nothing is in flight on
// it and releases it now, reporting whether it did.
func (ls *leases) releaseIdleLocked(ctx context.Context, key string) bool {
	l := ls.active[key]
	if l == nil || l.calls > 0 {
		return false
	}
	delete(ls.active, key)
	l.retired = true
	if err := ls.ledger.Release(ctx, l.id); err != nil {
		ls.logf("release lease %d: %v", l.id, err)
		return false
	}
	return true
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
	defer ls.bg.Done()
	tick := time.NewTicker(leaseIdle / 2)
	defer tick.Stop()
	for {
		select {
		case <-ls.stop:
			return
		case <-tick.C:
		}
		ls.mu.Lock()
		for _, l := range ls.active {
			if time.Since(l.used) >= leaseIdle {
				ls.retireLocked(l)
			}
		}
		ls.mu.Unlock()
	}
}

// giveBack retires every lease; those with calls in flight are released
// when their last call is sealed, the others now.
func (ls *leases) giveBack() {
	ls.mu.Lock()
	var idle []*lease
	for _, l := range ls.active {
		l.retired = true
		delete(ls.active, l.key)
		if l.calls == 0 {
			idle = append(idle, l)
		}
	}
	ls.mu.Unlock()
	for _, l := range idle {
		ls.release(l)
	}
}

// close stops the reaper and gives every lease back.
func (ls *leases) close() {
	ls.closed.Do(func() { close(ls.stop) })
	ls.giveBack()
	ls.bg.Wait()
}

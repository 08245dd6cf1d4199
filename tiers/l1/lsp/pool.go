package lsp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Servers stay resident: starting typescript-language-server or pyright and
// letting it read a project is most of a request's cost, so a session is
// kept per (workspace, server) and reused by the next request, which sends
// only what changed (didChange). A pool bounds how many run and how long one
// may sit idle, and Close ends them all.

// Pool keeps language servers running between requests. Its zero value is
// usable, with the default bounds.
type Pool struct {
	Idle time.Duration // an unused server is shut down after this; 0: DefaultIdle
	Max  int           // servers running at once; 0: DefaultMax
	// StateDir, when set, holds one file per process listing its running
	// servers, for joule doctor (which runs in another process).
	StateDir string

	mu      sync.Mutex
	entries map[poolKey]*entry
	closed  bool
}

// DefaultIdle and DefaultMax bound a Pool whose fields are zero.
const (
	DefaultIdle = 10 * time.Minute
	DefaultMax  = 4
)

// Default is the pool L1's requests use.
var Default = &Pool{}

type poolKey struct{ root, server string }

type entry struct {
	key      poolKey
	s        *session
	sem      chan struct{} // held by the request using s
	started  time.Time
	lastUsed time.Time
	busy     bool
	gone     bool // removed from the pool; close when released
	timer    *time.Timer
}

// Running is one pooled server, as joule doctor shows it.
type Running struct {
	Server   string    `json:"server"`
	Root     string    `json:"root"`
	PID      int       `json:"pid"`
	Started  time.Time `json:"started"`
	LastUsed time.Time `json:"last_used"`
	Busy     bool      `json:"busy"`
}

func (p *Pool) idle() time.Duration {
	if p.Idle > 0 {
		return p.Idle
	}
	return DefaultIdle
}

func (p *Pool) max() int {
	if p.Max > 0 {
		return p.Max
	}
	return DefaultMax
}

// acquire returns a running, initialized session of srv in root, started or
// reused, for the caller's use alone until it calls release. release(false)
// keeps the server for the next request; release(true) shuts it down (the
// request failed in a way that may leave the server in an unknown state).
func (p *Pool) acquire(ctx context.Context, srv Server, root string) (*session, func(discard bool), error) {
	real, err := realRoot(root)
	if err != nil {
		return nil, nil, err
	}
	key := poolKey{real, srv.Name}
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return p.unpooled(ctx, srv, real)
		}
		if p.entries == nil {
			p.entries = map[poolKey]*entry{}
		}
		e := p.entries[key]
		if e == nil {
			if len(p.entries) >= p.max() && !p.evictLocked() {
				p.mu.Unlock()
				return p.unpooled(ctx, srv, real) // every slot is busy
			}
			e = &entry{key: key, sem: make(chan struct{}, 1), started: time.Now(), busy: true}
			e.sem <- struct{}{}
			p.entries[key] = e
			p.mu.Unlock()
			s, err := openServer(ctx, srv, real)
			p.mu.Lock()
			if err != nil {
				delete(p.entries, key)
				<-e.sem
				p.mu.Unlock()
				return nil, nil, err
			}
			e.s = s
			p.mu.Unlock()
			p.saveState()
			return s, p.releaser(e), nil
		}
		p.mu.Unlock()
		select {
		case e.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		p.mu.Lock()
		if e.gone || e.s == nil || e.s.c.exited() {
			// evicted, failed to start, or the server died while idle
			if p.entries[key] == e {
				delete(p.entries, key)
			}
			dead := e.s != nil && !e.gone
			e.gone = true
			p.mu.Unlock()
			<-e.sem
			if dead {
				e.s.close()
			}
			continue
		}
		e.busy = true
		if e.timer != nil {
			e.timer.Stop()
		}
		p.mu.Unlock()
		p.saveState()
		return e.s, p.releaser(e), nil
	}
}

// unpooled starts a session that is shut down when released.
func (p *Pool) unpooled(ctx context.Context, srv Server, root string) (*session, func(bool), error) {
	s, err := openServer(ctx, srv, root)
	if err != nil {
		return nil, nil, err
	}
	return s, func(bool) { s.close() }, nil
}

func (p *Pool) releaser(e *entry) func(bool) {
	var once sync.Once
	return func(discard bool) {
		once.Do(func() {
			p.mu.Lock()
			e.busy = false
			e.lastUsed = time.Now()
			closeIt := discard || e.gone || p.closed || e.s.c.exited()
			if closeIt {
				if p.entries[e.key] == e {
					delete(p.entries, e.key)
				}
				e.gone = true
			} else {
				idle := p.idle()
				e.timer = time.AfterFunc(idle, func() { p.expire(e) })
			}
			p.mu.Unlock()
			<-e.sem
			if closeIt {
				e.s.close()
			}
			p.saveState()
		})
	}
}

// expire shuts e down if it is still idle.
func (p *Pool) expire(e *entry) {
	p.mu.Lock()
	if e.busy || e.gone || time.Since(e.lastUsed) < p.idle() {
		p.mu.Unlock()
		return
	}
	select {
	case e.sem <- struct{}{}:
	default: // being acquired right now
		p.mu.Unlock()
		return
	}
	e.gone = true
	if p.entries[e.key] == e {
		delete(p.entries, e.key)
	}
	p.mu.Unlock()
	e.s.close()
	<-e.sem
	p.saveState()
}

// evictLocked shuts down the least recently used idle server, reporting
// whether there was one. p.mu is held.
func (p *Pool) evictLocked() bool {
	var lru *entry
	for _, e := range p.entries {
		if !e.busy && e.s != nil && (lru == nil || e.lastUsed.Before(lru.lastUsed)) {
			lru = e
		}
	}
	if lru == nil {
		return false
	}
	select {
	case lru.sem <- struct{}{}:
	default:
		return false
	}
	lru.gone = true
	delete(p.entries, lru.key)
	if lru.timer != nil {
		lru.timer.Stop()
	}
	go func() { lru.s.close(); <-lru.sem; p.saveState() }()
	return true
}

// Close shuts every pooled server down and waits for them; sessions in use
// are shut down when released. Later requests start servers of their own.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	var idle []*entry
	for k, e := range p.entries {
		delete(p.entries, k)
		if e.timer != nil {
			e.timer.Stop()
		}
		if e.busy || e.s == nil {
			e.gone = true
			continue
		}
		select {
		case e.sem <- struct{}{}:
			e.gone = true
			idle = append(idle, e)
		default:
			e.gone = true
		}
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range idle {
		wg.Add(1)
		go func() { defer wg.Done(); e.s.close(); <-e.sem }()
	}
	wg.Wait()
	p.saveState()
}

// Running lists the pool's servers, by workspace then server.
func (p *Pool) Running() []Running {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Running
	for _, e := range p.entries {
		if e.s == nil {
			continue
		}
		out = append(out, Running{Server: e.key.server, Root: e.key.root, PID: e.s.c.cmd.Process.Pid,
			Started: e.started, LastUsed: e.lastUsed, Busy: e.busy})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Root != out[j].Root {
			return out[i].Root < out[j].Root
		}
		return out[i].Server < out[j].Server
	})
	return out
}

// saveState writes Running to StateDir/<pid>.json (removing it when none
// run), for joule doctor.
func (p *Pool) saveState() {
	if p.StateDir == "" {
		return
	}
	f := filepath.Join(p.StateDir, strconv.Itoa(os.Getpid())+".json")
	rs := p.Running()
	if len(rs) == 0 {
		_ = os.Remove(f)
		return
	}
	b, err := json.Marshal(rs)
	if err != nil || os.MkdirAll(p.StateDir, 0o700) != nil {
		return
	}
	tmp := f + ".tmp"
	if os.WriteFile(tmp, b, 0o600) == nil {
		_ = os.Rename(tmp, f)
	}
}

// StateDir is where the pools of joule's processes under home record their
// running servers.
func StateDir(home string) string { return filepath.Join(home, "lsp") }

// ReadState lists the servers other processes' pools report in dir,
// skipping processes that have ended.
func ReadState(dir string) []Running {
	ents, _ := os.ReadDir(dir)
	var out []Running
	for _, de := range ents {
		pid, err := strconv.Atoi(trimExt(de.Name()))
		if err != nil || !alive(pid) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			continue
		}
		var rs []Running
		if json.Unmarshal(b, &rs) == nil {
			out = append(out, rs...)
		}
	}
	return out
}

func trimExt(n string) string {
	if filepath.Ext(n) != ".json" {
		return ""
	}
	return n[:len(n)-len(".json")]
}

func realRoot(root string) (string, error) {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	return filepath.Abs(real)
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

// Resident reports whether srv runs for root in the pool, idle or busy.
func (p *Pool) Resident(srv Server, root string) bool {
	real, err := realRoot(root)
	if err != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entries[poolKey{real, srv.Name}]
	return e != nil && e.s != nil && !e.gone && !e.s.c.exited()
}

// Warm starts srv for root in the background, unless it is not installed,
// runs or is starting already, or the pool has no slot it could free; the
// server is given a first request, so that it has read the workspace when
// the next request comes.
func (p *Pool) Warm(srv Server, root string) {
	real, err := realRoot(root)
	if err != nil {
		return
	}
	if _, err := Look(srv.Name); err != nil {
		return
	}
	p.mu.Lock()
	free := len(p.entries) < p.max()
	for _, e := range p.entries {
		free = free || !e.busy && e.s != nil
	}
	if p.closed || p.entries[poolKey{real, srv.Name}] != nil || !free {
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		s, release, err := p.acquire(ctx, srv, real)
		if err != nil {
			return
		}
		// any request waits for the workspace's first load
		err = s.c.call(ctx, "workspace/symbol", map[string]any{"query": "joule"}, nil)
		release(err != nil)
	}()
}

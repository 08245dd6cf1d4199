package mcpserver

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// subscriptions tells subscribed clients of new receipts. Receipts are
// sealed by any joule process (a hook, the proxy, the ACP agent) into the
// shared store, so while anyone is subscribed the store is polled: the log
// size first (one indexed read), and the session heads only when it grew.
type subscriptions struct {
	s    *Server
	mu   sync.Mutex
	by   map[string]*subscriber // MCP session id → its subscriptions
	seen map[string]uint64      // receipt session → receipt count last seen
	size int64                  // log size last seen
	run  bool                   // the poller is running
	wake chan struct{}
	stop chan struct{}
	once sync.Once
}

type subscriber struct {
	cs   server.ClientSession
	uris map[string]bool
}

func newSubscriptions(s *Server, hooks *server.Hooks) *subscriptions {
	m := &subscriptions{s: s, by: map[string]*subscriber{}, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		m.add(ctx, server.ClientSessionFromContext(ctx), req.Params.URI)
	})
	hooks.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		m.remove(server.ClientSessionFromContext(ctx), req.Params.URI)
	})
	// Modern clients (2026-07-28) name their subscriptions in subscriptions/listen.
	hooks.AddBeforeSubscriptionsListen(func(ctx context.Context, _ any, req *mcp.SubscriptionsListenRequest) {
		cs := server.ClientSessionFromContext(ctx)
		for _, uri := range req.Params.Notifications.ResourceSubscriptions {
			m.add(ctx, cs, uri)
		}
	})
	hooks.AddAfterSubscriptionsListen(func(ctx context.Context, _ any, req *mcp.SubscriptionsListenRequest, _ *mcp.SubscriptionsListenResult) {
		cs := server.ClientSessionFromContext(ctx)
		for _, uri := range req.Params.Notifications.ResourceSubscriptions {
			m.remove(cs, uri)
		}
	})
	hooks.AddOnUnregisterSession(func(ctx context.Context, cs server.ClientSession) {
		m.mu.Lock()
		delete(m.by, cs.SessionID())
		m.mu.Unlock()
	})
	return m
}

// target is the receipt session a URI follows: the session for its summary
// and receipt list, "*" for URIs that change with any receipt (the session
// list, the checkpoint, the grants' ledger), "" for URIs that never change
// (the steward, a single receipt).
func target(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "joule" {
		return ""
	}
	switch u.Host {
	case "sessions":
		p := strings.TrimPrefix(u.EscapedPath(), "/")
		if p == "" {
			return "*"
		}
		parts := strings.Split(p, "/")
		if len(parts) > 2 || len(parts) == 2 && parts[1] != "receipts" {
			return "" // a single receipt never changes
		}
		id, err := url.PathUnescape(parts[0])
		if err != nil {
			return ""
		}
		return id
	case "checkpoint", "grants":
		return "*"
	}
	return ""
}

func (m *subscriptions) add(ctx context.Context, cs server.ClientSession, uri string) {
	if cs == nil || target(uri) == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	sub := m.by[cs.SessionID()]
	if sub == nil {
		sub = &subscriber{cs: cs, uris: map[string]bool{}}
		m.by[cs.SessionID()] = sub
	}
	sub.uris[uri] = true
	if !m.run {
		// Start from the store as it is now: what is sealed next is news.
		m.snapshot(ctx)
		m.run = true
		go m.poll()
	}
}

func (m *subscriptions) remove(cs server.ClientSession, uri string) {
	if cs == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if sub := m.by[cs.SessionID()]; sub != nil {
		delete(sub.uris, uri)
		if len(sub.uris) == 0 {
			delete(m.by, cs.SessionID())
		}
	}
}

// snapshot records the log size and session heads; m.mu is held.
func (m *subscriptions) snapshot(ctx context.Context) {
	size, err := m.s.store.LogSize(ctx)
	if err != nil {
		return
	}
	sessions, err := m.s.store.Sessions(ctx)
	if err != nil {
		return
	}
	m.size = size
	m.seen = make(map[string]uint64, len(sessions))
	for _, si := range sessions {
		m.seen[si.ID] = si.Count
	}
}

// poke makes the poller look now (after this process sealed a receipt).
func (m *subscriptions) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *subscriptions) close() { m.once.Do(func() { close(m.stop) }) }

// poll runs while there are subscribers.
func (m *subscriptions) poll() {
	t := time.NewTicker(m.s.cfg.Poll)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		case <-m.wake:
		}
		if !m.check() {
			return
		}
	}
}

// check notifies subscribers of sessions that have new receipts. It reports
// false, stopping the poller, when nobody is subscribed any more.
func (m *subscriptions) check() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m.mu.Lock()
	if len(m.by) == 0 {
		m.run = false
		m.mu.Unlock()
		return false
	}
	last := m.size
	m.mu.Unlock()
	size, err := m.s.store.LogSize(ctx)
	if err != nil || size == last {
		return true
	}
	sessions, err := m.s.store.Sessions(ctx)
	if err != nil {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := map[string]bool{}
	for _, si := range sessions {
		if m.seen[si.ID] != si.Count {
			changed[si.ID] = true
			m.seen[si.ID] = si.Count
		}
	}
	m.size = size
	if len(changed) == 0 {
		return true
	}
	for _, sub := range m.by {
		for uri := range sub.uris {
			if t := target(uri); t == "*" || changed[t] {
				notify(sub.cs, uri)
			}
		}
	}
	return true
}

// notify sends notifications/resources/updated without ever blocking: a
// client that does not read its notifications loses them, not the server.
func notify(cs server.ClientSession, uri string) {
	n := mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: mcp.MethodNotificationResourceUpdated,
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{"uri": uri}},
		},
	}
	if !cs.Initialized() {
		return
	}
	select {
	case cs.NotificationChannel() <- n:
	default:
	}
}

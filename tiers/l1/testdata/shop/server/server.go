// Package server serves the shop over HTTP.
package server

import (
	"fmt"
	"net/http"
	"strings"

	"example.com/shop/inventory"
	"example.com/shop/pricing"
)

// Server answers the shop's HTTP requests.
type Server struct {
	store *inventory.Store
	rules pricing.Config
	Addr  string
}

// NewServer returns a server over a store.
func NewServer(store *inventory.Store, addr string) *Server {
	return &Server{store: store, rules: pricing.New(), Addr: addr}
}

// ServeHTTP answers GET /items/SKU.
func (srv *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sku := strings.TrimPrefix(r.URL.Path, "/items/")
	it, err := srv.store.Get(sku)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	fmt.Fprintf(w, "%s: %d in stock at %d cents\n", it.Name, it.Quantity, pricing.Price(srv.rules, it, 1))
}

// handleHealth answers the health check.
func handleHealth(w http.ResponseWriter, _ *http.Request) {
	fmt.Fprintln(w, "ok")
}

// Routes returns the server's handler.
func (srv *Server) Routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/items/", srv)
	mux.HandleFunc("/healthz", handleHealth)
	return mux
}

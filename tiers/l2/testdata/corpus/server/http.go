// Package server exposes the shop over HTTP.
package server

import (
	"encoding/json"
	"net/http"

	"example.com/shop/billing"
	"example.com/shop/inventory"
)

// Server answers the shop's HTTP API.
type Server struct {
	Stock  *inventory.Stock
	Secret string
}

// New returns a server over stock whose requests must carry secret.
func New(stock *inventory.Stock, secret string) *Server {
	return &Server{Stock: stock, Secret: secret}
}

type checkoutRequest struct {
	Lines []billing.Line `json:"lines"`
}

// ServeHTTP handles POST /checkout: it authenticates the bearer token,
// validates the order, reserves stock and replies with the total.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !checkToken(r.Header.Get("Authorization"), s.Secret) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	var req checkoutRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := billing.Validate(req.Lines); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, l := range req.Lines {
		sku, err := inventory.ParseSKU(l.SKU)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := s.Stock.Reserve(sku, l.Qty); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
	}
	total, err := billing.ComputeTotal(req.Lines, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"total": total})
}

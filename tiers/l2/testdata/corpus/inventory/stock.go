// Package inventory tracks how many units of each SKU the warehouse holds
// and reserves them for orders.
package inventory

import (
	"errors"
	"fmt"
	"sync"
)

// ErrOutOfStock is returned when a reservation asks for more units than
// are on hand.
var ErrOutOfStock = errors.New("inventory: out of stock")

// Stock is the warehouse's count of units per SKU.
type Stock struct {
	mu       sync.Mutex
	OnHand   map[SKU]int
	Reserved map[SKU]int
}

// NewStock returns an empty stock.
func NewStock() *Stock {
	return &Stock{OnHand: map[SKU]int{}, Reserved: map[SKU]int{}}
}

// Reserve sets n units of sku aside for an order, failing when fewer
// than n are available.
func (s *Stock) Reserve(sku SKU, n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.OnHand[sku]-s.Reserved[sku] < n {
		return fmt.Errorf("%w: %s wants %d", ErrOutOfStock, sku, n)
	}
	s.Reserved[sku] += n
	return nil
}

// Release returns reserved units to the available pool, as when an order
// is cancelled.
func (s *Stock) Release(sku SKU, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Reserved[sku] = max(0, s.Reserved[sku]-n)
}

// Restock adds delivered units to the count on hand.
func (s *Stock) Restock(sku SKU, n int) {
	s.mu.Lock()
	s.OnHand[sku] += n
	s.mu.Unlock()
}

// Package inventory keeps the items a shop has in stock.
package inventory

import (
	"errors"
	"sort"
)

// ErrNotFound is returned for an item the store does not hold.
var ErrNotFound = errors.New("inventory: item not found")

// DefaultCapacity is how many items a new Store holds before it grows.
const DefaultCapacity = 16

// Item is one kind of thing the shop sells.
type Item struct {
	SKU      string
	Name     string
	Quantity int
	priceCts int64
}

// Store holds items by SKU.
type Store struct {
	items map[string]*Item
	limit int
}

// Config configures a Store.
type Config struct {
	Limit int
}

// New returns an empty store.
func New(cfg Config) *Store {
	limit := cfg.Limit
	if limit == 0 {
		limit = DefaultCapacity
	}
	return &Store{items: make(map[string]*Item, limit), limit: limit}
}

// Add puts an item in the store, adding to its quantity when it is there.
func (s *Store) Add(it Item) error {
	if cur, ok := s.items[it.SKU]; ok {
		cur.Quantity += it.Quantity
		return nil
	}
	if len(s.items) >= s.limit {
		return errors.New("inventory: store is full")
	}
	s.items[it.SKU] = &it
	return nil
}

// Get returns the item with the SKU.
func (s *Store) Get(sku string) (*Item, error) {
	it, ok := s.items[sku]
	if !ok {
		return nil, ErrNotFound
	}
	return it, nil
}

// Remove takes quantity of an item out of the store.
func (s *Store) Remove(sku string, quantity int) error {
	it, err := s.Get(sku)
	if err != nil {
		return err
	}
	if it.Quantity < quantity {
		return errors.New("inventory: not enough in stock")
	}
	it.Quantity -= quantity
	return nil
}

// SKUs lists the SKUs in stock, sorted.
func (s *Store) SKUs() []string {
	out := make([]string, 0, len(s.items))
	for sku, it := range s.items {
		if it.Quantity > 0 {
			out = append(out, sku)
		}
	}
	sort.Strings(out)
	return out
}

func clamp(n, lo, hi int) int {
	if n < lo {
		return lo
	}
	if n > hi {
		return hi
	}
	return n
}

package inventory

import "fmt"

// Total is the number of units of every item.
func (s *Store) Total() int {
	total := 0
	for _, it := range s.items {
		total += clamp(it.Quantity, 0, 1<<20)
	}
	return total
}

// Summary describes the store in one line.
func Summary(s *Store) string {
	return fmt.Sprintf("%d SKUs, %d units", len(s.SKUs()), s.Total())
}

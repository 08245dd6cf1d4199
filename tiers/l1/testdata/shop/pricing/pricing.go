// Package pricing computes what items cost.
package pricing

import (
	"math"

	inv "example.com/shop/inventory"
)

// Shape is anything with an area, for priced packaging.
type Shape interface {
	Area() float64
}

// Box is a square box.
type Box struct {
	Side float64
}

// Area is the box's area.
func (b Box) Area() float64 { return b.Side * b.Side }

// Tube is a round tube.
type Tube struct {
	Radius float64
}

// Area is the tube's cross-section.
func (t *Tube) Area() float64 { return math.Pi * t.Radius * t.Radius }

// Config holds the pricing rules.
type Config struct {
	TaxRate  float64
	Discount float64
}

// Rounding is the number of cents prices are rounded to.
const Rounding = 5

// Packaging is what packaging costs for a shape, in cents.
func Packaging(s Shape) int64 {
	return round(int64(s.Area() * 3))
}

// Price is what n units of an item cost under cfg, in cents.
func Price(cfg Config, it *inv.Item, n int) int64 {
	base := float64(n) * 100
	withTax := base * (1 + cfg.TaxRate)
	return round(int64(withTax * (1 - cfg.Discount)))
}

func round(cents int64) int64 {
	return (cents + Rounding/2) / Rounding * Rounding
}

// New returns the default pricing rules.
func New() Config { return Config{TaxRate: 0.2} }

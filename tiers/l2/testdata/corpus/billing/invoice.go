// Package billing prices orders: line totals, tax and discounts.
package billing

import (
	"errors"

	"example.com/shop/inventory"
)

// TaxRate is the sales tax applied to every invoice, in basis points.
const TaxRate = 825

// Money is an amount in cents.
type Money int64

// Line is one line of an order: a SKU, a quantity and a unit price.
type Line struct {
	SKU      string
	Qty      int
	UnitCost Money
}

// ComputeTotal sums an invoice: each line's quantity times its unit
// price, less the coupon's discount, plus sales tax at TaxRate.
func ComputeTotal(lines []Line, c *Coupon) (Money, error) {
	var sub Money
	for _, l := range lines {
		if _, err := inventory.ParseSKU(l.SKU); err != nil {
			return 0, err
		}
		sub += Money(l.Qty) * l.UnitCost
	}
	sub = applyDiscount(sub, c)
	return sub + sub*TaxRate/10000, nil
}

// Validate rejects an order with no lines or a non-positive quantity.
func Validate(lines []Line) error {
	if len(lines) == 0 {
		return errors.New("billing: empty order")
	}
	for _, l := range lines {
		if l.Qty <= 0 {
			return errors.New("billing: quantity must be positive")
		}
	}
	return nil
}

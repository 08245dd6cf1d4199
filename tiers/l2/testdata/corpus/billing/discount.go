package billing

import "time"

// Coupon is a percentage discount valid until it expires.
type Coupon struct {
	Code    string
	Percent int
	Expires time.Time
}

// Valid reports whether the coupon can still be redeemed at now.
func (c Coupon) Valid(now time.Time) bool {
	return c.Percent > 0 && c.Percent <= 100 && now.Before(c.Expires)
}

// applyDiscount takes a valid coupon's percentage off a subtotal.
func applyDiscount(sub Money, c *Coupon) Money {
	if c == nil || !c.Valid(time.Now()) {
		return sub
	}
	return sub - sub*Money(c.Percent)/100
}

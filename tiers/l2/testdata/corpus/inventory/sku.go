package inventory

import (
	"fmt"
	"strings"
)

// SKU is a stock keeping unit code such as "TEA-0042".
type SKU string

// ParseSKU checks a stock keeping unit code: an upper-case category, a
// dash and four digits.
func ParseSKU(s string) (SKU, error) {
	cat, num, ok := strings.Cut(strings.TrimSpace(s), "-")
	if !ok || cat == "" || strings.ToUpper(cat) != cat || len(num) != 4 {
		return "", fmt.Errorf("inventory: malformed SKU %q", s)
	}
	for _, r := range num {
		if r < '0' || r > '9' {
			return "", fmt.Errorf("inventory: malformed SKU %q", s)
		}
	}
	return SKU(cat + "-" + num), nil
}

// Validate reports whether every code in codes is a well-formed SKU.
func Validate(codes []string) error {
	for _, c := range codes {
		if _, err := ParseSKU(c); err != nil {
			return err
		}
	}
	return nil
}

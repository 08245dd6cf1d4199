package grant

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// units maps an energy unit to microjoules. Units are case-exact, as SI
// prefixes are: mJ is a millijoule and MJ a megajoule. Another case is
// taken where it spells one unit only (ParseEnergy: kj, gj, kwh, j).
// Longer names come first, so that "MWh" is not read as "M" and "Wh".
var units = []struct {
	name string
	uj   uint64
}{
	{"MWh", 3_600_000_000_000_000},
	{"kWh", 3_600_000_000_000},
	{"Wh", 3_600_000_000},
	{"GJ", 1_000_000_000_000_000},
	{"MJ", 1_000_000_000_000},
	{"kJ", 1_000_000_000},
	{"mJ", 1_000},
	{"µJ", 1},
	{"uJ", 1},
	{"J", 1_000_000},
}

// unitList is what an error about a unit names.
const unitList = "µJ, mJ, J, kJ, MJ, GJ, Wh, kWh, MWh; mJ is a millijoule, MJ a megajoule"

// ParseEnergy parses an amount of energy such as "50J", "1.5kJ", "250 mJ",
// "20MJ", "2Wh", "5.5kWh" or "1000µJ" into integer microjoules. Decimals are parsed exactly
// (no floating point); a result that is not a whole number of microjoules,
// or that overflows 2^63-1 µJ, is an error.
func ParseEnergy(s string) (uint64, error) {
	in := strings.TrimSpace(s)
	for _, u := range units {
		num, ok := strings.CutSuffix(in, u.name)
		if !ok {
			continue
		}
		num = strings.TrimSpace(num)
		whole, frac, _ := strings.Cut(num, ".")
		if whole == "" && frac == "" || strings.ContainsAny(num, "+-_ eE") {
			return 0, fmt.Errorf("energy %q: want a number and a unit (%s), e.g. 20MJ", s, unitList)
		}
		if strings.IndexFunc(num, func(r rune) bool { return (r < '0' || r > '9') && r != '.' }) >= 0 {
			// "5TJ" is not a bad number in joules but an unknown unit;
			// "5KJ" is kJ in another case.
			if folded, ok := refold(in); ok {
				return folded()
			}
			return 0, fmt.Errorf("energy %q: unknown unit (%s), e.g. 20MJ", s, unitList)
		}
		w := uint64(0)
		if whole != "" {
			var err error
			if w, err = strconv.ParseUint(whole, 10, 64); err != nil {
				return 0, fmt.Errorf("energy %q: bad number", s)
			}
		}
		hi, total := bits.Mul64(w, u.uj)
		if hi != 0 {
			return 0, fmt.Errorf("energy %q is too large", s)
		}
		// The fraction: digits d1 d2 ... of u.uj, exactly.
		scale := u.uj
		for _, d := range frac {
			if d < '0' || d > '9' {
				return 0, fmt.Errorf("energy %q: bad number", s)
			}
			if scale%10 != 0 {
				if d != '0' {
					return 0, fmt.Errorf("energy %q is finer than one microjoule", s)
				}
				continue
			}
			scale /= 10
			var carry uint64
			total, carry = bits.Add64(total, uint64(d-'0')*scale, 0)
			if carry != 0 {
				return 0, fmt.Errorf("energy %q is too large", s)
			}
		}
		if total > math.MaxInt64 {
			return 0, fmt.Errorf("energy %q is too large (at most 9.2 TJ)", s)
		}
		return total, nil
	}
	if folded, ok := refold(in); ok {
		return folded()
	}
	return 0, fmt.Errorf("energy %q: missing or unknown unit (%s), e.g. 20MJ", s, unitList)
}

// refold parses s with its unit spelled in its own case, when s spells a
// unit in another case (foldedUnit), or refuses a unit whose m could be
// milli or mega.
func refold(s string) (func() (uint64, error), bool) {
	if ambiguousUnit(s) {
		return func() (uint64, error) {
			return 0, fmt.Errorf("energy %q: m is milli in mJ and mega in MJ and MWh; write the unit in its case", s)
		}, true
	}
	name, n, ok := foldedUnit(s)
	if !ok || s[len(s)-n:] == name {
		return nil, false
	}
	return func() (uint64, error) { return ParseEnergy(s[:len(s)-n] + name) }, true
}

// foldedUnit finds the unit that s ends with in another case, where only
// one unit is spelled that way: "100kj" is 100 kJ, "5gj" 5 GJ, "2kwh" 2 kWh.
// It returns the unit and how many bytes of s spell it.
func foldedUnit(s string) (name string, n int, ok bool) {
	lower := strings.ToLower(s)
	for _, u := range units {
		if f := strings.ToLower(u.name); strings.HasSuffix(lower, f) {
			return u.name, len(f), true
		}
	}
	return "", 0, false
}

// ambiguousUnit reports a unit whose m could be milli or mega: "mj", "Mj",
// "mwh" in a case that is not one unit's exactly.
func ambiguousUnit(s string) bool {
	lower := strings.ToLower(s)
	return strings.HasSuffix(lower, "mj") || strings.HasSuffix(lower, "mwh")
}

// FormatEnergy renders microjoules in the largest unit that keeps three
// significant decimals exact, e.g. 1500000 → "1.5 J".
func FormatEnergy(uj uint64) string {
	for _, u := range []struct {
		name string
		uj   uint64
	}{{"GJ", 1_000_000_000_000_000}, {"MJ", 1_000_000_000_000}, {"kJ", 1_000_000_000}, {"J", 1_000_000}, {"mJ", 1_000}} {
		if uj >= u.uj {
			whole, rem := uj/u.uj, uj%u.uj
			if rem == 0 {
				return fmt.Sprintf("%d %s", whole, u.name)
			}
			frac := strings.TrimRight(fmt.Sprintf("%0*d", digits(u.uj)-1, rem), "0")
			if len(frac) > 3 {
				frac = strings.TrimRight(frac[:3], "0")
			}
			if frac == "" {
				return fmt.Sprintf("%d %s", whole, u.name)
			}
			return fmt.Sprintf("%d.%s %s", whole, frac, u.name)
		}
	}
	return fmt.Sprintf("%d µJ", uj)
}

func digits(n uint64) int { return len(strconv.FormatUint(n, 10)) }

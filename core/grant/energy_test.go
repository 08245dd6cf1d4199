package grant

import (
	"strings"
	"testing"
)

func TestParseEnergy(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"50J", 50_000_000, true},
		{"50 J", 50_000_000, true},
		{"1.5kJ", 1_500_000_000, true},
		{"250mJ", 250_000, true},
		{"0.001mJ", 1, true},
		{"1000µJ", 1000, true},
		{"7uJ", 7, true},
		{"2Wh", 7_200_000_000, true},
		{"0.5kWh", 1_800_000_000_000, true},
		{".5J", 500_000, true},
		{"1.J", 1_000_000, true},
		{"1.0000000J", 1_000_000, true},
		{"0J", 0, true},
		{"1.5µJ", 0, false},
		{"0.0001mJ", 0, false},
		{"50", 0, false},
		{"J", 0, false},
		{"-5J", 0, false},
		{"+5J", 0, false},
		{"1e3J", 0, false},
		{"5 joules", 0, false},
		{"99999999999999999999J", 0, false},
		{"9300000000kJ", 0, false},
		{"9200000000kJ", 9_200_000_000_000_000_000, true},
		{"1.2.3J", 0, false},
		// Megajoules and up; a unit in another case is taken where only
		// one unit is spelled that way (m is milli or mega: refused).
		{"20MJ", 20_000_000_000_000, true},
		{"1.5 MJ", 1_500_000_000_000, true},
		{"2GJ", 2_000_000_000_000_000, true},
		{"9.2GJ", 9_200_000_000_000_000, true},
		{"9224GJ", 0, false},
		{"3kWh", 10_800_000_000_000, true},
		{"1MWh", 3_600_000_000_000_000, true},
		{"2.5MWh", 9_000_000_000_000_000, true},
		{"2563MWh", 0, false},
		{"5mJ", 5_000, true},
		{"5MJ", 5_000_000_000_000, true},
		{"5mj", 0, false},
		{"5Mj", 0, false},
		{"5kj", 5_000_000_000, true},
		{"100kj", 100_000_000_000, true},
		{"5KJ", 5_000_000_000, true},
		{"5gJ", 5_000_000_000_000_000, true},
		{"50j", 50_000_000, true},
		{"7uj", 7, true},
		{"2wh", 7_200_000_000, true},
		{"5Tj", 0, false},
		{"j", 0, false},
		{"5mJJ", 0, false},
		{"5TJ", 0, false},
		{"5 TJ", 0, false},
		{"5PJ", 0, false},
		{"5mwh", 0, false},
		{"5KWh", 18_000_000_000_000, true},
		{"5MWH", 0, false},
		{"5 M J", 0, false},
		{"", 0, false},
	}
	// The unit is the problem in these: the error must say so, not "bad number".
	unknownUnit := map[string]bool{"5TJ": true, "5 TJ": true, "5PJ": true, "5Tj": true, "5mwh": true, "5mj": true, "5Mj": true, "5MWH": true}
	for _, tt := range tests {
		got, err := ParseEnergy(tt.in)
		if err != nil && unknownUnit[tt.in] && !strings.Contains(err.Error(), "unit") {
			t.Errorf("ParseEnergy(%q): %v does not name the unit", tt.in, err)
		}
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseEnergy(%q) = %d, %v; want %d ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestFormatEnergy(t *testing.T) {
	for in, want := range map[uint64]string{0: "0 µJ", 999: "999 µJ", 1000: "1 mJ", 1_500_000: "1.5 J", 50_000_000: "50 J", 1_234_567: "1.234 J", 2_000_000_000: "2 kJ", 1_170_793_000_000: "1.17 MJ", 20_000_000_000_000: "20 MJ", 3_600_000_000_000_000: "3.6 GJ"} {
		if got := FormatEnergy(in); got != want {
			t.Errorf("FormatEnergy(%d) = %q, want %q", in, got, want)
		}
		if back, err := ParseEnergy(strings.ReplaceAll(FormatEnergy(in), " ", "")); err != nil || back > in {
			t.Errorf("ParseEnergy(FormatEnergy(%d)) = %d, %v", in, back, err)
		}
	}
}

func FuzzParseEnergy(f *testing.F) {
	for _, s := range []string{"50J", "1.5kJ", "0.001mJ", "2Wh", "1e3J", "..J", "20MJ", "1MWh", "5mj"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseEnergy(s)
		if err == nil && v > 1<<63-1 {
			t.Fatalf("%q parsed to %d, above int64", s, v)
		}
	})
}

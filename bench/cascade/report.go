package main

import (
	"encoding/csv"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/joulehook/joule/core"
)

// Consult is one tier's part in one request.
type Consult struct {
	Tier   core.Tier
	Closed bool
	Err    string
	UJ     uint64
}

// Outcome is one request put to the cascade in one pass.
type Outcome struct {
	Req      *Request
	Pass     int
	Closing  core.Tier // "" when nothing closed
	Verdict  Verdict
	Why      string
	Consults []Consult
	Baseline uint64 // µJ had it gone straight to L4
}

// UJ is the energy every tier consulted spent on o.
func (o *Outcome) UJ() uint64 {
	var n uint64
	for _, c := range o.Consults {
		n += c.UJ
	}
	return n
}

// Row is one line of the per-tier table.
type Row struct {
	Name      string
	Consulted int
	Closed    int
	Correct   int
	False     int
	Scored    bool // false for scripted tiers and the totals' correctness
	UJ        uint64
}

// Tiers are the cascade's tiers in order.
var Tiers = []core.Tier{core.L0, core.L1, core.L2, core.L3, core.L4}

// scoredTier reports whether closes at t are judged against ground truth.
func scoredTier(t core.Tier) bool { return t == core.L0 || t == core.L1 || t == core.L2 }

// Table aggregates outcomes into one row per tier, then the cascade's
// total and the everything-to-L4 baseline.
func Table(outs []*Outcome) []Row {
	rows := make([]Row, len(Tiers))
	for i, t := range Tiers {
		rows[i] = Row{Name: string(t), Scored: scoredTier(t)}
	}
	total := Row{Name: "cascade", Scored: true}
	base := Row{Name: "all-L4", Scored: false}
	for _, o := range outs {
		for _, c := range o.Consults {
			i := tierIndex(c.Tier)
			if i < 0 {
				continue
			}
			rows[i].Consulted++
			rows[i].UJ += c.UJ
			if c.Closed {
				rows[i].Closed++
			}
		}
		if i := tierIndex(o.Closing); i >= 0 {
			switch o.Verdict {
			case Correct:
				rows[i].Correct++
			case False:
				rows[i].False++
			}
		}
		total.Consulted++
		if o.Closing != "" {
			total.Closed++
		}
		switch o.Verdict {
		case Correct:
			total.Correct++
		case False:
			total.False++
		}
		total.UJ += o.UJ()
		base.Consulted++
		base.Closed++
		base.UJ += o.Baseline
	}
	return append(rows, total, base)
}

func tierIndex(t core.Tier) int {
	for i, x := range Tiers {
		if x == t {
			return i
		}
	}
	return -1
}

// Joules formats µJ as joules with sensible precision.
func Joules(uj uint64) string {
	j := float64(uj) / 1e6
	switch {
	case j == 0:
		return "0"
	case j < 0.01:
		return strconv.FormatFloat(j, 'g', 3, 64)
	case j < 100:
		return strconv.FormatFloat(j, 'f', 2, 64)
	}
	return strconv.FormatFloat(j, 'f', 0, 64)
}

// WriteTable prints rows for a terminal.
func WriteTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tier\tconsulted\tclosed\tclosed correctly\tfalse closes\tjoules\t")
	for _, r := range rows {
		c, f := strconv.Itoa(r.Correct), strconv.Itoa(r.False)
		if !r.Scored {
			c, f = "-", "-"
		}
		if r.Name == "cascade" {
			c += " (L0-L2)"
			f += " (L0-L2)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t\n", r.Name, r.Consulted, r.Closed, c, f, Joules(r.UJ))
	}
	return tw.Flush()
}

// WriteCSV writes rows as CSV; correctness is empty where it is not scored.
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"tier", "consulted", "closed", "closed_correctly", "false_closes", "joules"})
	for _, r := range rows {
		c, f := strconv.Itoa(r.Correct), strconv.Itoa(r.False)
		if !r.Scored {
			c, f = "", ""
		}
		cw.Write([]string{r.Name, strconv.Itoa(r.Consulted), strconv.Itoa(r.Closed), c, f, strconv.FormatFloat(float64(r.UJ)/1e6, 'f', 6, 64)})
	}
	cw.Flush()
	return cw.Error()
}

// WriteOutcomesCSV writes one line per request and pass, for audit.
func WriteOutcomesCSV(w io.Writer, outs []*Outcome) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"id", "pass", "class", "prompt", "closing_tier", "verdict", "why", "joules", "baseline_joules", "consulted"})
	for _, o := range outs {
		var cs []string
		for _, c := range o.Consults {
			s := string(c.Tier)
			if c.Closed {
				s += "*"
			}
			if c.Err != "" {
				s += "!"
			}
			cs = append(cs, s)
		}
		v := o.Verdict.String()
		if o.Closing == "" {
			v = "open"
		}
		cw.Write([]string{strconv.Itoa(o.Req.ID), strconv.Itoa(o.Pass), string(o.Req.Class), o.Req.Prompt, string(o.Closing), v, o.Why,
			strconv.FormatFloat(float64(o.UJ())/1e6, 'f', 6, 64), strconv.FormatFloat(float64(o.Baseline)/1e6, 'f', 3, 64), strings.Join(cs, " ")})
	}
	cw.Flush()
	return cw.Error()
}

// WriteSVG draws joules per tier, the cascade's total and the all-L4
// baseline as bars on a log scale (the tiers differ by orders of
// magnitude), each labelled with its value.
func WriteSVG(w io.Writer, rows []Row, title string) error {
	const (
		width, height          = 720, 420
		left, right, top, foot = 80, 20, 50, 70
		plotW, plotH           = width - left - right, height - top - foot
	)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rows {
		if r.UJ > 0 {
			j := float64(r.UJ) / 1e6
			lo, hi = math.Min(lo, j), math.Max(hi, j)
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1, 10
	}
	dlo, dhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if dhi <= dlo {
		dhi = dlo + 1
	}
	y := func(j float64) float64 {
		return top + plotH - (math.Log10(j)-dlo)/(dhi-dlo)*plotH
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="28" font-size="15" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))
	for d := dlo; d <= dhi; d++ {
		yy := y(math.Pow(10, d))
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#dddddd"/>`+"\n", left, yy, width-right, yy)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555555">%s</text>`+"\n", left-6, yy+4, decade(d))
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333333"/>`+"\n", left, top+plotH, width-right, top+plotH)
	slot := float64(plotW) / float64(len(rows))
	for i, r := range rows {
		x := float64(left) + slot*float64(i) + slot*0.15
		bw := slot * 0.7
		color := "#4c78a8"
		switch r.Name {
		case "cascade":
			color = "#54a24b"
		case "all-L4":
			color = "#e45756"
		}
		label := "0 J"
		if r.UJ > 0 {
			j := float64(r.UJ) / 1e6
			yy := math.Min(y(j), top+plotH)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x, yy, bw, top+plotH-yy, color)
			label = siJoules(r.UJ)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x+bw/2, yy-5, label)
		} else {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x+bw/2, float64(top+plotH)-5, label)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" font-weight="bold">%s</text>`+"\n", x+bw/2, top+plotH+18, html.EscapeString(r.Name))
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555555">%d closed</text>`+"\n", x+bw/2, top+plotH+34, r.Closed)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555555">joules spent per tier over the whole run (log scale); all-L4 sends every request to the remote agent</text>`+"\n", left, height-12)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// decade labels the gridline at 10^d joules with an SI prefix.
func decade(d float64) string {
	e := int(d)
	units := []struct {
		exp  int
		name string
	}{{-6, "µJ"}, {-3, "mJ"}, {0, "J"}, {3, "kJ"}, {6, "MJ"}, {9, "GJ"}}
	for i := len(units) - 1; i >= 0; i-- {
		if u := units[i]; e >= u.exp && e < u.exp+3 {
			return strconv.Itoa(int(math.Pow10(e-u.exp))) + " " + u.name
		}
	}
	return "1e" + strconv.Itoa(e) + " J"
}

// siJoules is uj with an SI prefix and three significant digits.
func siJoules(uj uint64) string {
	j := float64(uj) / 1e6
	for _, u := range []struct {
		scale float64
		name  string
	}{{1e9, "GJ"}, {1e6, "MJ"}, {1e3, "kJ"}, {1, "J"}, {1e-3, "mJ"}} {
		if j >= u.scale {
			return strconv.FormatFloat(j/u.scale, 'g', 3, 64) + " " + u.name
		}
	}
	return strconv.FormatFloat(j*1e6, 'g', 3, 64) + " µJ"
}

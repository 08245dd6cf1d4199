package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers/l2"
)

func fixtureOutcomes() []*Outcome {
	def := &Request{ID: 1, Class: Define, Prompt: "where is p.F defined"}
	neg := &Request{ID: 2, Class: Negative, Prompt: "fix the race in p.F"}
	ren := &Request{ID: 3, Class: Rename, Prompt: "rename p.F to G"}
	return []*Outcome{
		{Req: def, Pass: 1, Closing: core.L2, Verdict: Correct, Baseline: 30_000_000_000,
			Consults: []Consult{{Tier: core.L0, UJ: 2_000}, {Tier: core.L1, UJ: 500}, {Tier: core.L2, Closed: true, UJ: 40_000}}},
		{Req: neg, Pass: 1, Closing: core.L4, Baseline: 50_000_000_000,
			Consults: []Consult{{Tier: core.L0, UJ: 2_000}, {Tier: core.L1, UJ: 500}, {Tier: core.L2, UJ: 30_000},
				{Tier: core.L3, UJ: 900_000_000}, {Tier: core.L4, Closed: true, UJ: 50_000_000_000}}},
		{Req: ren, Pass: 1, Closing: core.L1, Verdict: False, Why: "a.go differs", Baseline: 40_000_000_000,
			Consults: []Consult{{Tier: core.L0, UJ: 2_000}, {Tier: core.L1, Closed: true, UJ: 3_000_000}}},
		{Req: ren, Pass: 2, Closing: core.L0, Verdict: Correct, Baseline: 40_000_000_000,
			Consults: []Consult{{Tier: core.L0, Closed: true, UJ: 2_500}}},
		{Req: neg, Pass: 2, Baseline: 50_000_000_000,
			Consults: []Consult{{Tier: core.L0, UJ: 2_000}, {Tier: core.L1, Err: "boom", UJ: 500}}},
	}
}

func TestTable(t *testing.T) {
	rows := Table(fixtureOutcomes())
	want := []Row{
		{Name: "L0", Consulted: 5, Closed: 1, Correct: 1, Scored: true, UJ: 10_500},
		{Name: "L1", Consulted: 4, Closed: 1, False: 1, Scored: true, UJ: 3_001_500},
		{Name: "L2", Consulted: 2, Closed: 1, Correct: 1, Scored: true, UJ: 70_000},
		{Name: "L3", Consulted: 1, Scored: false, UJ: 900_000_000},
		{Name: "L4", Consulted: 1, Closed: 1, Scored: false, UJ: 50_000_000_000},
		{Name: "cascade", Consulted: 5, Closed: 4, Correct: 2, False: 1, Scored: true, UJ: 50_903_082_000},
		{Name: "all-L4", Consulted: 5, Closed: 5, UJ: 210_000_000_000},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d = %+v\nwant     %+v", i, rows[i], want[i])
		}
	}
}

func TestJoules(t *testing.T) {
	for _, tc := range []struct {
		uj   uint64
		want string
	}{
		{0, "0"}, {1, "1e-06"}, {2_500, "0.0025"}, {10_000, "0.01"}, {1_234_567, "1.23"}, {99_990_000, "99.99"}, {123_456_789_000, "123457"},
	} {
		if got := Joules(tc.uj); got != tc.want {
			t.Errorf("Joules(%d) = %q, want %q", tc.uj, got, tc.want)
		}
	}
}

func TestOutputsGolden(t *testing.T) {
	outs := fixtureOutcomes()
	rows := Table(outs)
	var tb, csvb, ob, svg bytes.Buffer
	if err := WriteTable(&tb, rows); err != nil {
		t.Fatal(err)
	}
	golden(t, "table.txt", tb.Bytes())
	if err := WriteCSV(&csvb, rows); err != nil {
		t.Fatal(err)
	}
	golden(t, "cascade.csv", csvb.Bytes())
	if err := WriteOutcomesCSV(&ob, outs); err != nil {
		t.Fatal(err)
	}
	golden(t, "requests.csv", ob.Bytes())
	if err := WriteSVG(&svg, rows, "fixture <run> & co"); err != nil {
		t.Fatal(err)
	}
	golden(t, "chart.svg", svg.Bytes())
	wellFormed(t, svg.Bytes())
}

// wellFormed requires b to be one well-formed XML document.
func wellFormed(t *testing.T, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
	}
}

func TestSVGEdgeCases(t *testing.T) {
	for name, rows := range map[string][]Row{
		"all zero": {{Name: "L0"}, {Name: "L1"}},
		"one bar":  {{Name: "L4", UJ: 5_000_000}},
		"no rows":  nil,
	} {
		var b bytes.Buffer
		if err := WriteSVG(&b, rows, name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		wellFormed(t, b.Bytes())
		if bytes.Contains(b.Bytes(), []byte("NaN")) || bytes.Contains(b.Bytes(), []byte("Inf")) {
			t.Errorf("%s: the chart holds a NaN or Inf coordinate", name)
		}
	}
}

func TestUnits(t *testing.T) {
	for d, want := range map[float64]string{-7: "1e-7 J", -6: "1 µJ", -2: "10 mJ", 0: "1 J", 2: "100 J", 3: "1 kJ", 7: "10 MJ", 11: "100 GJ", 12: "1e12 J"} {
		if got := decade(d); got != want {
			t.Errorf("decade(%v) = %q, want %q", d, got, want)
		}
	}
	for uj, want := range map[uint64]string{1: "1 µJ", 2_500: "2.5 mJ", 62_060_000: "62.1 J", 369_384_000_000: "369 kJ", 2_879_350_000_000: "2.88 MJ"} {
		if got := siJoules(uj); got != want {
			t.Errorf("siJoules(%d) = %q, want %q", uj, got, want)
		}
	}
}

func TestSummaryGolden(t *testing.T) {
	outs := fixtureOutcomes()
	ms := func(n ...int) []time.Duration {
		var d []time.Duration
		for _, x := range n {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	res := &results{
		c:   config{seed: 1, watts: 10, l3Model: "qwen2.5-coder:7b", l4Model: "claude-sonnet-4-5"},
		src: "/go/src", goVersion: "go1.26.0", requests: []*Request{outs[0].Req, outs[1].Req, outs[2].Req},
		notes: []string{"gopls is not installed"}, first: 3, second: 2, outs: outs, rows: Table(outs),
		stats: l2.Stats{Files: 10, Chunks: 99}, build: 95 * time.Second, buildCPU: 60 * time.Second,
		l2:      l2Quality{n: 1, recallDefs: 1, recallSearch: 0.5, defs: ms(1), callers: ms(2, 3), search: ms(40, 50)},
		l2Stage: ms(1, 2, 3), cpu: map[core.Tier]time.Duration{core.L0: 5 * time.Millisecond}, cores: 2, elapsed: time.Minute,
	}
	var b bytes.Buffer
	res.summary(&b)
	golden(t, "summary.txt", b.Bytes())
	for _, want := range []string{"NOT MET zero false closes at L0-L2: 1", "met     recall@5", "NOT MET index build <= 90s: 1m35s wall"} {
		if !bytes.Contains(b.Bytes(), []byte(want)) {
			t.Errorf("summary lacks %q", want)
		}
	}
}

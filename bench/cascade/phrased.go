package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"path"
	"strings"

	"github.com/joulehook/joule/core"
)

// The phrased workload: a share of each class's requests asked the way
// people type them in an editor's agent panel (backticks, "→", the file a
// symbol is declared in, a position, a question mark), and near-misses
// that read like an L1 request but are not one. The phrasings are this
// benchmark's own, apart from tiers/l1/testdata/requests.txt.

var phrasings = map[Class][]string{
	// %[1]s the symbol, %[2]s the file it is declared in, %[3]d its line
	Define: {
		"Where's `%[1]s` defined?",
		"jump to the definition of %[1]s",
		"where is %[1]s declared",
		"Find the declaration of `%[1]s`.",
		"which file declares %[1]s",
		"where is %[1]s defined in %[2]s",
	},
	Callers: {
		"Who calls `%[1]s`?",
		"show me the callers of %[1]s",
		"where is %[1]s called from",
		"list calls to %[1]s",
		"could you find the call sites of %[1]s",
	},
	// %[1]s the symbol, %[2]s the file, %[3]d line, %[4]d column, %[5]s the new name
	Rename: {
		"please rename %[1]s → %[5]s",
		"Rename %[1]s (declared in %[2]s) to %[5]s.",
		"rename `%[1]s` as `%[5]s` everywhere",
		"Could you rename %[1]s to %[5]s at %[2]s:%[3]d:%[4]d?",
		"rename %[1]s in %[2]s into %[5]s",
	},
	// %[1]s the file
	Format: {
		"Run gofmt on %[1]s.",
		"reformat `%[1]s`",
		"format %[1]s with gofmt",
		"apply gofmt to %[1]s please",
		"gofmt %[1]s",
	},
}

// nearMisses read like an L1 request and are not one; %[1]s is a symbol,
// %[2]s a new name, %[3]s a file.
var nearMisses = []string{
	"rename the branch to %[2]s",
	"rename %[1]s in the README only",
	"explain the rename of %[1]s",
	"format the output of %[1]s as JSON",
	"where is %[1]s defined and why is it there",
	"who calls %[1]s and can we remove them",
	"rename %[1]s to something clearer",
	"format %[3]s the way the team likes it",
	"find the bug in %[3]s",
	"replace %[1]s with a faster version",
}

// phrase rewrites every other request of the lookup, rename and format
// classes with a phrasing, marking it Phrased, and returns n near-misses
// over the lookup symbols.
func phrase(rng *rand.Rand, reqs []*Request, n int) []*Request {
	seen := map[Class]int{}
	var syms []*Request
	for _, r := range reqs {
		ts := phrasings[r.Class]
		if len(ts) == 0 {
			continue
		}
		if r.Class == Define || r.Class == Callers {
			syms = append(syms, r)
		}
		seen[r.Class]++
		if seen[r.Class]%2 == 0 {
			continue
		}
		t := ts[rng.IntN(len(ts))]
		switch r.Class {
		case Define, Callers:
			r.Prompt = fmt.Sprintf(t, r.Symbol, r.Def.Path, r.Def.Line)
		case Rename:
			if r.Def.Path == "" {
				continue
			}
			r.Prompt = fmt.Sprintf(t, r.Symbol, r.Def.Path, r.Def.Line, r.Def.Col, r.To)
		case Format:
			r.Prompt = fmt.Sprintf(t, r.Symbol)
		}
		r.Phrased = true
	}
	var out []*Request
	for i := 0; i < n && len(syms) > 0; i++ {
		s := syms[rng.IntN(len(syms))]
		name := s.Symbol[strings.LastIndexByte(s.Symbol, '.')+1:]
		out = append(out, &Request{
			Class:     Negative,
			Prompt:    fmt.Sprintf(nearMisses[i%len(nearMisses)], s.Symbol, name+"2", path.Base(s.Def.Path)),
			Root:      s.Root,
			Symbol:    s.Symbol,
			Def:       s.Def,
			ReadBytes: s.ReadBytes,
			OutBytes:  1500,
			Phrased:   true,
		})
	}
	return out
}

// writePhrased reports, per class, the plain and the phrased requests
// apart: how many closed at L1 and at any cheap tier, how many correctly,
// the false closes, and the energy against all-L4.
func writePhrased(w io.Writer, outs []*Outcome) {
	type tally struct {
		n, l1, cheap, correct, falseClose int
		uj, base                          uint64
	}
	t := map[string]*tally{}
	var keys []string
	for _, c := range Classes {
		for _, p := range []string{"plain", "phrased"} {
			keys = append(keys, string(c)+" "+p)
		}
	}
	for _, o := range outs {
		k := string(o.Req.Class) + " plain"
		if o.Req.Phrased {
			k = string(o.Req.Class) + " phrased"
		}
		x := t[k]
		if x == nil {
			x = &tally{}
			t[k] = x
		}
		x.n++
		if o.Closing == core.L1 {
			x.l1++
		}
		if scoredTier(o.Closing) {
			x.cheap++
			switch o.Verdict {
			case Correct:
				x.correct++
			case False:
				x.falseClose++
			}
		}
		x.uj += o.UJ()
		x.base += o.Baseline
	}
	fmt.Fprintf(w, "  %-17s %5s %6s %8s %8s %6s %12s %12s\n", "class", "n", "L1", "L0-L2", "correct", "false", "J", "J all-L4")
	for _, k := range keys {
		x := t[k]
		if x == nil {
			continue
		}
		fmt.Fprintf(w, "  %-17s %5d %6d %8d %8d %6d %12s %12s\n", k, x.n, x.l1, x.cheap, x.correct, x.falseClose, Joules(x.uj), Joules(x.base))
	}
}

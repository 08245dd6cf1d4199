package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// negativeTemplates are requests only a model can do. Some read like a
// lookup, a rename or a format to begin with: a cheap tier that matches on
// a prefix and claims them is caught. OutBytes is the size of what an agent
// would write for one.
var negativeTemplates = []struct {
	format   string // %[1]s is the symbol, %[2]s a new name
	outBytes int
}{
	{"add retry with exponential backoff to %[1]s", 3000},
	{"fix the race in %[1]s", 2000},
	{"write tests for %[1]s", 6000},
	{"make %[1]s faster without changing what it returns", 3000},
	{"explain why %[1]s is written the way it is", 2500},
	{"where is %[1]s defined? add a doc comment there saying what it is for", 1200},
	{"who calls %[1]s? make each of them handle its error", 4000},
	{"rename %[1]s to %[2]s and explain the new name in its doc comment", 2500},
	{"format %[1]s the way our team likes it and split the long functions", 5000},
	{"find the code that calls %[1]s and add logging around it", 3000},
}

// negatives builds n requests that genuinely need a model over symbols of
// the lookup sample (their ground truth says where each lives, which is
// what an agent would read).
func negatives(rng *rand.Rand, src string, symbols []*Request, n int) []*Request {
	if len(symbols) == 0 {
		return nil
	}
	var out []*Request
	for i := 0; i < n; i++ {
		s := symbols[rng.IntN(len(symbols))]
		t := negativeTemplates[i%len(negativeTemplates)]
		name := s.Symbol[strings.LastIndexByte(s.Symbol, '.')+1:]
		out = append(out, &Request{
			Class:     Negative,
			Prompt:    fmt.Sprintf(t.format, s.Symbol, name+"Renamed"),
			Root:      src,
			Symbol:    s.Symbol,
			Def:       s.Def,
			ReadBytes: fileBytes(src, s.Def.Path),
			OutBytes:  t.outBytes,
		})
	}
	return out
}

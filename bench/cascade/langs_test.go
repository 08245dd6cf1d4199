package main

import (
	"strings"
	"testing"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers"
	"github.com/joulehook/joule/tiers/l1"
)

// TestLangWorkloadsCanFail: every close of the TypeScript and Python
// workloads expects a change (what it must gain is not there before, what
// must go is), and every request reads as the L1 request it is meant to
// be, so that the figures cannot pass by construction.
func TestLangWorkloadsCanFail(t *testing.T) {
	for _, p := range []langProject{tsProject(), pyProject()} {
		for _, rq := range p.reqs {
			if rq.class == "rename" || rq.class == "organize" {
				if _, ok := p.files[rq.file]; !ok {
					t.Errorf("%s %q: no file %s", p.lang, rq.prompt, rq.file)
				}
				for _, h := range rq.has {
					if strings.Contains(string(p.files[rq.file]), h) {
						t.Errorf("%s %q: %s holds %q already", p.lang, rq.prompt, rq.file, h)
					}
				}
				for _, g := range rq.gone {
					held := false
					for _, b := range p.files {
						held = held || strings.Contains(string(b), g)
					}
					if !held {
						t.Errorf("%s %q: nothing holds %q", p.lang, rq.prompt, g)
					}
				}
			}
			c, err := l1.Read(rq.prompt)
			if c == nil && !rq.miss {
				t.Errorf("%s %q: the reader does not take it: %v", p.lang, rq.prompt, err)
			}
		}
	}
}

func TestScoreLang(t *testing.T) {
	prior := core.Files{"a.ts": []byte("export class Circle {}\n")}
	rq := langReq{class: "lookup", prompt: "where is Circle defined", has: []string{"a.ts:1"}}
	if ok, _ := scoreLang(prior, rq, &tiers.Resolution{Answer: "Circle is declared at a.ts:1:14"}); !ok {
		t.Error("a right look-up scored wrong")
	}
	if ok, _ := scoreLang(prior, rq, &tiers.Resolution{Answer: "lines holding Circle: b.ts:3"}); ok {
		t.Error("a wrong look-up scored right")
	}
	miss := langReq{class: "near-miss", miss: true}
	if ok, _ := scoreLang(prior, miss, &tiers.Resolution{Answer: "renamed"}); ok {
		t.Error("a closed near-miss scored right")
	}
	rn := langReq{class: "rename", file: "a.ts", has: []string{"class Disk"}, gone: []string{"Circle"}}
	if ok, _ := scoreLang(prior, rn, &tiers.Resolution{Answer: "no op"}); ok {
		t.Error("a rename without an op scored right")
	}
}

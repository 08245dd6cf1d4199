package main

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/energy"
	"github.com/joulehook/joule/tiers"
	"github.com/joulehook/joule/tiers/l1"
	"github.com/joulehook/joule/tiers/l1/lsp"

	"github.com/joulehook/joule/internal/testdeps"
)

// The language-server workload (issue 19): a TypeScript and a Python
// project the benchmark writes itself, and phrased requests over them
// (renames by position and by name, organize imports, look-ups, and
// near-misses), put to L1, which drives typescript-language-server and
// pyright. What L1 does not close goes to L4; what it closes is scored
// against what the request means. A language whose server is not
// installed is skipped, and the report says so.

// langProject is one generated project and its workload.
type langProject struct {
	lang   string     // as reported
	server string     // the language server L1 drives for it
	files  core.Files // the project
	reqs   []langReq
}

// langReq is one request: a close must leave every has string in file and
// none of the gone words anywhere; a near-miss (miss) must not close.
type langReq struct {
	class, prompt string
	miss          bool
	file          string
	has, gone     []string
}

func tsProject() langProject {
	files := core.Files{
		"tsconfig.json": []byte(`{"compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs", "noEmit": true}, "include": ["src"]}` + "\n"),
		"src/geometry.ts": []byte(`// Shapes with an area.
export interface Shape {
  area(): number;
}

export class Circle implements Shape {
  constructor(readonly radius: number) {}
  area(): number {
    return Math.PI * this.radius * this.radius;
  }
  diameter(): number {
    return 2 * this.radius;
  }
}

export class Square implements Shape {
  constructor(readonly side: number) {}
  area(): number {
    return this.side * this.side;
  }
}

/** Sums the areas of shapes. */
export function totalArea(shapes: Shape[]): number {
  return shapes.reduce((sum, s) => sum + s.area(), 0);
}
`),
		"src/format.ts": []byte(`import { Shape, totalArea } from "./geometry";

export const UNITS = "cm²";

export function describe(shapes: Shape[]): string {
  return totalArea(shapes).toFixed(2) + " " + UNITS;
}
`),
		"src/main.ts": []byte(`import { describe } from "./format";
import { Square, Circle, totalArea } from "./geometry";

const shapes = [new Circle(1), new Square(2), new Circle(0.5)];
console.log(describe(shapes), new Circle(3).diameter());
`),
	}
	return langProject{lang: "TypeScript", server: "typescript-language-server", files: files, reqs: []langReq{
		{class: "rename", prompt: "rename src/geometry.ts:6:14 to Disk", file: "src/main.ts", has: []string{"new Disk(1)"}, gone: []string{"Circle"}},
		{class: "rename", prompt: "Rename the class `Circle` to `Disk`.", file: "src/main.ts", has: []string{"new Disk(1)"}, gone: []string{"Circle"}},
		{class: "rename", prompt: "rename the function totalArea in src/geometry.ts to sumAreas", file: "src/format.ts", has: []string{"sumAreas(shapes)"}, gone: []string{"totalArea"}},
		{class: "rename", prompt: "rename the method diameter of Circle to width", file: "src/main.ts", has: []string{".width()"}, gone: []string{"diameter"}},
		{class: "rename", prompt: "Could you rename the constant UNITS in src/format.ts to UNIT?", file: "src/format.ts", has: []string{`" " + UNIT;`}, gone: []string{"UNITS"}},
		// typescript-language-server's organize imports sorts; it keeps an unused name
		{class: "organize", prompt: "organize imports in src/main.ts", file: "src/main.ts", has: []string{`import { Circle, Square, totalArea } from "./geometry";`}},
		{class: "lookup", prompt: "where is Circle defined", file: "", has: []string{"src/geometry.ts:6"}},
		{class: "lookup", prompt: "who calls totalArea", file: "", has: []string{"src/format.ts:6"}},
		{class: "near-miss", prompt: "rename area to surface", miss: true},                                // three methods named area
		{class: "near-miss", prompt: "rename the function Circle to Disk in src/geometry.ts", miss: true}, // a class
		{class: "near-miss", prompt: "rename the class Circle on line 9 of src/geometry.ts to Disk", miss: true},
		{class: "near-miss", prompt: "rename Polygon to Shape2", miss: true},
		{class: "near-miss", prompt: "rename the class Square to Circle", miss: true}, // breaks the type check
	}}
}

func pyProject() langProject {
	files := core.Files{
		"pyrightconfig.json": []byte(`{"include": ["."], "typeCheckingMode": "standard"}` + "\n"),
		"shapes/__init__.py": []byte(""),
		"shapes/geometry.py": []byte(`"""Shapes with an area."""
import math


class Circle:
    def __init__(self, radius: float) -> None:
        self.radius = radius

    def area(self) -> float:
        return math.pi * self.radius * self.radius

    def diameter(self) -> float:
        return 2 * self.radius


class Square:
    def __init__(self, side: float) -> None:
        self.side = side

    def area(self) -> float:
        return self.side * self.side


def total_area(shapes: list[Circle | Square]) -> float:
    """Sum the areas of shapes."""
    return sum(s.area() for s in shapes)
`),
		"shapes/report.py": []byte(`from shapes.geometry import Circle, Square, total_area

UNITS = "cm²"


def describe(shapes: list[Circle | Square]) -> str:
    return f"{total_area(shapes):.2f} {UNITS}"
`),
		"main.py": []byte(`import sys
import os
from shapes.report import describe
from shapes.geometry import Square, Circle

print(describe([Circle(1), Square(2)]), Circle(3).diameter(), file=sys.stdout)
`),
	}
	return langProject{lang: "Python", server: "pyright-langserver", files: files, reqs: []langReq{
		{class: "rename", prompt: "rename shapes/geometry.py:5:7 to Disk", file: "main.py", has: []string{"Disk(1)"}, gone: []string{"Circle"}},
		{class: "rename", prompt: "Rename the class `Circle` to `Disk`.", file: "main.py", has: []string{"Disk(1)"}, gone: []string{"Circle"}},
		{class: "rename", prompt: "rename the function total_area in shapes/geometry.py to sum_areas", file: "shapes/report.py", has: []string{"sum_areas(shapes)"}, gone: []string{"total_area"}},
		{class: "rename", prompt: "rename the method diameter of Circle to width", file: "main.py", has: []string{".width()"}, gone: []string{"diameter"}},
		{class: "rename", prompt: "Could you rename the variable UNITS in shapes/report.py to UNIT?", file: "shapes/report.py", has: []string{"{UNIT}"}, gone: []string{"UNITS"}},
		{class: "organize", prompt: "organize imports in main.py", file: "main.py", has: []string{"import os\nimport sys\n"}},
		{class: "lookup", prompt: "where is Circle defined", file: "", has: []string{"shapes/geometry.py:5"}},
		{class: "lookup", prompt: "who calls total_area", file: "", has: []string{"shapes/report.py:7"}},
		{class: "near-miss", prompt: "rename area to surface", miss: true},
		{class: "near-miss", prompt: "rename the function Circle to Disk in shapes/geometry.py", miss: true},
		{class: "near-miss", prompt: "rename the class Circle on line 9 of shapes/geometry.py to Disk", miss: true},
		{class: "near-miss", prompt: "rename Polygon to Shape2", miss: true},
	}}
}

// langOutcome is one request's result.
type langOutcome struct {
	req             langReq
	closed, correct bool
	why             string
	uj, baseline    uint64
	wall, server    time.Duration
}

var answeredIn = regexp.MustCompile(`the server answered in (\S+) of (\S+)\)`)

// runLangs puts the language workloads to L1 and writes their section of
// the report to w.
func runLangs(ctx context.Context, c config, work string, say logf, w io.Writer) error {
	if os.Getenv(lsp.PathEnv) == "" {
		// The pinned servers of .ci/setup.d/70-lsp.sh.
		if nm := testdeps.NodeModules(filepath.Join("tiers", "l1", "lsp", "testdata", "servers")); nm != "" {
			os.Setenv(lsp.PathEnv, filepath.Join(nm, ".bin"))
		}
	}
	found := map[string]lsp.Found{}
	for _, f := range lsp.Discover() {
		found[f.Name] = f
	}
	seed := make([]byte, ed25519.SeedSize)
	copy(seed, fmt.Sprintf("joule bench cascade langs %d", c.seed))
	st := &l1.Stage{Key: ed25519.NewKeyFromSeed(seed)}
	table := &energy.Table{}
	fmt.Fprintf(w, "\nTypeScript and Python projects the benchmark writes, through their language servers at L1 (misses go to L4):\n")
	fmt.Fprintf(w, "%-10s %-9s %3s %6s %7s %5s %12s %12s %10s %10s\n", "language", "class", "n", "closed", "correct", "false", "L1+L4 J", "all-L4 J", "p50 req", "p50 server")
	var notes []string
	for _, p := range []langProject{tsProject(), pyProject()} {
		f := found[p.server]
		if f.Path == "" || f.CheckerPath == "" {
			fmt.Fprintf(w, "%-10s skipped: %s or %s is not installed (.ci/setup.d/70-lsp.sh installs them)\n", p.lang, f.Name, f.Checker)
			say("langs: %s skipped, %s not installed", p.lang, p.server)
			continue
		}
		root := filepath.Join(work, "lang-"+strings.ToLower(p.lang))
		for rel, b := range p.files {
			abs := filepath.Join(root, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
				return err
			}
			if err := os.WriteFile(abs, b, 0o600); err != nil {
				return err
			}
		}
		var outs []langOutcome
		for _, rq := range p.reqs {
			say("langs: %s: %s", p.lang, rq.prompt)
			o := langOutcome{req: rq}
			c0, w0 := cpuTime(), time.Now()
			res, err := st.TryResolve(ctx, &tiers.Request{Prompt: rq.prompt, Root: root})
			o.wall = time.Since(w0)
			o.uj = cpuUJ(cpuTime()-c0, c.watts)
			if err := ctx.Err(); err != nil {
				return err
			}
			l4 := table.Energy(c.l4Model, L4Usage(&Request{Class: Rename, Prompt: rq.prompt, ReadBytes: projectBytes(p.files), OutBytes: 400})).UJ
			o.baseline = l4
			o.closed = res != nil
			if res != nil {
				if m := answeredIn.FindStringSubmatch(res.Answer); m != nil {
					o.server, _ = time.ParseDuration(m[1])
				}
				o.correct, o.why = scoreLang(p.files, rq, res)
			} else {
				o.uj += l4
				if err != nil {
					o.why = firstLine(err.Error())
				}
			}
			outs = append(outs, o)
		}
		classes := []string{"rename", "organize", "lookup", "near-miss", "all"}
		for _, cl := range classes {
			var n, closed, correct, falses int
			var uj, base uint64
			var walls, servers []time.Duration
			for _, o := range outs {
				if cl != "all" && o.req.class != cl {
					continue
				}
				n++
				uj += o.uj
				base += o.baseline
				if o.closed {
					closed++
					walls = append(walls, o.wall)
					if o.server > 0 {
						servers = append(servers, o.server)
					}
					if o.correct {
						correct++
					} else {
						falses++
					}
				}
			}
			if n == 0 {
				continue
			}
			fmt.Fprintf(w, "%-10s %-9s %3d %6d %7d %5d %12s %12s %10s %10s\n", p.lang, cl, n, closed, correct, falses, Joules(uj), Joules(base), pct(walls, 50), pct(servers, 50))
		}
		for _, o := range outs {
			switch {
			case o.closed && !o.correct:
				notes = append(notes, fmt.Sprintf("%s FALSE CLOSE %q: %s", p.lang, o.req.prompt, o.why))
			case !o.closed && !o.req.miss:
				notes = append(notes, fmt.Sprintf("%s not closed %q: %s", p.lang, o.req.prompt, o.why))
			}
		}
	}
	sort.Strings(notes)
	for _, n := range notes {
		fmt.Fprintf(w, "  %s\n", n)
	}
	fmt.Fprintf(w, "(a closed request's time is the whole L1 request: the server started, the edit, both type checks; the server's is its answer to the edit request alone)\n")
	return nil
}

func projectBytes(files core.Files) int {
	n := 0
	for _, b := range files {
		n += len(b)
	}
	return n
}

// scoreLang says whether a close did what rq means.
func scoreLang(prior core.Files, rq langReq, res *tiers.Resolution) (bool, string) {
	if rq.miss {
		return false, "a near-miss closed: " + firstLine(res.Answer)
	}
	if rq.class == "lookup" {
		for _, h := range rq.has {
			if !strings.Contains(res.Answer, h) {
				return false, "the answer does not cite " + h
			}
		}
		return true, ""
	}
	if res.Op == nil {
		return false, "no op: " + firstLine(res.Answer)
	}
	next, err := core.Apply(prior, &res.Op.Op)
	if err != nil {
		return false, "the op does not apply: " + err.Error()
	}
	for _, h := range rq.has {
		if !strings.Contains(string(next[rq.file]), h) {
			return false, fmt.Sprintf("%s lacks %q", rq.file, h)
		}
	}
	for _, g := range rq.gone {
		re := regexp.MustCompile(`(^|[^\p{L}\p{N}_$])` + regexp.QuoteMeta(g) + `($|[^\p{L}\p{N}_$])`)
		for p, b := range next {
			if re.Match(b) {
				return false, fmt.Sprintf("%s still holds %s", p, g)
			}
		}
	}
	return true, ""
}

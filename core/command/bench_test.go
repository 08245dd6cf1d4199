package command

import (
	"strings"
	"testing"
)

func BenchmarkAnalyzeFiveCommands(b *testing.B) {
	const line = "cd src && go vet ./... | tee vet.log; git status; echo done"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Analyze(line); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAnalyzeWrapped(b *testing.B) {
	const line = `sudo -u ci timeout -s KILL 60 nice -n 10 sh -c 'go test ./... > test.log 2>&1 && git diff --stat'`
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Analyze(line); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnalyzeHostile measures the inputs the limits exist for.
func BenchmarkAnalyzeHostile(b *testing.B) {
	for _, h := range hostileInputs() {
		b.Run(h.name, func(b *testing.B) {
			for b.Loop() {
				Analyze(h.line)
			}
		})
	}
}

type hostile struct {
	name, line string
	code       string // expected error code, "" for an analysis
}

// hostileInputs are large or deeply nested lines, and what Analyze must
// make of them. Most are as large as Analyze accepts.
func hostileInputs() []hostile {
	const n, mb = maxLineBytes, 1 << 20
	return []hostile{
		{"10MB-commands", strings.Repeat("echo a; ", 10*mb/8), CodeTooComplex},
		{"10MB-literal", "echo '" + strings.Repeat("x", 10*mb) + "'", CodeTooComplex},
		{"max-commands", strings.Repeat("a;", n/2-1), CodeTooComplex},
		{"max-pipes", strings.Repeat("a|", n/2-1) + "b", CodeTooComplex},
		{"max-ands", strings.Repeat("a&&", n/3-1) + "b", CodeTooComplex},
		{"max-ifs", strings.Repeat("if a;then ", n/10-1), CodeParse},
		{"max-functions", strings.Repeat("f() ", n/4-2) + "{ a; }", CodeTooComplex},
		{"max-negated-tests", "[[ " + strings.Repeat("! ", n/2-4) + "a ]]", CodeTooComplex},
		{"max-arith-power", "echo $((" + strings.Repeat("1**", n/3-4) + "1))", CodeTooComplex},
		{"max-empty-backquotes", "echo " + strings.Repeat("`", n-6), ""},
		{"max-arith-commands", strings.Repeat("((((((((((((((((((((a))))))))))))))))))));", n/44), ""},
		{"max-shells", strings.Repeat("sh -c 'sh -c \"a\"';", n/20), CodeTooComplex},
		{"max-subshells", strings.Repeat("(a);", n/4), CodeTooComplex},
		{"deep-parens", strings.Repeat("(", 100000), CodeTooComplex},
		{"deep-subst", strings.Repeat("$(", 50000), CodeTooComplex},
		{"deep-params", strings.Repeat("${a:-", 50000), CodeTooComplex},
		{"nested-arith", "echo $((" + strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100) + "))", CodeTooComplex},
	}
}

package command

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var codes = []string{
	CodeParse, CodeInvalidUTF8, CodeControlChar, CodeTooComplex, CodeEval, CodeSource, CodeAlias, CodeTrap,
	CodeBuiltin, CodeDynamicCommand, CodeDynamicCode, CodeInterpreterStdin, CodeRiskyEnv, CodeValueAsCode,
	CodeWrapperOptions, CodeExtGlob, CodeShellOption, CodeProgramOption, CodeUnknownOption, CodeResourceBomb, CodeUnsupported,
}

// FuzzAnalyze checks that Analyze never panics, always returns either an
// analysis or an *UnanalyzableError with a known code, that every command
// has a literal program name, that the result is deterministic, and that
// running the line through bash -c -- '…' yields the same commands under
// an extra "bash" wrapper. (sh -c is judged as POSIX sh, which refuses
// bash's extensions.)
func FuzzAnalyze(f *testing.F) {
	var lines []string
	data, err := os.ReadFile(filepath.Join("testdata", "lines.json"))
	if err != nil {
		f.Fatal(err)
	}
	if err := json.Unmarshal(data, &lines); err != nil {
		f.Fatal(err)
	}
	for _, l := range lines {
		f.Add(l)
	}
	// The gate's attack table: real payloads, mutated by the fuzzer.
	attacks, _ := filepath.Glob(filepath.Join("..", "gate", "testdata", "attacks", "*.jsonl"))
	for _, file := range attacks {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			var c struct{ Cmd string }
			if json.Unmarshal([]byte(l), &c) == nil && c.Cmd != "" {
				f.Add(c.Cmd)
			}
		}
	}
	for _, l := range []string{
		"", " ", ";", "&&", "a'b", "$((", "${x", "`", "<<EOF", "cat <<EOF\n$(a)\nEOF",
		"timeout -k", "xargs -I", "find . -exec", "env -u", "sudo --", "sh -c", "bash -o", "nice -n",
		"python3 -c", "x=( [1]=a )", "declare -n", "let", "((x=", "[[ -v", "f() { f; }; f",
		"cd a && cd b && cd c && cd d && echo > x", "a=1 b=$a c=${b} d=$((c)) ; echo $((d))",
		"$'\\c'", "$'\\u00e9'", "echo {a,b}{c,d}", "exec 0<f; python3", "coproc x { :; }", "time",
		"pwsh -Com 'x'", "deno run -", "awk -f /dev/stdin", "perl -pie 's/a/b/' f", "watch -x",
	} {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, line string) {
		defer watchdog(line)()
		an, err := Analyze(line)
		checkResult(t, line, an, err)
		again, err2 := Analyze(line)
		if !reflect.DeepEqual(an, again) || !reflect.DeepEqual(err, err2) {
			t.Fatalf("Analyze(%q) is not deterministic", line)
		}
		if len(line) > 4096 {
			return
		}
		wrapped := "bash -c -- " + shellQuote(line)
		wan, werr := Analyze(wrapped)
		checkResult(t, wrapped, wan, werr)
		var ue, wue *UnanalyzableError
		switch {
		case errors.As(werr, &wue) && wue.Code == CodeTooComplex:
			// the extra shell may cross a limit
		case err == nil && werr != nil:
			t.Fatalf("Analyze(%q) succeeded but its bash -c form fails: %v", line, werr)
		case err == nil:
			if len(an.Commands) != len(wan.Commands) || !reflect.DeepEqual(an.Writes, wan.Writes) {
				t.Fatalf("bash -c changes the analysis of %q:\n%+v\n%+v", line, an, wan)
			}
			for i, c := range an.Commands {
				w := wan.Commands[i]
				if !reflect.DeepEqual(c.Args, w.Args) || !slices.Equal(append([]string{"bash"}, c.Wrappers...), w.Wrappers) {
					t.Fatalf("bash -c changes command %d of %q: %+v vs %+v", i, line, c, w)
				}
			}
		case errors.As(err, &ue) && ue.Code != CodeTooComplex:
			if werr == nil {
				t.Fatalf("Analyze(%q) fails (%v) but its bash -c form succeeds", line, err)
			}
			if wue.Code != ue.Code {
				t.Fatalf("Analyze(%q) fails with %s but its bash -c form with %s", line, ue.Code, wue.Code)
			}
		}
	})
}

// watchdog crashes the fuzz worker, which records the input, when one
// input runs far longer than any should: go test -fuzz does not report
// hangs by itself. It returns the function that stops it.
func watchdog(line string) func() {
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			panic(fmt.Sprintf("Analyze(%q) has run for 10s", line))
		}
	}()
	return func() { close(done) }
}

func checkResult(t *testing.T, line string, an *Analysis, err error) {
	t.Helper()
	if err != nil {
		var ue *UnanalyzableError
		if !errors.As(err, &ue) {
			t.Fatalf("Analyze(%q) returned %T: %v", line, err, err)
		}
		if !slices.Contains(codes, ue.Code) || ue.Reason == "" {
			t.Fatalf("Analyze(%q) returned code %q reason %q", line, ue.Code, ue.Reason)
		}
		if strings.Contains(ue.Reason, "internal error") {
			t.Fatalf("Analyze(%q) panicked: %s", line, ue.Reason)
		}
		if an != nil {
			t.Fatalf("Analyze(%q) returned an analysis with an error", line)
		}
		return
	}
	if an == nil || an.Commands == nil || an.Writes == nil {
		t.Fatalf("Analyze(%q) returned %+v", line, an)
	}
	for _, c := range an.Commands {
		if len(c.Args) == 0 || !c.Args[0].Literal {
			t.Fatalf("Analyze(%q) listed a command without a literal program: %+v", line, c)
		}
	}
	seen := map[Write]bool{}
	for _, w := range an.Writes {
		if seen[w] {
			t.Fatalf("Analyze(%q) listed %+v twice", line, w)
		}
		seen[w] = true
		if w.Literal && harmlessTarget(w.Path) {
			t.Fatalf("Analyze(%q) listed a write to %s", line, w.Path)
		}
	}
}

package command

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAgainstBash runs generated lines with the real bash, where every
// leaf program is a stub that logs its name, and checks that each program
// that ran and each file that was written appears in the analysis. Real
// wrappers (timeout, env, xargs, find, sh …) forward to the stubs.
func TestAgainstBash(t *testing.T) {
	if testing.Short() {
		t.Skip("runs bash")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	stubs := t.TempDir()
	for _, name := range []string{"a", "b", "c", "rm"} {
		script := "#!/bin/sh\nl=\"${0##*/}\"; for x in \"$@\"; do l=\"$l $x\"; done; printf '%s\\n' \"$l\" >> \"$LOG\"\n"
		if err := os.WriteFile(filepath.Join(stubs, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"timeout", "nice", "env", "nohup", "xargs", "find", "sh", "bash", "cat"} {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Skipf("no %s", name)
		}
		if err := os.Symlink(p, filepath.Join(stubs, name)); err != nil {
			t.Fatal(err)
		}
	}
	r := rand.New(rand.NewSource(1))
	work, logs := t.TempDir(), t.TempDir()
	checked := 0
	for i := 0; checked < 150 && i < 1000; i++ {
		line := generateLine(r, 0)
		an, err := Analyze(line)
		if err != nil {
			continue
		}
		checked++
		wd, log := filepath.Join(work, fmt.Sprint(i)), filepath.Join(logs, fmt.Sprint(i))
		if err := os.MkdirAll(filepath.Join(wd, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, bash, "-c", line+"\nwait")
		cmd.Dir, cmd.Stdin = wd, strings.NewReader("")
		cmd.Env = []string{"PATH=" + stubs, "LOG=" + log, "HOME=/nonexistent", "V=v1 v2"}
		_ = cmd.Run() // stubs and wrappers may fail; what ran is in the log
		cancel()
		data, _ := os.ReadFile(log)
		for _, ran := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if ran != "" && !ranIn(strings.Fields(ran)[0], an) {
				t.Errorf("%q ran %q, which the analysis misses: %+v", line, ran, an.Commands)
			}
		}
		_ = filepath.Walk(wd, func(p string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() {
				rel, _ := filepath.Rel(wd, p)
				if !wroteIn(rel, an) {
					t.Errorf("%q wrote %s, which the analysis misses: %+v", line, rel, an.Writes)
				}
			}
			return nil
		})
	}
	if checked < 100 {
		t.Fatalf("only %d generated lines were analyzable", checked)
	}
}

func ranIn(name string, an *Analysis) bool {
	for _, c := range an.Commands {
		if filepath.Base(c.Args[0].Text) == name {
			return true
		}
	}
	return false
}

func wroteIn(path string, an *Analysis) bool {
	for _, w := range an.Writes {
		if !w.Literal || w.Path == path {
			return true
		}
	}
	return false
}

// generateLine builds a random line from constructs that hide commands:
// lists, pipes, substitutions, groups, control flow, functions, wrappers,
// nested shells, redirections and directory changes.
func generateLine(r *rand.Rand, depth int) string {
	leaves := []string{"a", "b x", `c "y z"`, "r''m -f q", `\a`, `"b"`, "a $V", "b {1,2}", "$'\\x61' k", "c 'p q'"}
	if depth > 3 {
		return leaves[r.Intn(len(leaves))]
	}
	in := func() string { return generateLine(r, depth+1) }
	switch r.Intn(28) {
	case 0:
		return in() + "; " + in()
	case 1:
		return in() + " && " + in()
	case 2:
		return "false || " + in()
	case 3:
		return in() + " | " + in()
	case 4:
		return "echo $(" + in() + ")"
	case 5:
		return "echo `" + strings.ReplaceAll(in(), "`", "") + "`"
	case 6:
		return "(" + in() + ")"
	case 7:
		return "{ " + in() + "; }"
	case 8:
		return "if " + in() + "; then " + in() + "; fi"
	case 9:
		return "for i in 1 2; do " + in() + "; done"
	case 10:
		return "f() { " + in() + "; }; f"
	case 11:
		return "cat <(" + in() + ")"
	case 12:
		return "timeout 5 " + in()
	case 13:
		return "nice -n 1 " + in()
	case 14:
		return "env X=1 " + in()
	case 15:
		return "sh -c " + shellQuote(in())
	case 16:
		return "bash -c " + shellQuote(in())
	case 17:
		return "echo q | xargs " + leaves[r.Intn(4)]
	case 18:
		return "find . -maxdepth 0 -exec " + leaves[r.Intn(4)] + " {} \\;"
	case 19:
		return "X=$(" + in() + ") " + in()
	case 20:
		return "cat <<EOF\n$(" + strings.ReplaceAll(in(), "EOF", "") + ")\nEOF\n"
	case 21:
		return "nohup " + in() + " >/dev/null 2>&1"
	case 22:
		return "command " + in()
	case 23:
		return in() + " > o" + fmt.Sprint(r.Intn(9))
	case 24:
		return in() + " >> sub/p" + fmt.Sprint(r.Intn(9))
	case 25:
		return "cd sub && " + in()
	case 26:
		return "(cd sub; " + in() + ")"
	default:
		return "{ " + in() + "; } 2> e" + fmt.Sprint(r.Intn(9))
	}
}

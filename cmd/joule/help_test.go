package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestEveryHelp asks every command and subcommand for its help, as -h and
// --help: each prints its usage on stdout and exits 0, and none takes the
// flag for an argument (conformance gen -h once wrote a pack into ./-h).
func TestEveryHelp(t *testing.T) {
	env, _ := initHome(t)
	var words [][]string
	for _, c := range commands {
		words = append(words, []string{c.name})
		subs := subcommands[c.name]
		if c.name == "help" || c.name == "completion" {
			subs = nil
		}
		for _, s := range subs {
			words = append(words, []string{c.name, s})
		}
	}
	for _, w := range words {
		for _, flag := range []string{"-h", "--help"} {
			args := append(append([]string{}, w...), flag)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, jouleBin, args...)
				cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
				var out, errb strings.Builder
				cmd.Stdout, cmd.Stderr = &out, &errb
				err := cmd.Run()
				if err != nil || !strings.Contains(out.String(), "usage: joule "+w[0]) {
					t.Fatalf("joule %s: %v\nstdout: %.500s\nstderr: %.500s", strings.Join(args, " "), err, out.String(), errb.String())
				}
				// Once (exec -h printed it twice), without the flags joule's
				// own binaries pass (hook's --answer-fd, --then-serve).
				if n := strings.Count(out.String(), "usage: joule"); n != 1 || strings.Contains(out.String(), internalFlag) {
					t.Fatalf("joule %s prints its usage %d times, or an internal flag:\n%s", strings.Join(args, " "), n, out.String())
				}
				if ents, _ := os.ReadDir(dir); len(ents) > 0 {
					t.Fatalf("joule %s wrote %s into the current directory", strings.Join(args, " "), ents[0].Name())
				}
			})
		}
	}
}

package main

import (
	"context"
	"fmt"
	"os"

	"github.com/joulehook/joule/conformance"
)

func init() {
	register(&command{name: "conformance", summary: "generate or check a conformance vector pack", run: runConformance})
}

func runConformance(_ context.Context, e *env, args []string) error {
	const usage = "conformance gen DIR | conformance check DIR"
	if len(args) == 0 {
		return usagef("conformance: want '%s'", usage)
	}
	help := args[0] == "help"
	for _, a := range args {
		if a == "--" {
			break
		}
		help = help || a == "-h" || a == "--help" || a == "-help"
	}
	switch {
	case help:
		fmt.Fprintf(e.stdout, "usage: joule %s\n\ngen writes this implementation's deterministic pack; check checks any pack\nin the shapes of WIRE.md: one line per vector, then 'N passed, M failed'.\nExit status 1 on any failure.\n", usage)
		return nil
	case args[0] == "gen" || args[0] == "check":
	default:
		return unknownSub("conformance", args[0], "gen", "check")
	}
	if len(args) == 3 && args[1] == "--" {
		args = []string{args[0], args[2]}
	}
	if len(args) != 2 {
		return usagef("conformance %s: want exactly one directory", args[0])
	}
	dir := args[1]
	if args[0] == "gen" {
		if err := conformance.Gen(dir); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "wrote %s\n", dir)
		return nil
	}
	if _, err := os.Stat(dir); err != nil {
		return err
	}
	rep, err := conformance.Check(dir)
	if err != nil {
		return err
	}
	rep.Write(e.stdout)
	if rep.Failed() > 0 {
		return &exitError{1}
	}
	return nil
}

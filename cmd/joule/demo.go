package main

import (
	"context"
	"os"

	"github.com/joulehook/joule/demo"
)

func init() {
	register(&command{name: "demo", summary: "run the end-to-end demo in a throwaway home and workspace", run: runDemo})
}

func runDemo(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "demo", "demo [--keep]\n\nCreates a throwaway JOULE_HOME and workspace, then builds, signs and\napplies a real CodingOp, seals its JCR-1 receipt and verifies it; gates four\nagent actions under a grant; meters a model call through joule proxy; and\nruns an L1 rename through joule acp as an editor would.")
	keep := fs.Bool("keep", false, "keep the temporary directories and print where they are")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return demo.Run(ctx, demo.Options{Out: e.stdout, Err: e.stderr, Joule: exe, Keep: *keep})
}

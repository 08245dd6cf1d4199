package l3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/joulehook/joule/core"
)

// Checker validates a candidate tree: the edit closes only if it passes.
type Checker struct {
	// Command is run in the scratch copy after the Go checks, when set
	// (argv, no shell); the changed paths are in $JOULE_CHANGED_FILES, one
	// per line. Exit status 0 passes.
	Command []string
	Timeout time.Duration // per toolchain or command run; 0 means 2 minutes
	GoTool  string        // the go command; "" finds "go" on PATH
}

// ValidationError is a candidate that failed validation: Output is what
// the tools said, fed back to the model for its repair.
type ValidationError struct {
	Step   string // "gofmt", "go build", "go vet", "check"
	Output string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("%s failed: %s", e.Step, oneLine(strings.Join(strings.Fields(e.Output), " ")))
}

// MaxToolOutput bounds the tool output kept for the repair prompt.
const MaxToolOutput = 8 << 10

// Check validates next, the tree after the edit; changed lists the paths
// the edit touched. Go files are gofmt-ed in place in next (formatting is
// part of the edit, not a failure); a file that does not parse fails. Then
// the touched Go packages are built and vetted in a scratch copy of the
// tree, and the check command runs there. A tree with changed files that
// neither Go nor a check command can validate fails closed.
func (c *Checker) Check(ctx context.Context, next core.Files, changed []string) error {
	var goFiles, other []string
	for _, p := range changed {
		if strings.HasSuffix(p, ".go") {
			goFiles = append(goFiles, p)
		} else {
			other = append(other, p)
		}
	}
	if len(other) > 0 && len(c.Command) == 0 {
		return fmt.Errorf("l3: no check command is configured to validate %s (tiers.l3.check in config.json)", strings.Join(other, ", "))
	}
	for _, p := range goFiles {
		src, err := format.Source(next[p])
		if err != nil {
			return &ValidationError{Step: "gofmt", Output: fmt.Sprintf("%s: %v", p, err)}
		}
		next[p] = src
	}
	dir, err := os.MkdirTemp("", "joule-l3-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := writeTree(dir, next); err != nil {
		return fmt.Errorf("l3: writing the scratch copy: %v", err)
	}
	if len(goFiles) > 0 {
		if err := c.goChecks(ctx, dir, next, goFiles); err != nil {
			return scrub(err, dir)
		}
	}
	if len(c.Command) > 0 {
		out, err := c.run(ctx, dir, nil, []string{"JOULE_CHANGED_FILES=" + strings.Join(changed, "\n")}, c.Command...)
		if err != nil {
			return scrub(stepError(ctx, "check", out, err), dir)
		}
	}
	return nil
}

// scrub makes the tools' paths relative to the tree: the scratch
// directory means nothing to the model or the user.
func scrub(err error, dir string) error {
	var ve *ValidationError
	if errors.As(err, &ve) {
		ve.Output = strings.ReplaceAll(ve.Output, dir+string(filepath.Separator), "")
	}
	return err
}

func writeTree(dir string, files core.Files) error {
	for p, b := range files {
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// goChecks builds and vets the packages holding goFiles, each from the
// root of the module that holds it (or file by file outside any module).
func (c *Checker) goChecks(ctx context.Context, dir string, files core.Files, goFiles []string) error {
	type mod struct {
		root string // slash path of the module root within the tree; "" is the tree's root
		pkgs map[string]bool
	}
	mods := map[string]*mod{}
	loose := map[string][]string{} // package dir → files, outside any module
	for _, p := range goFiles {
		pdir := path.Dir(p)
		root, ok := moduleRoot(files, pdir)
		if !ok {
			loose[pdir] = append(loose[pdir], path.Base(p))
			continue
		}
		m := mods[root]
		if m == nil {
			m = &mod{root: root, pkgs: map[string]bool{}}
			mods[root] = m
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(pdir, root), "/")
		if root == "." {
			rel = pdir
		}
		if rel == "" || rel == "." {
			m.pkgs["."] = true
		} else {
			m.pkgs["./"+rel] = true
		}
	}
	roots := make([]string, 0, len(mods))
	for r := range mods {
		roots = append(roots, r)
	}
	sort.Strings(roots)
	for _, r := range roots {
		m := mods[r]
		pkgs := make([]string, 0, len(m.pkgs))
		for p := range m.pkgs {
			pkgs = append(pkgs, p)
		}
		sort.Strings(pkgs)
		wd := filepath.Join(dir, filepath.FromSlash(r))
		for _, step := range []string{"build", "vet"} {
			args := append([]string{step}, pkgs...)
			if step == "build" {
				args = append([]string{"build", "-o", os.DevNull}, pkgs...)
			}
			if out, err := c.run(ctx, wd, nil, nil, c.goTool(args)...); err != nil {
				return stepError(ctx, "go "+step, out, err)
			}
		}
	}
	dirs := make([]string, 0, len(loose))
	for d := range loose {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		var names []string
		for p := range files {
			if path.Dir(p) == d && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
				names = append(names, path.Base(p))
			}
		}
		sort.Strings(names)
		wd := filepath.Join(dir, filepath.FromSlash(d))
		env := []string{"GO111MODULE=off"}
		for _, step := range []string{"build", "vet"} {
			args := append([]string{step}, names...)
			if step == "build" {
				args = append([]string{"build", "-o", os.DevNull}, names...)
			}
			if out, err := c.run(ctx, wd, nil, env, c.goTool(args)...); err != nil {
				return stepError(ctx, "go "+step, out, err)
			}
		}
	}
	return nil
}

// moduleRoot finds the go.mod nearest above dir in the tree.
func moduleRoot(files core.Files, dir string) (string, bool) {
	for d := dir; ; d = path.Dir(d) {
		mod := "go.mod"
		if d != "." {
			mod = d + "/go.mod"
		}
		if _, ok := files[mod]; ok {
			return d, true
		}
		if d == "." || d == "/" {
			return "", false
		}
	}
}

func (c *Checker) goTool(args []string) []string {
	tool := c.GoTool
	if tool == "" {
		tool = "go"
	}
	return append([]string{tool}, args...)
}

func (c *Checker) run(ctx context.Context, dir string, stdin []byte, env []string, argv ...string) ([]byte, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.WaitDelay = 2 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return out.Bytes(), fmt.Errorf("%s did not finish within %s", argv[0], timeout)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return out.Bytes(), fmt.Errorf("running %s: %v", argv[0], err)
	}
	return out.Bytes(), err
}

// stepError turns a failed run into a ValidationError for the model, or,
// when the run could not happen at all, an error the repair cannot fix.
func stepError(ctx context.Context, step string, out []byte, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return fmt.Errorf("l3: %s: %v", step, err)
	}
	s := string(out)
	if len(s) > MaxToolOutput {
		s = s[:MaxToolOutput] + "\n…(truncated)"
	}
	return &ValidationError{Step: step, Output: strings.TrimSpace(s)}
}

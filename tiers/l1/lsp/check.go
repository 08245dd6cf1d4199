package lsp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"

	"github.com/joulehook/joule/core"
)

// ErrRegression is returned when an edit leaves the project with a type
// error it did not have.
var ErrRegression = errors.New("the edit breaks the type check")

// Check type-checks prior and next, each written to a temporary directory
// (with root's node_modules linked in), with srv's checker (tsc --noEmit,
// pyright, go vet) and refuses next if it has an error prior has not. It
// is the fallback of the check on the resident server (checkEdit), for a
// server that cannot report errors on request.
func Check(ctx context.Context, srv Server, root string, prior, next core.Files) error {
	bin, err := Look(srv.Checker)
	if err != nil {
		return fmt.Errorf("%s is not installed, so the edit cannot be checked: %v", srv.Checker, err)
	}
	// The two trees are checked at once: each check is a node process
	// reading the whole project, the longest part of a request.
	type count struct {
		errs []string
		err  error
	}
	var dirs []string // for go vet: the packages the edit touches
	seen := map[string]bool{}
	for _, p := range next.Paths() {
		if !bytes.Equal(prior[p], next[p]) && strings.HasSuffix(p, ".go") && !seen[path.Dir(p)] {
			seen[path.Dir(p)] = true
			dirs = append(dirs, "./"+path.Dir(p))
		}
	}
	done := make(chan count, 1)
	go func() {
		errs, err := checkTree(ctx, srv, bin, root, prior, dirs)
		done <- count{errs, err}
	}()
	after, err := checkTree(ctx, srv, bin, root, next, dirs)
	b := <-done
	if b.err != nil {
		return b.err
	}
	if err != nil {
		return err
	}
	if added := newErrors(b.errs, after); len(added) > 0 {
		return fmt.Errorf("%w: %s reports %d error(s) it did not before (%d before, %d after): %s", ErrRegression, srv.Checker, len(added), len(b.errs), len(after), added[0])
	}
	return nil
}

// newErrors are the errors of after that before has not, counted: a
// second copy of an error already there is new too.
func newErrors(before, after []string) []string {
	have := map[string]int{}
	for _, e := range before {
		have[e]++
	}
	var added []string
	for _, e := range after {
		if have[e] > 0 {
			have[e]--
			continue
		}
		added = append(added, e)
	}
	sort.Strings(added)
	return added
}

// errorKey is an error without its position: FILE: MESSAGE.
var errorPos = regexp.MustCompile(`(:\d+:\d+|\(\d+,\d+\))(:)?`)

func errorKey(dir, e string) string {
	e = strings.ReplaceAll(firstLine(e), dir+string(filepath.Separator), "")
	return errorPos.ReplaceAllString(e, ":")
}

var goError = regexp.MustCompile(`(?m)^(vet: )?\S+\.go:\d+:\d+: .*$`)

var tscError = regexp.MustCompile(`(?m)^(.*?)\(\d+,\d+\): error TS\d+: .*$|^error TS\d+: .*$`)

// checkTree lists the checker's errors on files, without positions.
func checkTree(ctx context.Context, srv Server, bin, root string, files core.Files, dirs []string) ([]string, error) {
	dir, err := os.MkdirTemp("", "joule-lsp-check-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for _, p := range files.Paths() {
		if ignored(p) {
			continue
		}
		abs := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(abs, files[p], 0o600); err != nil {
			return nil, err
		}
	}
	if fi, err := os.Stat(filepath.Join(root, "node_modules")); err == nil && fi.IsDir() {
		if err := os.Symlink(filepath.Join(root, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
			return nil, err
		}
	}
	var args []string
	switch srv.Checker {
	case "pyright":
		args = []string{"--outputjson", "--project", dir}
		if _, ok := files["pyrightconfig.json"]; !ok {
			if _, ok := files["pyproject.toml"]; !ok {
				args = []string{"--outputjson", dir}
			}
		}
	case "tsc":
		if _, ok := files["tsconfig.json"]; ok {
			args = []string{"--noEmit", "--pretty", "false", "-p", dir}
		} else {
			args = []string{"--noEmit", "--pretty", "false", "--allowJs"}
			for _, p := range files.Paths() {
				if s, ok := For(p); ok && s.Name == srv.Name && !ignored(p) {
					args = append(args, filepath.Join(dir, filepath.FromSlash(p)))
				}
			}
		}
	case "go":
		if len(dirs) == 0 {
			return nil, nil
		}
		args = append([]string{"vet"}, dirs...)
	default:
		return nil, fmt.Errorf("no way to run checker %s", srv.Checker)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	if srv.Checker == "go" {
		// the toolchain at hand, the module cache as it is: no download
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOWORK=off", "GOPROXY=off")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	switch srv.Checker {
	case "go":
		ms := goError.FindAllString(stderr.String()+out.String(), -1)
		if runErr != nil && len(ms) == 0 {
			return nil, fmt.Errorf("go vet failed without reporting a position (%v): %s", runErr, firstLine(stderr.String()))
		}
		keys := make([]string, len(ms))
		for i, m := range ms {
			keys[i] = errorKey(dir, m)
		}
		return keys, nil
	case "pyright":
		var rep struct {
			GeneralDiagnostics []struct {
				File     string `json:"file"`
				Severity string `json:"severity"`
				Message  string `json:"message"`
				Range    Range  `json:"range"`
			} `json:"generalDiagnostics"`
			Summary *struct {
				ErrorCount int `json:"errorCount"`
			} `json:"summary"`
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Summary == nil {
			return nil, fmt.Errorf("pyright did not report (%v): %s", runErr, firstLine(stderr.String()+out.String()))
		}
		var msgs []string
		for _, d := range rep.GeneralDiagnostics {
			if d.Severity == "error" {
				rel, _ := filepath.Rel(dir, d.File)
				msgs = append(msgs, filepath.ToSlash(rel)+": "+firstLine(d.Message))
			}
		}
		return msgs, nil
	default:
		ms := tscError.FindAllString(out.String(), -1)
		if runErr != nil && len(ms) == 0 {
			return nil, fmt.Errorf("tsc failed without reporting an error (%v): %s", runErr, firstLine(stderr.String()+out.String()))
		}
		keys := make([]string, len(ms))
		for i, m := range ms {
			keys[i] = errorKey(dir, m)
		}
		return keys, nil
	}
}

func firstLine(s string) string {
	s = string(bytes.TrimSpace([]byte(s)))
	if i := bytes.IndexByte([]byte(s), '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

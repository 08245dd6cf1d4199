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

// ErrRegression is returned when an edit leaves the project with more type
// errors than it had.
var ErrRegression = errors.New("the edit breaks the type check")

// Check type-checks prior and next, each written to a temporary directory
// (with root's node_modules linked in), with srv's checker (tsc --noEmit,
// pyright) and refuses next if it has more errors than prior.
func Check(ctx context.Context, srv Server, root string, prior, next core.Files) error {
	bin, err := Look(srv.Checker)
	if err != nil {
		return fmt.Errorf("%s is not installed, so the edit cannot be checked: %v", srv.Checker, err)
	}
	// The two trees are checked at once: each check is a node process
	// reading the whole project, the longest part of a request.
	type count struct {
		n     int
		first string
		err   error
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
		n, first, err := checkTree(ctx, srv, bin, root, prior, dirs)
		done <- count{n, first, err}
	}()
	after, first, err := checkTree(ctx, srv, bin, root, next, dirs)
	b := <-done
	if b.err != nil {
		return b.err
	}
	if err != nil {
		return err
	}
	before := b.n
	if after > before {
		return fmt.Errorf("%w: %s reports %d error(s) after it, %d before (%s)", ErrRegression, srv.Checker, after, before, first)
	}
	return nil
}

var goError = regexp.MustCompile(`(?m)^(vet: )?\S+\.go:\d+:\d+: .*$`)

var tscError = regexp.MustCompile(`(?m)^(.*?)\(\d+,\d+\): error TS\d+: .*$|^error TS\d+: .*$`)

// checkTree counts the checker's errors on files, returning the first.
func checkTree(ctx context.Context, srv Server, bin, root string, files core.Files, dirs []string) (int, string, error) {
	dir, err := os.MkdirTemp("", "joule-lsp-check-")
	if err != nil {
		return 0, "", err
	}
	defer os.RemoveAll(dir)
	for _, p := range files.Paths() {
		if ignored(p) {
			continue
		}
		abs := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
			return 0, "", err
		}
		if err := os.WriteFile(abs, files[p], 0o600); err != nil {
			return 0, "", err
		}
	}
	if fi, err := os.Stat(filepath.Join(root, "node_modules")); err == nil && fi.IsDir() {
		if err := os.Symlink(filepath.Join(root, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
			return 0, "", err
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
			return 0, "", nil
		}
		args = append([]string{"vet"}, dirs...)
	default:
		return 0, "", fmt.Errorf("no way to run checker %s", srv.Checker)
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
		return 0, "", ctx.Err()
	}
	switch srv.Checker {
	case "go":
		ms := goError.FindAllString(stderr.String()+out.String(), -1)
		if runErr != nil && len(ms) == 0 {
			return 0, "", fmt.Errorf("go vet failed without reporting a position (%v): %s", runErr, firstLine(stderr.String()))
		}
		first := ""
		if len(ms) > 0 {
			first = firstLine(ms[0])
		}
		return len(ms), first, nil
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
			return 0, "", fmt.Errorf("pyright did not report (%v): %s", runErr, firstLine(stderr.String()+out.String()))
		}
		var msgs []string
		for _, d := range rep.GeneralDiagnostics {
			if d.Severity == "error" {
				rel, _ := filepath.Rel(dir, d.File)
				msgs = append(msgs, fmt.Sprintf("%s:%d: %s", filepath.ToSlash(rel), d.Range.Start.Line+1, firstLine(d.Message)))
			}
		}
		sort.Strings(msgs)
		first := ""
		if len(msgs) > 0 {
			first = msgs[0]
		}
		return rep.Summary.ErrorCount, first, nil
	default:
		ms := tscError.FindAllString(out.String(), -1)
		if runErr != nil && len(ms) == 0 {
			return 0, "", fmt.Errorf("tsc failed without reporting an error (%v): %s", runErr, firstLine(stderr.String()+out.String()))
		}
		first := ""
		if len(ms) > 0 {
			first = firstLine(ms[0])
		}
		return len(ms), first, nil
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

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/joulehook/joule/plugins/hook"
)

// scopeArgs are the flags that name r's scope on a command line.
func scopeArgs(r hook.Record) string {
	if r.Project == "" {
		return "--user"
	}
	return "--project " + hook.ShellQuote(r.Project)
}

// installAgain is the command that installs r again as it is: its scope,
// and --resident and --trust when it had them (mode flags are the
// caller's).
func installAgain(r hook.Record) string {
	line := "joule install " + r.Host + " " + scopeArgs(r)
	if residentRecord(r) {
		line += " --resident"
	}
	if r.Trusted {
		line += " --trust"
	}
	return line
}

// residentRecord reports an install answered by joule serve: the record
// says so or, for one recorded before it did, a file it wrote holds joule
// serve's http hook.
func residentRecord(r hook.Record) bool {
	if r.Resident {
		return true
	}
	for _, f := range r.Files {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), hook.ResidentPath(r.Host, "")) && strings.Contains(string(b), `"http"`) {
			return true
		}
	}
	return false
}

// recordedScope picks, for an uninstall that names no scope, the install
// of host that $JOULE_HOME records: the only one, or the one the user picks
// on a terminal when there are several. It returns the project ("" for the
// user scope).
func recordedScope(e *env, home, host string) (string, error) {
	recs, err := hook.LoadRecords(home)
	if err != nil {
		return "", err
	}
	var mine []hook.Record
	for _, r := range recs {
		if r.Host == host {
			mine = append(mine, r)
		}
	}
	switch len(mine) {
	case 0:
		return "", usagef("install --uninstall: %s records no install of %s: say where it is, with --project DIR or --user", filepath.Join(home, hook.InstallsFile), host)
	case 1:
		return mine[0].Project, nil
	}
	var list strings.Builder
	for i, r := range mine {
		fmt.Fprintf(&list, "  %d. joule install %s %s --uninstall   (%s: %s)\n", i+1, host, scopeArgs(r), r.Time.Format("2006-01-02 15:04"), strings.Join(r.Files, ", "))
	}
	in, ok := e.stdin.(*os.File)
	if !ok || !isTerminal(in) || !isTerminal(e.stderr) {
		return "", usagef("install --uninstall: %s is installed in %d places; pick one with --project DIR or --user:\n%s", host, len(mine), strings.TrimRight(list.String(), "\n"))
	}
	fmt.Fprintf(e.stderr, "%s is installed in %d places:\n%swhich one to remove? [1-%d] ", host, len(mine), list.String(), len(mine))
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	n, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || n < 1 || n > len(mine) {
		return "", usagef("install --uninstall: %q is not one of 1-%d; nothing removed", strings.TrimSpace(line), len(mine))
	}
	return mine[n-1].Project, nil
}

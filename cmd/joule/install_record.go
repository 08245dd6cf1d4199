package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/joulehook/joule/plugins/hook"
)

// InstallsFile is the record of every install, in $JOULE_HOME (0600):
// what 'joule install HOST --uninstall' without --project or --user
// removes.
const InstallsFile = "installs.json"

// installRecord is one install: the host, where it went and the files it
// wrote.
type installRecord struct {
	Host    string    `json:"host"`
	Project string    `json:"project,omitempty"` // "" for the user scope
	Files   []string  `json:"files"`
	Time    time.Time `json:"time"`
}

func (r installRecord) where() string {
	if r.Project == "" {
		return "--user"
	}
	return "--project " + hook.ShellQuote(r.Project)
}

func loadInstalls(home string) ([]installRecord, error) {
	b, err := os.ReadFile(filepath.Join(home, InstallsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var recs []installRecord
	if err := json.Unmarshal(b, &recs); err != nil {
		return nil, fmt.Errorf("%s: %v (fix or remove it; it only lists installs)", filepath.Join(home, InstallsFile), err)
	}
	return recs, nil
}

// noteInstall records (or, with remove, forgets) the install of host in
// project ("" for the user scope) with the files it wrote.
func noteInstall(home, host, project string, changes []hook.Change, remove bool, now time.Time) error {
	recs, err := loadInstalls(home)
	if err != nil {
		return err
	}
	var kept []installRecord
	for _, r := range recs {
		if r.Host != host || r.Project != project {
			kept = append(kept, r)
		}
	}
	if !remove {
		r := installRecord{Host: host, Project: project, Time: now.UTC()}
		for _, c := range changes {
			if c.After != nil {
				r.Files = append(r.Files, c.Path)
			}
		}
		kept = append(kept, r)
	}
	sort.Slice(kept, func(i, j int) bool {
		if kept[i].Host != kept[j].Host {
			return kept[i].Host < kept[j].Host
		}
		return kept[i].Project < kept[j].Project
	})
	path := filepath.Join(home, InstallsFile)
	if len(kept) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(kept, "", "  ")
	tmp, err := os.CreateTemp(home, "."+InstallsFile+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// recordedScope picks, for an uninstall that names no scope, the install
// of host that $JOULE_HOME records: the only one, or the one the user picks
// on a terminal when there are several. It returns the project ("" for the
// user scope).
func recordedScope(e *env, home, host string) (string, error) {
	recs, err := loadInstalls(home)
	if err != nil {
		return "", err
	}
	var mine []installRecord
	for _, r := range recs {
		if r.Host == host {
			mine = append(mine, r)
		}
	}
	switch len(mine) {
	case 0:
		return "", usagef("install --uninstall: %s records no install of %s: say where it is, with --project DIR or --user", filepath.Join(home, InstallsFile), host)
	case 1:
		return mine[0].Project, nil
	}
	var list strings.Builder
	for i, r := range mine {
		fmt.Fprintf(&list, "  %d. joule install %s %s --uninstall   (%s: %s)\n", i+1, host, r.where(), r.Time.Format("2006-01-02 15:04"), strings.Join(r.Files, ", "))
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

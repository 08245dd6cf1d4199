package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/joulehook/joule/core/home"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/rule"
	"github.com/joulehook/joule/core/sandbox"
	"github.com/joulehook/joule/plugins/hook"
	"github.com/joulehook/joule/plugins/hosts"
	"github.com/joulehook/joule/tiers/config"
)

func init() {
	register(&command{name: "install", summary: "write (or remove) a host's hook, MCP and status-line configuration and check it is armed", run: runInstall})
}

// projectFlag is --project with an optional DIR: "--project" alone means
// the current directory, "--project=DIR" or "--project DIR" name one.
type projectFlag struct {
	set bool
	dir string
}

func (p *projectFlag) String() string   { return p.dir }
func (p *projectFlag) IsBoolFlag() bool { return true }
func (p *projectFlag) Set(v string) error {
	p.set = true
	if v != "true" {
		p.dir = v
	}
	return nil
}

// installerNames are the hosts joule install serves.
func installerNames() string { return strings.Join(hosts.Names(hosts.Installable), ", ") }

// residentNames are the hosts whose http hooks joule serve answers.
func residentNames() string {
	return strings.Join(hosts.Names(func(h hook.Host) bool { return h.Resident }), ", ")
}

// trustNames says which hosts joule install --trust serves, and how.
func trustNames(why bool) string {
	var out []string
	for _, h := range hosts.All() {
		if h.Trust == "" {
			continue
		}
		n := h.Name
		if h.TrustProjectOnly {
			n += " with --project"
		}
		if why {
			n += " (" + h.Trust + ")"
		}
		out = append(out, n)
	}
	return strings.Join(out, "; ")
}

func runInstall(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "install", `install HOST [--project [DIR] | --user] [--resident] [--contain] [--trust] [--dry-run] [--uninstall]

Writes HOST's configuration so every tool call goes through joule's gate
(with the host's own fail-closed option), registers joule's MCP server and
status line where HOST has them, keeping every entry of yours and a
timestamped backup of each file it changes. Running it again changes
nothing. Afterwards it checks that the hook is really armed and says what
is left to do. Each install is recorded in $JOULE_HOME/installs.json, so
--uninstall without --project or --user removes the one recorded for HOST
(when there are several it asks which on a terminal, else lists them).
Hosts: `+installerNames()+`.`)
	var project projectFlag
	fs.Var(&project, "project", "install into the project DIR (default: the current directory)")
	user := fs.Bool("user", false, "install into your user configuration")
	dry := fs.Bool("dry-run", false, "print what would be written, write nothing")
	uninstall := fs.Bool("uninstall", false, "remove joule's entries (and nothing else); without --project or --user, from where $JOULE_HOME/installs.json says HOST was installed")
	resident := fs.Bool("resident", false, "answer hooks from 'joule serve' over loopback http instead of a process per call ("+residentNames()+")")
	addr := fs.String("addr", "", "with --resident: the loopback address joule serve listens on (default "+config.DefaultServeAddr+", or the one installed before)")
	contain := fs.Bool("contain", false, "run the shell commands joule allows under 'joule exec', confined by the kernel to the grant ("+containHostNames()+"; docs/gate.md, Containment)")
	trust := fs.Bool("trust", false, "also perform the host's trust steps for the project and joule's hooks, as its own dialogs would ("+trustNames(false)+")")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return usagef("install: want HOST (%s) and at most one DIR", installerNames())
	}
	host := fs.Arg(0)
	h, ok := hosts.Lookup(host)
	if !ok || h.Installer == nil {
		return usagef("install: unknown host %q (hosts: %s)", host, installerNames())
	}
	inst := h.Installer
	if fs.NArg() == 2 {
		if !project.set || project.dir != "" {
			return usagef("install: unexpected argument %q", fs.Arg(1))
		}
		project.dir = fs.Arg(1)
	}
	if project.set && *user {
		return usagef("install: say where: --project [DIR] or --user, not both")
	}
	if !project.set && !*user {
		if !*uninstall {
			return usagef("install: say where: --project [DIR] or --user")
		}
		// The record of installs in $JOULE_HOME says where it went.
		jh, err := identity.Home()
		if err != nil {
			return err
		}
		p, err := recordedScope(e, jh, host)
		if err != nil {
			return err
		}
		project.set, project.dir, *user = p != "", p, p == ""
		if p != "" {
			if _, err := os.Stat(p); err != nil {
				// The project is gone: so are its files; forget it.
				fmt.Fprintf(e.stdout, "%s is gone; forgetting its install of %s\n", p, host)
				return hook.ForgetRecord(jh, host, p)
			}
		}
	}
	if *resident && !h.Resident {
		return usagef("install: --resident is for %s, whose http hooks joule serve answers", residentNames())
	}
	if *contain && (!hosts.Contained(h) || *resident) {
		return usagef("install: --contain is for the command hooks and plugins of %s: docs/hosts.md says, per host, whether it can rewrite a command without skipping its own prompt", containHostNames())
	}
	if *trust && h.Trust == "" {
		return usagef("install: --trust is for %s; for %s see docs/hosts.md", trustNames(true), host)
	}
	if *trust && h.TrustProjectOnly && (!project.set || *uninstall) {
		return usagef("install: --trust is for %s with --project: %s", host, h.Trust)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if r, err := filepath.EvalSymlinks(self); err == nil {
		self = r
	}
	userHome, err := os.UserHomeDir()
	if err != nil {
		return err
	}
	s := hook.Scope{Home: userHome, Joule: self, Client: hookClient(self), Contain: *contain, Trust: *trust}
	if s.JouleHome, err = customHome(); err != nil {
		return err
	}
	if project.set {
		dir := project.dir
		if dir == "" {
			dir = "."
		}
		if dir, err = filepath.Abs(dir); err != nil {
			return err
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return fmt.Errorf("project %s is not a directory", dir)
		}
		s.Project = dir
	}
	if err := s.Check(); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	if *resident && !*uninstall {
		cfg, err := residentConfig(*addr, !*dry)
		if err != nil {
			return err
		}
		s.Resident = &hook.Resident{URL: "http://" + cfg.Addr + "/hooks/" + host, Token: cfg.Token}
	}
	home, err := identity.Home()
	if err != nil {
		return err
	}
	// The record of the install says how each file was before it, and
	// whether it performed the host's trust steps, which the uninstall
	// takes back too.
	rec, err := hook.FindRecord(home, host, s.Project)
	if err != nil {
		return err
	}
	if *uninstall && rec != nil {
		s.Trust = rec.Trusted
	}
	changes, err := inst.Plan(s, *uninstall)
	if err != nil {
		return err
	}
	var held map[string]bool
	if *uninstall && rec != nil {
		changes = hook.Restoring(changes, rec)
	} else if !*uninstall {
		held = hook.Held(inst, s)
	}
	if *dry {
		for _, c := range changes {
			switch {
			case c.Before == nil && c.After == nil:
				// neither there nor to be written: nothing to say
			case string(c.Before) == string(c.After):
				fmt.Fprintf(e.stdout, "unchanged %s\n", c.Path)
			case c.After == nil:
				fmt.Fprintf(e.stdout, "would remove %s\n", c.Path)
			default:
				fmt.Fprintf(e.stdout, "would write %s:\n%s", c.Path, c.After)
			}
		}
		return nil
	}
	lines, applied, err := hook.ApplyRecorded(changes, time.Now(), filepath.Join(home, "backups"))
	for _, l := range lines {
		fmt.Fprintln(e.stdout, l)
	}
	if err != nil {
		return err
	}
	if *uninstall {
		if rec != nil {
			hook.RemoveEmptyDirs(rec.CreatedDirs())
		}
		err = hook.ForgetRecord(home, host, s.Project)
	} else {
		err = hook.SaveRecord(home, hook.NextRecord(rec, host, s.Project, changes, applied, held, time.Now()))
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "joule: could not update the record of installs (%v); --uninstall will need --project or --user\n", err)
	}
	if *uninstall {
		fmt.Fprintf(e.stdout, "joule is no longer wired into %s here; receipts and grants in $JOULE_HOME are kept\n", host)
		return nil
	}
	findings := append(inst.Check(s), clientFinding(s), grantFinding(ctx, s.Project))
	if *contain {
		abi := sandbox.ABI()
		text := fmt.Sprintf(h.Contain, sandbox.Mode(abi, false))
		if abi == 0 {
			text = "containment: Landlock is missing from this kernel, so contained commands are denied unless exec_fallback is \"unconfined\" in $JOULE_HOME/config.json"
		}
		findings = append(findings, hook.Finding{OK: abi > 0, Text: text})
	}
	missing := 0
	for _, f := range findings {
		mark := "ok  "
		if !f.OK {
			mark, missing = "todo", missing+1 // the checklist's label for a step left to the user
		}
		fmt.Fprintf(e.stdout, "%s %s\n", mark, f.Text)
	}
	if missing == 0 {
		fmt.Fprintf(e.stdout, "armed: every %s tool call is decided by joule\n", host)
	} else {
		fmt.Fprintf(e.stdout, "not armed yet: %d thing(s) to do above\n", missing)
	}
	return nil
}

// customHome is the $JOULE_HOME an install records in the hooks it
// writes: the absolute JOULE_HOME of this process, or "" when it is the
// default home (the hook finds that one by itself, and no file gets a
// per-user path it does not need).
func customHome() (string, error) {
	h := os.Getenv("JOULE_HOME")
	if h == "" {
		return "", nil
	}
	h, err := filepath.Abs(h)
	if err != nil {
		return "", err
	}
	if def, err := home.Default(); err == nil && filepath.Clean(def) == h {
		return "", nil
	}
	return h, nil
}

// ClientName is the thin hook client's file name, installed beside joule.
const ClientName = "joule-hook"

// hookClient is the thin client beside the joule binary at self, or ""
// when there is none (joule built alone): hooks then run joule hook.
func hookClient(self string) string {
	p := filepath.Join(filepath.Dir(self), ClientName)
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return p
	}
	return ""
}

// clientFinding says whether hooks run the thin client and its resident
// gate, or a whole joule process per call.
func clientFinding(s hook.Scope) hook.Finding {
	if s.Resident != nil {
		return hook.Finding{OK: true, Text: "hooks are answered by joule serve over http"}
	}
	if s.Client == "" {
		return hook.Finding{OK: true, Text: "hooks run joule hook in-process (no " + ClientName + " beside " + s.Joule + "; for the resident gate install both with 'make build' or go install github.com/joulehook/joule/cmd/...@latest and run joule install again)"}
	}
	return hook.Finding{OK: true, Text: "hooks run the thin client " + s.Client + ", answered by the resident gate (joule gate status)"}
}

// grantFinding checks that a grant is active and, for a project, that its
// workspace covers the project: without one every call is denied.
func grantFinding(ctx context.Context, project string) hook.Finding {
	ep, err := openEndpoint()
	if err != nil {
		return hook.Finding{Text: "run 'joule init' in your workspace: " + err.Error() + " (until then every call is denied)"}
	}
	defer ep.Close()
	g, err := ep.gate()
	if err != nil {
		return hook.Finding{Text: err.Error()}
	}
	chain, err := g.ActiveChain(ctx, "")
	if err != nil {
		return hook.Finding{Text: "no usable active grant (" + err.Error() + "): run 'joule init' or 'joule grant use ID'; until then every call is denied"}
	}
	leaf := chain.Leaf()
	if project != "" {
		p, _ := filepath.EvalSymlinks(project)
		if p == "" {
			p = project
		}
		covered := false
		for _, r := range leaf.Grant.Roots {
			if rule.Within(p, r) {
				covered = true
			}
		}
		if !covered {
			return hook.Finding{Text: fmt.Sprintf("to do: the active grant %s covers %s, not %s: run 'joule init' in the project", leaf.ID.String(), strings.Join(leaf.Grant.Roots, ", "), project)}
		}
	}
	return hook.Finding{OK: true, Text: "active grant " + leaf.ID.String() + " covers the workspace"}
}

// residentConfig is joule serve's address and token for a resident
// install (config.ResidentServe), saved when they are new and write is set.
func residentConfig(addr string, write bool) (config.Serve, error) {
	home, err := identity.Home()
	if err != nil {
		return config.Serve{}, err
	}
	cfg, changed, err := config.ResidentServe(home, addr)
	if err != nil {
		return cfg, err
	}
	if err := checkLoopback(cfg.Addr); err != nil {
		return cfg, err
	}
	if changed && write {
		if err := config.SaveServe(home, cfg); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/joulehook/joule/core/gate"
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
	if wantsSystem(args) {
		return runInstallSystem(ctx, e, args)
	}
	fs := newFlags(e, "install", `install HOST [--project [DIR] | --user] [--resident] [--no-contain] [--trust] [--dry-run] [--uninstall]
       install --system [HOST...] (a managed machine, as root: joule install --system -h)

Writes HOST's configuration so every tool call goes through joule's gate
(with the host's own fail-closed option), registers joule's MCP server and
status line where HOST has them, keeping every entry of yours and a
timestamped backup of each file it changes. Running it again changes
nothing. Afterwards it checks that the hook is really armed and says what
is left to do. Each install is recorded in $JOULE_HOME/installs.json, so
--uninstall without --project or --user removes the one recorded for HOST
(when there are several it asks which on a terminal, else lists them).
On `+containHostNames()+`, whose hooks can replace a command, the shell
commands joule allows run contained by the kernel (joule exec) unless
--no-contain; elsewhere the analysis alone judges them.
Hosts: `+installerNames()+`.`)
	var project projectFlag
	fs.Var(&project, "project", "install into the project DIR (default: the root of the git work tree you are in, else the current directory)")
	user := fs.Bool("user", false, "install into your user configuration")
	dry := fs.Bool("dry-run", false, "print what would be written, write nothing")
	uninstall := fs.Bool("uninstall", false, "remove joule's entries (and nothing else); without --project or --user, from where $JOULE_HOME/installs.json says HOST was installed")
	resident := fs.Bool("resident", false, "answer hooks from 'joule serve' over loopback http instead of a process per call ("+residentNames()+")")
	addr := fs.String("addr", "", "with --resident: the loopback address joule serve listens on (default "+config.DefaultServeAddr+", or the one installed before)")
	contain := fs.Bool("contain", false, "contain, as without it: the default on "+containHostNames()+" (kept for older scripts)")
	noContain := fs.Bool("no-contain", false, "do not run the shell commands joule allows under 'joule exec': a weaker install, which the armed check, joule doctor, the status line and every receipt say is not contained (docs/gate.md, Containment)")
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
		err := usagef("install: unknown host %q (hosts: %s)", host, installerNames())
		if s := closest(host, hosts.Names(hosts.Installable)); s != "" {
			return withHint(err, "did you mean 'joule install "+s+"'?")
		}
		return err
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
	mode, err := installMode(h, *contain, *noContain)
	if err != nil {
		return err
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
	s := hook.Scope{Home: userHome, Joule: self, Client: hookClient(self), Contain: mode, Trust: *trust}
	if s.JouleHome, err = customHome(); err != nil {
		return err
	}
	if project.set {
		if s.Project, err = projectDir(e, project.dir); err != nil {
			return err
		}
	}
	if err := s.Check(); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	if *resident && !*uninstall {
		cfg, err := residentConfig(*addr, !*dry)
		if err != nil {
			return err
		}
		s.Resident = &hook.Resident{URL: "http://" + cfg.Addr + hook.ResidentPath(host, mode), Token: cfg.Token}
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
	prevMode, reinstall := previousMode(rec, changes, held)
	var ignored []hook.Finding
	if !*uninstall {
		exclude, found := hook.Ignore(privateFiles(s, changes, rec))
		if exclude.Path != "" {
			changes = append(changes, exclude)
		}
		ignored = found
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
		next := hook.NextRecord(rec, host, s.Project, changes, applied, held, time.Now())
		next.Contain = mode
		next.Resident = s.Resident != nil
		err = hook.SaveRecord(home, next)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "joule: could not update the record of installs (%v); --uninstall will need --project or --user\n", err)
	}
	if *uninstall {
		fmt.Fprintf(e.stdout, "joule is no longer wired into %s here; receipts and grants in $JOULE_HOME are kept\n", host)
		return nil
	}
	findings, c := armedFindings(ctx, h, s, home)
	findings = append(findings, ignored...)
	if f, ok := switchFinding(prevMode, reinstall, mode); ok {
		findings = append(findings, f)
	}
	missing := 0
	for _, f := range findings {
		mark := "ok  "
		switch {
		case !f.OK:
			mark, missing = "todo", missing+1 // the checklist's label for a step left to the user
		case f.Weak:
			mark = "warn"
		}
		fmt.Fprintf(e.stdout, "%s %s\n", mark, f.Text)
	}
	if missing == 0 {
		fmt.Fprintln(e.stdout, c.armed(host))
	} else {
		fmt.Fprintf(e.stdout, "not armed yet: %d thing(s) to do above\n", missing)
	}
	return nil
}

// armedFindings check that h's install for s is armed, as the install
// and joule doctor say it: the host's own check, how hooks are answered,
// the active grant, and what contains the shell commands it allows here.
func armedFindings(ctx context.Context, h hook.Host, s hook.Scope, home string) ([]hook.Finding, contained) {
	findings := append(h.Installer.Check(s), clientFinding(s), grantFinding(ctx, s.Project))
	c := containState(s.Contain, home)
	again := scopeFlags(s.Project)
	if s.Resident != nil {
		again += " --resident"
	}
	if s.Trust {
		// The hook line changes with the mode, and so the hash Codex
		// trusts it by.
		again += " --trust"
	}
	return append(findings, c.finding(h, again)), c
}

// privateFiles are the files of an install's changes that name paths on
// this machine (hook.Private): created by joule when absent before this
// install or, by rec, before the one it replaces.
func privateFiles(s hook.Scope, changes []hook.Change, rec *hook.Record) []string {
	var out []string
	for _, c := range changes {
		created := c.Before == nil
		if rec != nil {
			for _, st := range rec.State {
				if st.Path == c.Path && !st.Existed {
					created = true
				}
			}
		}
		if hook.Private(s, c, created) {
			out = append(out, c.Path)
		}
	}
	return out
}

// installMode is the containment mode of an install of h: contained where
// its hook can replace a command, unless the user opted out.
func installMode(h hook.Host, contain, noContain bool) (hook.ContainMode, error) {
	if contain && noContain {
		return "", usagef("install: --contain or --no-contain, not both (containment is the default: give --no-contain alone to opt out)")
	}
	if hosts.Contained(h) {
		if noContain {
			return hook.NoContain, nil
		}
		return hook.Contained, nil
	}
	if contain || noContain {
		flag := map[bool]string{true: "--contain", false: "--no-contain"}[contain]
		return "", usagef("install: %s's hook cannot replace a command, so joule judges its shell commands by analysis alone and %s does not apply: leave it out (the hosts joule contains: %s; docs/hosts.md, \"Containment on the other hosts\")", h.Name, flag, containHostNames())
	}
	return hook.AnalysisOnly, nil
}

// scopeFlags are the flags that name an install's scope on a command line.
func scopeFlags(project string) string { return scopeArgs(hook.Record{Project: project}) }

// previousMode is the containment of the install this one replaces: the
// mode its record keeps or, for one recorded before the mode was (or not
// recorded at all), what the files that held joule's entries say. found is
// false when joule was not installed there before.
func previousMode(rec *hook.Record, changes []hook.Change, held map[string]bool) (m hook.ContainMode, found bool) {
	if rec != nil && rec.Contain != "" {
		return rec.Contain, true
	}
	for _, c := range changes {
		if held[c.Path] {
			found = true
			if hook.ModeInBytes(c.Before) == hook.Contained {
				return hook.Contained, true
			}
		}
	}
	return "", found
}

// switchFinding says when an install changes whether commands are
// contained: ok when it switches containment on, a warning when off.
func switchFinding(prev hook.ContainMode, found bool, now hook.ContainMode) (hook.Finding, bool) {
	switch {
	case !found || prev == now:
		return hook.Finding{}, false
	case now == hook.Contained && prev == hook.NoContain:
		return hook.Finding{OK: true, Text: "now contained: the install before ran with --no-contain"}, true
	case now == hook.Contained:
		return hook.Finding{OK: true, Text: "now contained: the install before (from before containment was the default) judged shell commands by analysis alone"}, true
	case now == hook.NoContain && prev == hook.Contained:
		return hook.Finding{OK: true, Weak: true, Text: "containment switched off (--no-contain): the install before ran the shell commands joule allows contained"}, true
	}
	return hook.Finding{}, false
}

// contained is what contains an install's commands on this machine.
type contained struct {
	mode       hook.ContainMode
	abi        int
	namespaces bool
	fallback   bool // exec_fallback is "unconfined"
}

// containState is the containment an install in mode gets here, with the
// configuration of $JOULE_HOME home.
func containState(mode hook.ContainMode, home string) contained {
	c := contained{mode: mode}
	c.abi, c.namespaces = sandboxState()
	if cfg, err := config.Load(home); err == nil {
		c.fallback = cfg.ExecFallback == "unconfined"
	}
	return c
}

// finding is the armed check's line on containment: ok when the kernel
// contains the commands fully, a warning when less, todo when every
// shell command would be denied. args are the install's own flags but
// the mode's, for the commands it suggests.
func (c contained) finding(h hook.Host, args string) hook.Finding {
	switch {
	case c.mode == hook.AnalysisOnly:
		return hook.Finding{OK: true, Weak: true, Text: "not contained: " + h.Name + "'s hook cannot replace a command, so joule judges its shell commands by analysis alone (docs/hosts.md, \"Containment on the other hosts\")"}
	case c.mode == hook.NoContain:
		return hook.Finding{OK: true, Weak: true, Text: "not contained (--no-contain): the shell commands joule allows run as " + h.Name + " sent them, judged by analysis alone, and each receipt says so; to contain them: joule install " + h.Name + " " + args}
	case c.abi == 0 && c.fallback:
		return hook.Finding{OK: true, Weak: true, Text: "not contained: " + sandbox.ErrUnavailable.Error() + ", so the shell commands joule allows run on analysis alone (exec_fallback is \"unconfined\"), and each receipt says so"}
	case c.abi == 0:
		return hook.Finding{Text: "containment: " + sandbox.ErrUnavailable.Error() + ", so every shell command is denied (no-containment); to run them on analysis alone set \"exec_fallback\": \"unconfined\" in $JOULE_HOME/" + ConfigFile + ", or install with: joule install " + h.Name + " " + args + " --no-contain"}
	case !c.namespaces:
		return hook.Finding{OK: true, Weak: true, Text: fmt.Sprintf(h.Contain, sandbox.ModeOf(c.abi, false, false)) + "; warning: " + gate.LandlockOnlyWarning + ", and each receipt says so"}
	}
	return hook.Finding{OK: true, Text: fmt.Sprintf(h.Contain, sandbox.ModeOf(c.abi, false, true))}
}

// armed is the armed check's last line, once nothing is left to do: it
// says how the shell commands are contained when less than fully.
func (c contained) armed(host string) string {
	switch {
	case c.mode == hook.AnalysisOnly:
		return fmt.Sprintf("armed: every %s tool call is decided by joule; its shell commands by analysis alone, as %s's hook cannot replace a command", host, host)
	case c.mode == hook.NoContain:
		return fmt.Sprintf("armed, but weaker than joule's default: every %s tool call is decided by joule, and the shell commands it allows run uncontained (--no-contain)", host)
	case c.abi == 0:
		return fmt.Sprintf("armed, but weaker than joule's default: every %s tool call is decided by joule, and the shell commands it allows run uncontained (no Landlock here)", host)
	case !c.namespaces:
		return fmt.Sprintf("armed, but weaker than joule's default: every %s tool call is decided by joule, and the shell commands it allows run confined by Landlock alone (no user namespaces here)", host)
	}
	return fmt.Sprintf("armed: every %s tool call is decided by joule, and the shell commands it allows run contained by the kernel", host)
}

// customHome is the $JOULE_HOME an install records in the hooks it
// writes: the absolute home of this process, the default one included, so
// that a JOULE_HOME in the host's environment (a line added to a shell
// profile, say) cannot point the hook at another home, with another key
// and another store.
func customHome() (string, error) {
	h, err := home.Dir()
	if err != nil {
		return "", err
	}
	return filepath.Abs(h)
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
	if project == "" {
		return userGrantFinding(ctx, g)
	}
	p, _ := filepath.EvalSymlinks(project)
	if p == "" {
		p = project
	}
	chain, err := g.ActiveChainAt(ctx, "", p)
	if err != nil {
		return hook.Finding{Text: "no usable active grant (" + err.Error() + "): run 'joule init' or 'joule grant use ID'; until then every call is denied"}
	}
	leaf := chain.Leaf()
	covered := false
	for _, r := range leaf.Grant.Roots {
		if rule.Within(p, r) {
			covered = true
		}
	}
	if !covered {
		return hook.Finding{Text: fmt.Sprintf("to do: the active grant %s covers %s, not %s: run 'joule init' in the project", leaf.ID.String(), strings.Join(leaf.Grant.Roots, ", "), project)}
	}
	return hook.Finding{OK: true, Text: "active grant " + leaf.ID.String() + " covers the workspace"}
}

// userGrantFinding is grantFinding for a user-wide install, whose hooks
// serve every repository: it says which workspaces have a grant in force
// of their own, and which grant decides everywhere else.
func userGrantFinding(ctx context.Context, g *gate.Gate) hook.Finding {
	ts, err := g.TrustState(ctx)
	if err != nil {
		return hook.Finding{Text: "the trust chain cannot be read (" + err.Error() + "): every call is denied; 'joule trust status' says why"}
	}
	var covered []string
	for _, root := range ts.Workspaces() {
		id := ts.WorkspaceGrant(root)
		if chain, err := g.LoadChain(ctx, id); err == nil && chain.Check(chain.Leaf().Grant.Subject, time.Now()) == nil {
			covered = append(covered, fmt.Sprintf("%s (grant %.12s…)", root, id))
		}
	}
	elsewhere := "elsewhere no grant is active, so every call outside them is denied: 'joule init' in a repository gives it one"
	if chain, err := g.ActiveChain(ctx, ""); err == nil && chain.Check(chain.Leaf().Grant.Subject, time.Now()) == nil {
		elsewhere = fmt.Sprintf("elsewhere the default grant %.12s… decides, which opens %s only", chain.Leaf().ID.String(), strings.Join(chain.Leaf().Grant.Roots, ", "))
	}
	if len(covered) == 0 {
		if strings.HasPrefix(elsewhere, "elsewhere no grant") {
			return hook.Finding{Text: "no usable active grant: run 'joule init' in each repository you work in; until then every call is denied"}
		}
		return hook.Finding{OK: true, Text: "every repository is decided by the default grant: " + strings.TrimPrefix(elsewhere, "elsewhere the default grant ")}
	}
	return hook.Finding{OK: true, Text: "these hooks serve every repository: " + strings.Join(covered, ", ") + " each by its own grant; " + elsewhere + " ('joule init' in another repository adds it)"}
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

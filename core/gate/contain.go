package gate

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/command"
	"github.com/joulehook/joule/core/rule"
	"github.com/joulehook/joule/core/sandbox"
)

// Containment turns the Bash actions the gate allows into rewrites that run
// them under `joule exec`, confined by the kernel to the grant (see
// core/sandbox). Set it on a Gate only for a host that can replace a
// tool's input without skipping its own approvals (docs/hosts.md).
type Containment struct {
	Exe string // absolute path of the joule binary the host will run
	ABI int    // the kernel's Landlock ABI (sandbox.ABI); 0: analysis alone
	// Fallback is true where exec_fallback is "unconfined": without
	// Landlock the command still runs, on analysis alone.
	Fallback bool
	// Runner is the absolute path of joule-exec, the small binary that
	// confines a command to a policy the gate wrote into PolicyDir
	// ($JOULE_HOME/policy) without opening the store. Empty (or a policy
	// that cannot be written): the line runs under `Exe exec --session`,
	// which loads the grant itself.
	Runner    string
	PolicyDir string
	// LayerRoot, when set, holds the sessions' private layers
	// (sandbox.LayerDir) in place of the directory above PolicyDir, and
	// the policies are written readable by others
	// (sandbox.Policy.WriteShared): a system gate writes into its own
	// directory the policies of people whose layers are their own.
	LayerRoot string
	// LandlockOnly says contained commands get Landlock alone, without the
	// user, mount and PID namespaces (they are off here, or
	// sandbox.LandlockOnlyEnv chooses it): each contained verdict's reason
	// says so, with what that leaves open.
	LandlockOnly bool
	// Off, when set, says why this install's commands are not contained
	// although its host could rewrite them ("installed with --no-contain"):
	// nothing is rewritten, and each allowed Bash verdict's reason says
	// "not contained: " and Off.
	Off string
	// Config, when set, is the digest of the config.json Fallback was
	// read from (tiers/config TrustDigest): a gate with Files refuses a
	// containment built from another configuration than the one it
	// checked against the home's signed record.
	Config core.ID
}

// confines reports whether an allowed Bash line will run confined by the
// kernel: the gate then leaves to the kernel the paths a line knows only
// when it runs (Policy.Contained).
func (c *Containment) confines() bool { return c != nil && c.Off == "" && c.ABI > 0 }

// contain rewrites an allowed Bash verdict. Without Landlock the verdict
// stays an allow and its reason (so the receipt) says that analysis alone
// decided; the input then runs as the host sent it.
func (c *Containment) contain(ev *Event, v Verdict) (Verdict, json.RawMessage) {
	return c.rewrite(ev, v, nil)
}

// rewrite is contain with the decision's policy: with a Runner, the line
// runs under joule-exec with that policy, written content-addressed into
// PolicyDir.
func (c *Containment) rewrite(ev *Event, v Verdict, p *Policy) (Verdict, json.RawMessage) {
	if c == nil || ev.Tool != "Bash" || v.Decision != Allow {
		return v, nil
	}
	if c.Off != "" {
		v.Reason += "; not contained: " + c.Off + ", so analysis alone decided"
		return v, nil
	}
	if c.ABI <= 0 {
		if !c.Fallback {
			return deny(CodeNoContainment, "containment is on, but %v; set \"exec_fallback\": \"unconfined\" in $JOULE_HOME/config.json to run commands on analysis alone", sandbox.ErrUnavailable), nil
		}
		v.Reason += "; not contained: " + sandbox.ErrUnavailable.Error() + ", so analysis alone decided (exec_fallback is unconfined)"
		return v, nil
	}
	// An allow that left paths to the kernel must not run uncontained.
	uncontained := v
	if v.Kernel {
		uncontained = deny(CodeNoContainment, "the line cannot be rewritten to run contained, and the kernel was to bound what it reads or writes: %s", v.Reason)
	}
	m, err := ev.inputFields()
	if err != nil {
		return uncontained, nil
	}
	line, err := stringField(m, "command", true)
	if err != nil {
		return uncontained, nil
	}
	net := lineUsesNetwork(line)
	var b strings.Builder
	if path, ok := c.writePolicy(p, ev.SessionID); ok {
		b.WriteString(c.runnerPrefix())
		b.WriteString(shellQuote(path))
	} else {
		b.WriteString(c.wrapperPrefix(ev.SessionID))
	}
	if runsInBackground(m) {
		b.WriteString(" --background")
	}
	if net {
		b.WriteString(" --net")
	}
	b.WriteString(" -- /bin/bash -c ")
	b.WriteString(shellQuote(line))
	cmd, _ := json.Marshal(b.String())
	// The whole input object is handed back (hosts replace, not merge),
	// with only the command changed.
	out := make(map[string]json.RawMessage, len(m))
	for k, val := range m {
		out[k] = val
	}
	out["command"] = cmd
	in, err := json.Marshal(out)
	if err != nil {
		return uncontained, nil
	}
	v.Decision = Rewrite
	// The warning comes before the mode: a receipt's reason is cut at its
	// limit, and the mode's list of what Landlock alone leaves open is long.
	if c.LandlockOnly {
		v.Reason += "; warning: " + LandlockOnlyWarning
	}
	v.Reason = fmt.Sprintf("%s; contained: runs under joule exec (%s)", v.Reason, sandbox.ModeOf(c.ABI, net, !c.LandlockOnly))
	return v, in
}

// LandlockOnlyWarning is what a receipt, joule install and joule doctor say
// where contained commands get Landlock alone.
const LandlockOnlyWarning = "weaker containment: no user namespaces here (or " + sandbox.LandlockOnlyEnv + "=1), so Landlock alone confines the command"

// wrapperPrefix is how contain starts a rewritten line, up to the flags.
func (c *Containment) wrapperPrefix(session string) string {
	return shellQuote(c.Exe) + " exec --session " + shellQuote(session)
}

// runnerPrefix is how a line rewritten to run under joule-exec starts, up
// to the policy's path.
func (c *Containment) runnerPrefix() string {
	return shellQuote(c.Runner) + " --policy "
}

// runsInBackground reports whether the host runs the call in the
// background, where it can still run while the host's own file tools act
// on the workspace: Claude Code's run_in_background, Gemini CLI's (and
// Qwen Code's) is_background.
func runsInBackground(input map[string]json.RawMessage) bool {
	for _, k := range []string{"run_in_background", "is_background"} {
		if string(input[k]) == "true" {
			return true
		}
	}
	return false
}

// writePolicy writes the sandbox policy of p for joule-exec, with the
// private layer of session over the toolchains' caches, and returns its
// path; false when there is no Runner or it cannot be written (the line
// then runs under joule exec, which reads the grant itself).
func (c *Containment) writePolicy(p *Policy, session string) (string, bool) {
	if c.Runner == "" || c.PolicyDir == "" || p == nil || len(p.Chain) == 0 {
		return "", false
	}
	sp := SandboxPolicy(p)
	sp.Layer = sandbox.LayerDir(filepath.Dir(c.PolicyDir), session)
	write := sandbox.Policy.Write
	if c.LayerRoot != "" {
		sp.Layer, write = sandbox.LayerDir(c.LayerRoot, session), sandbox.Policy.WriteShared
	}
	path, err := write(sp, c.PolicyDir)
	if err != nil {
		return "", false
	}
	return path, true
}

// SandboxPolicy is what the kernel is to enforce of p for a contained
// command (see sandbox.Policy): the rules of every link, the leaf's
// workspace roots resolved, the protected and private paths, and the
// earliest expiry of the chain.
func SandboxPolicy(p *Policy) sandbox.Policy {
	sp := sandbox.Policy{Home: p.Home, Protected: p.Protected, Private: p.Private}
	for _, s := range p.Chain {
		g := s.Grant
		sp.Links = append(sp.Links, sandbox.PolicyLink{Allow: g.Allow, Ask: g.Ask, Deny: g.Deny})
		if g.NotAfter != 0 && (sp.NotAfter == 0 || g.NotAfter < sp.NotAfter) {
			sp.NotAfter = g.NotAfter
		}
	}
	for _, r := range p.Chain.Leaf().Grant.Roots {
		if abs, err := rule.ResolveDir(r); err == nil {
			sp.Roots = append(sp.Roots, abs)
		}
	}
	return sp
}

// unwrapPolicy strips a joule-exec prefix that names a policy file in
// PolicyDir (any policy there: whichever it is, the line is wrapped afresh
// with the decision's own) and returns the rest, from the flags on.
func (c *Containment) unwrapPolicy(line string) (string, bool) {
	if c.Runner == "" || c.PolicyDir == "" {
		return "", false
	}
	// shellQuote(PolicyDir/<64 hex>.json): the quoted directory without
	// its closing quote, the name, then ".json'".
	dir := shellQuote(c.PolicyDir + "/")
	rest, ok := strings.CutPrefix(line, c.runnerPrefix()+dir[:len(dir)-1])
	if !ok || len(rest) < 64+len(".json'") {
		return "", false
	}
	name, rest := rest[:64], rest[64:]
	for _, r := range name {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return "", false
		}
	}
	return strings.CutPrefix(rest, ".json'")
}

// unwrap returns ev with a command that contain wrote (for this joule and
// session) replaced by the original line, so that a host that shows the
// rewritten input again (Claude Code's PermissionRequest) is judged on
// what the line does, and a line that arrives wrapped is wrapped afresh,
// with the gate's own flags. Anything else is returned as it is.
func (c *Containment) unwrap(ev *Event) *Event {
	if c == nil || c.Off != "" || ev.Tool != "Bash" {
		return ev
	}
	m, err := ev.inputFields()
	if err != nil {
		return ev
	}
	line, err := stringField(m, "command", true)
	if err != nil {
		return ev
	}
	rest, ok := strings.CutPrefix(line, c.wrapperPrefix(ev.SessionID))
	if !ok {
		if rest, ok = c.unwrapPolicy(line); !ok {
			return ev
		}
	}
	rest = strings.TrimPrefix(rest, " --background")
	rest = strings.TrimPrefix(rest, " --net")
	quoted, ok := strings.CutPrefix(rest, " -- /bin/bash -c ")
	if !ok {
		return ev
	}
	inner, ok := shellUnquote(quoted)
	if !ok {
		return ev
	}
	b, _ := json.Marshal(inner)
	out := make(map[string]json.RawMessage, len(m))
	for k, val := range m {
		out[k] = val
	}
	out["command"] = b
	in, err := json.Marshal(out)
	if err != nil {
		return ev
	}
	cp := *ev
	cp.Input = in
	return &cp
}

// shellUnquote inverts shellQuote exactly, and reports false for anything
// shellQuote cannot have written.
func shellUnquote(s string) (string, bool) {
	if len(s) < 2 || s[0] != '\'' || s[len(s)-1] != '\'' {
		return "", false
	}
	inner := strings.ReplaceAll(s[1:len(s)-1], `'\''`, "'")
	if shellQuote(inner) != s {
		return "", false
	}
	return inner, true
}

// networkCommands are the programs (and subcommands) whose work is the
// network: a line that runs one of them, and that the grant allowed, gets
// TCP inside the sandbox. Everything else runs with TCP refused.
var networkCommands = map[string][]string{
	"curl": nil, "wget": nil, "ssh": nil, "scp": nil, "sftp": nil, "rsync": nil,
	"git":  {"push", "fetch", "pull", "clone", "ls-remote", "remote", "submodule"},
	"go":   {"get", "install", "mod"},
	"npm":  {"install", "i", "ci", "add", "publish", "update", "view"},
	"pnpm": {"install", "i", "add", "publish", "update"},
	"yarn": {"install", "add", "publish"},
	"pip":  {"install", "download"}, "pip3": {"install", "download"},
	"cargo": {"fetch", "install", "update", "publish"},
}

// lineUsesNetwork reports whether the line runs a network command.
func lineUsesNetwork(line string) bool {
	a, err := command.Analyze(line)
	if err != nil {
		return false
	}
	return usesNetwork(a)
}

// usesNetwork reports whether an analysed line runs a network command.
func usesNetwork(a *command.Analysis) bool {
	for _, c := range a.Commands {
		if len(c.Args) == 0 {
			continue
		}
		subs, ok := networkCommands[filepath.Base(c.Args[0].Text)]
		if !ok {
			continue
		}
		if subs == nil {
			return true
		}
		for _, w := range c.Args[1:] {
			if strings.HasPrefix(w.Text, "-") {
				continue
			}
			for _, s := range subs {
				if w.Text == s {
					return true
				}
			}
			break
		}
	}
	return false
}

// shellQuote quotes s as one word for bash and dash.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

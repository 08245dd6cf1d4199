package gate

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/command"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/rule"
)

// Decision values.
const (
	Allow   = "allow"
	Deny    = "deny"
	Ask     = "ask"
	Rewrite = "rewrite"
)

// Machine codes of a decision.
const (
	CodeAllowed         = "allowed"
	CodeAskRule         = "ask-rule"
	CodeNoActiveGrant   = "no-active-grant"
	CodeNotGranted      = "action-not-granted"
	CodeDenyRule        = "deny-rule"
	CodeBudgetExceeded  = "budget-exceeded"
	CodeGrantExpired    = "grant-expired"
	CodeGrantNotYet     = "grant-not-yet-valid"
	CodeGrantInvalid    = "grant-invalid"
	CodeGrantRevoked    = "grant-revoked"
	CodeSubjectMismatch = "grant-subject-mismatch"
	CodeMalformed       = "malformed-event"
	CodeOutside         = "outside-workspace"
	CodeUnanalyzable    = "unanalyzable-command"
	CodeSelfTamper      = "self-tamper"
	CodeStoreError      = "store-unavailable"
	CodeKeyUnusable     = "key-unusable" // the endpoint key is there but unusable (its file's mode, its content)
	CodeStoreCorrupt    = "store-corrupt"
	CodeRolledBack      = "store-rolled-back" // the store is smaller than, or not an extension of, its witness
	CodeWitnessInvalid  = "witness-invalid"   // the witness outside the store is missing, unreadable or unsigned
	CodeInternal        = "internal-error"
	CodeNoContainment   = "containment-unavailable"
	CodeResourceBomb    = "resource-bomb" // the line loops or recurses without end (command.CodeResourceBomb)
)

// Verdict is the pure outcome of judging an event against a policy, before
// the ledger is consulted.
type Verdict struct {
	Decision string
	Code     string
	Reason   string
	CostUJ   uint64 // what an allow or ask debits from every link
	// Kernel is set on an allow that leaves paths known only when the line
	// runs to the kernel: the line must run contained.
	Kernel bool
	// runtime marks a deny about a path known only when the line runs,
	// which the kernel bounds when the line runs contained.
	runtime bool
}

func deny(code, format string, args ...any) Verdict {
	return Verdict{Decision: Deny, Code: code, Reason: fmt.Sprintf(format, args...)}
}

// Policy is everything besides the event that a decision depends on. It is
// plain data: the same event and policy always give the same verdict.
type Policy struct {
	Chain     grant.Chain
	Sets      []rule.Set // the parsed rules of each link, root first
	Home      string     // the user's home, symlink-resolved
	Protected []string   // absolute, resolved paths no capability can write
	Private   []string   // protected paths no capability can read either ($JOULE_HOME)
	Costs     Costs
	Now       time.Time
	// Contained is set when an allowed Bash line will run confined by the
	// kernel (the gate's Containment confines it): a read or write of a
	// path known only when the line runs is then the kernel's to bound
	// (see runtime.go), and the verdict's reason says so.
	Contained bool
}

// NewPolicy parses the chain's rules.
func NewPolicy(chain grant.Chain, home string, protected []string, costs Costs, now time.Time) (*Policy, error) {
	p := &Policy{Chain: chain, Home: home, Protected: protected, Costs: costs, Now: now}
	for _, s := range chain {
		set, err := s.Grant.Rules()
		if err != nil {
			return nil, err
		}
		p.Sets = append(p.Sets, set)
	}
	return p, nil
}

// Decide judges ev against p. It never panics on any input and never
// touches the network; it reads the file system only to resolve symlinks.
func Decide(ev *Event, p *Policy) (v Verdict) {
	defer func() {
		if r := recover(); r != nil {
			v = deny(CodeInternal, "internal error while deciding: %v", r)
		}
	}()
	if err := ev.Validate(); err != nil {
		return deny(CodeMalformed, "%v", err)
	}
	if p == nil || len(p.Chain) == 0 {
		return deny(CodeNoActiveGrant, "no active grant: run 'joule init' or 'joule grant use ID'")
	}
	if err := p.Chain.Check(ev.SessionID, p.Now); err != nil {
		return deny(chainCode(err), "%v", err)
	}
	j := &judge{ev: ev, p: p}
	j.roots = p.Chain.Leaf().Grant.Roots
	cwd, err := rule.ResolveDir(ev.Cwd)
	if err != nil {
		return deny(CodeMalformed, "cwd: %v", err)
	}
	j.cwd = cwd
	if !j.inRoots(cwd) {
		return deny(CodeOutside, "cwd %s is outside the grant's workspace %s: 'joule init' in its repository gives it a grant of its own", ev.Cwd, strings.Join(j.roots, ", "))
	}
	v = j.judge()
	if v.Decision != Deny {
		v.CostUJ = p.Costs.Of(ev.Tool)
	}
	return v
}

func chainCode(err error) string {
	switch {
	case errors.Is(err, grant.ErrExpired):
		return CodeGrantExpired
	case errors.Is(err, grant.ErrNotYet):
		return CodeGrantNotYet
	case errors.Is(err, grant.ErrWrongUser):
		return CodeSubjectMismatch
	}
	return CodeGrantInvalid
}

type judge struct {
	ev      *Event
	p       *Policy
	cwd     string
	roots   []string
	seen    []resolution
	dotglob bool // the line may make wildcards match dotfiles
	pwdSet  bool // the line may assign PWD, so $PWD is a value like any other
	writes  bool // the line writes files (it may create a directory a later command runs in)
	net     bool // the line runs a network command: contained, it may connect anywhere
	// kernel lists the first reasons the kernel, not the analysis, bounds
	// a path of the line (under containment); kernelN counts them all.
	kernel      []string
	kernelN     int
	runtimeDeny Verdict // the first of them, for a line that is not allowed outright
}

// resolution is one path resolved against the working directory.
type resolution struct {
	path, abs string
	err       error
}

// maxSeen bounds the resolutions a decision remembers, so that a line of
// thousands of distinct paths costs no more than a linear scan of a few.
const maxSeen = 32

// resolve is rule.ResolveFrom(j.cwd, p), remembered for the rest of the
// decision: a line often names a path twice (go build ./... && go test
// ./...), and a decision should see one state of the file system anyway.
func (j *judge) resolve(p string) (string, error) {
	if procView(p) {
		return "", fmt.Errorf("%s names a process's own view of the file system, which differs between the gate and the command", truncate(p))
	}
	for _, r := range j.seen {
		if r.path == p {
			return r.abs, r.err
		}
	}
	abs, err := rule.ResolveFrom(j.cwd, p)
	if len(j.seen) < maxSeen {
		j.seen = append(j.seen, resolution{p, abs, err})
	}
	return abs, err
}

// resolveIn resolves p, relative to the directory dir (absolute, as
// commandDirs gives it). Relative to the working directory, which is
// resolved already, it is not walked again from /.
func (j *judge) resolveIn(dir, p string) (string, error) {
	if dir != j.cwd && !strings.HasPrefix(p, "/") {
		p = dir + "/" + p
	}
	return j.resolve(p)
}

func (j *judge) inRoots(abs string) bool {
	return slices.ContainsFunc(j.roots, func(r string) bool { return within(abs, r) })
}

// outcome folds per-link verdicts: every link must allow; a deny anywhere
// wins, then an ask; a link with no matching rule means not granted.
type outcome struct {
	denyBy, askBy string
	link          int
	missing       *core.ID // the first link without a matching rule
}

func (j *judge) fold(check func(rule.Set) rule.Verdict) outcome {
	var o outcome
	for i, set := range j.p.Sets {
		v := check(set)
		switch v.Mode {
		case rule.Deny:
			if o.denyBy == "" {
				o.denyBy, o.link = v.Rule.String(), i
			}
		case rule.Ask:
			if o.askBy == "" {
				o.askBy = v.Rule.String()
			}
		case rule.Allow:
		default:
			if o.missing == nil && i < len(j.p.Chain) {
				o.missing = &j.p.Chain[i].ID
			} else if o.missing == nil {
				o.missing = &core.ID{} // a set without its grant: still a link that does not allow
			}
		}
	}
	return o
}

// rank is the rank (see rankOf) of the verdict the outcome turns into,
// without building its reason.
func (o outcome) rank() int {
	switch {
	case o.denyBy != "" || o.missing != nil:
		return rankOf(Deny)
	case o.askBy != "":
		return rankOf(Ask)
	}
	return rankOf(Allow)
}

// verdict turns an outcome about what into a Verdict.
func (o outcome) verdict(what string) Verdict {
	switch {
	case o.denyBy != "":
		return deny(CodeDenyRule, "%s is denied by rule %s", what, o.denyBy)
	case o.missing != nil:
		return deny(CodeNotGranted, "%s is not granted by grant %s", what, *o.missing)
	case o.askBy != "":
		return Verdict{Decision: Ask, Code: CodeAskRule, Reason: fmt.Sprintf("%s needs approval (rule %s)", what, o.askBy)}
	}
	return Verdict{Decision: Allow, Code: CodeAllowed, Reason: what + " is granted"}
}

// rankOf orders decisions by strictness: deny, then ask, then allow.
func rankOf(decision string) int {
	switch decision {
	case Deny:
		return 2
	case Ask:
		return 1
	}
	return 0
}

// strictest keeps the strictest of several verdicts, the first of equals.
// A verdict is only offered once it is known to rank above the current one,
// so that the reasons of verdicts that cannot win are never built.
type strictest struct{ best Verdict }

func newStrictest() strictest { return strictest{Verdict{Decision: Allow, Code: CodeAllowed}} }

// beats reports whether a verdict of rank r would replace the current one.
func (s *strictest) beats(r int) bool { return r > rankOf(s.best.Decision) }

func (s *strictest) offer(v Verdict) {
	if s.beats(rankOf(v.Decision)) {
		s.best = v
	}
}

func (j *judge) judge() Verdict {
	tool := j.ev.Tool
	m, err := j.ev.inputFields()
	if err != nil {
		return deny(CodeMalformed, "%v", err)
	}
	switch tool {
	case "Bash":
		cmd, err := stringField(m, "command", true)
		if err != nil {
			return deny(CodeMalformed, "%v", err)
		}
		return j.bash(cmd)
	case "Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "Glob", "Grep":
		return j.file(tool, m)
	case "WebFetch":
		raw, err := stringField(m, "url", true)
		if err != nil {
			return deny(CodeMalformed, "%v", err)
		}
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return deny(CodeMalformed, "input.url %q is not an absolute URL", truncate(raw))
		}
		o := j.fold(func(s rule.Set) rule.Verdict { return s.CheckURL(u) })
		return withAllow(o.verdict("fetching "+u.Redacted()), "WebFetch(domain:"+u.Hostname()+")",
			func(r rule.Rule) bool { return r.MatchURL(u, rule.Allow) })
	}
	what := "tool " + tool
	if !strings.HasPrefix(tool, "mcp__") && !knownTools[tool] {
		what = "unknown tool " + tool
	}
	return withAllow(j.fold(func(s rule.Set) rule.Verdict { return s.CheckTool(tool) }).verdict(what), tool,
		func(r rule.Rule) bool { return r.MatchTool(tool) })
}

// withAllow adds to a not-granted deny the command that allows it: joule
// grant allow with text, a rule that is checked to allow the action
// (allows), so that what the deny suggests is never a guess that fails.
func withAllow(v Verdict, text string, allows func(rule.Rule) bool) Verdict {
	if v.Decision != Deny || v.Code != CodeNotGranted || text == "" {
		return v
	}
	r, err := rule.Parse(text)
	if err != nil || !allows(r) || strings.ContainsAny(r.String(), "'\n") {
		return v
	}
	v.Reason += allowHint + r.String() + "'"
	return v
}

// allowHint starts the command a not-granted deny names, which ends its
// reason (the gate adds --grant ID when the grant is not the default).
const allowHint = "; to allow it: joule grant allow '"

// commandRule is the allow rule a not-granted command suggests: its
// program as written and, when the next word is a subcommand (a literal
// word of letters, digits, '-', '_' or '.'), that word too, with :* after:
// Bash(npm install:*), Bash(jq:*).
func commandRule(args []rule.Word) string {
	if len(args) == 0 || !args[0].Literal || args[0].Text == "" {
		return ""
	}
	words := args[0].Text
	if len(args) > 1 && args[1].Literal && subcommand(args[1].Text) {
		words += " " + args[1].Text
	}
	return "Bash(" + words + ":*)"
}

func subcommand(w string) bool {
	if w == "" || !('a' <= w[0] && w[0] <= 'z') {
		return false
	}
	return strings.IndexFunc(w, func(c rune) bool {
		return !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.')
	}) < 0
}

// knownTools are tools judged by name alone.
var knownTools = map[string]bool{"WebSearch": true, "Task": true, "TodoWrite": true, "ExitPlanMode": true, "BashOutput": true, "KillShell": true, "SlashCommand": true, "Skill": true}

// pathKeys names the input field that holds each file tool's target.
var pathKeys = map[string]string{"Read": "file_path", "Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path", "Glob": "path", "Grep": "path"}

func (j *judge) file(tool string, m map[string]json.RawMessage) Verdict {
	key := pathKeys[tool]
	required := tool != "Glob" && tool != "Grep"
	p, err := stringField(m, key, required)
	if err != nil {
		return deny(CodeMalformed, "%v", err)
	}
	if p == "" {
		p = j.cwd // Glob and Grep search the working directory by default
	}
	if tool == "Glob" {
		// The pattern can reach anywhere (/etc/*, ../../**, ~/.ssh/*): the
		// directory its literal part names is what the listing reads.
		pattern, err := stringField(m, "pattern", false)
		if err != nil {
			return deny(CodeMalformed, "%v", err)
		}
		if pattern != "" {
			return j.glob(p, pattern)
		}
	}
	abs, err := j.resolve(p)
	if err != nil {
		return deny(CodeMalformed, "input.%s: %v", key, err)
	}
	access, _ := rule.AccessOf(tool)
	if tool == "Glob" {
		// Glob lists names and reads no content: judged as reading the
		// directory, so a deny on one file below does not block a listing.
		access = rule.Read
	}
	if access == rule.Write {
		if v, bad := j.protected(abs); bad {
			return v
		}
	} else if slices.ContainsFunc(j.p.Private, func(p string) bool { return within(abs, p) }) {
		return deny(CodeSelfTamper, "%s is private: the gate's keys, grants and store are never readable by an agent", abs)
	}
	verb := map[rule.Access]string{rule.Read: "reading", rule.ReadTree: "searching", rule.Write: "writing"}[access]
	o := j.fold(func(s rule.Set) rule.Verdict { return s.CheckPath(access, abs, j.rootsFor(abs)) })
	v := o.verdict(fmt.Sprintf("%s %s", verb, abs))
	if v.Decision == Deny && v.Code == CodeNotGranted && !j.inRoots(abs) {
		v.Code = CodeOutside
		v.Reason = fmt.Sprintf("%s %s: the path is outside the workspace %s and no rule grants it", verb, abs, strings.Join(j.roots, ", "))
	}
	family := map[rule.Access]string{rule.Read: "Read", rule.ReadTree: "Read", rule.Write: "Edit"}[access]
	return withAllow(v, family+"("+abs+")", func(r rule.Rule) bool { return r.MatchPath(access, abs, j.rootsFor(abs), rule.Allow) })
}

// rootsFor picks the workspace root a path is judged under: the root that
// holds it, or the first root for paths outside every root.
func (j *judge) rootsFor(abs string) rule.Roots {
	for _, r := range j.roots {
		if within(abs, r) {
			return rule.Roots{Workspace: r, Home: j.p.Home}
		}
	}
	return rule.Roots{Workspace: j.roots[0], Home: j.p.Home}
}

// protected denies writes into the gate's own files.
func (j *judge) protected(abs string) (Verdict, bool) {
	for _, p := range j.p.Protected {
		if within(abs, p) {
			return deny(CodeSelfTamper, "%s is protected: the gate's keys, grants, store and the hosts' hook configuration are never writable by an agent", abs), true
		}
	}
	return Verdict{}, false
}

func (j *judge) bash(line string) Verdict {
	if len(line) > MaxCommandSize {
		return deny(CodeUnanalyzable, "the command is %d bytes, above the %d KiB the gate analyses", len(line), MaxCommandSize>>10)
	}
	a, err := command.Analyze(line)
	if err != nil {
		var ue *command.UnanalyzableError
		reason := err.Error()
		if errors.As(err, &ue) {
			reason = ue.Reason
			if ue.Code == command.CodeResourceBomb {
				return deny(CodeResourceBomb, "the line would not end: %s", reason)
			}
		}
		if j.askAll() {
			return Verdict{Decision: Ask, Code: CodeUnanalyzable, Reason: "the command cannot be analysed (" + reason + "); a human must approve it"}
		}
		return deny(CodeUnanalyzable, "the command cannot be analysed: %s", reason)
	}
	if len(a.Commands) == 0 && len(a.Writes) == 0 && len(a.Reads) == 0 {
		return Verdict{Decision: Allow, Code: CodeAllowed, Reason: "the line runs no command"}
	}
	j.dotglob = globsDotfiles(line)
	j.writes = len(a.Writes) > 0
	j.net = j.p.Contained && usesNetwork(a)
	j.pwdSet = strings.Count(line, "PWD") != strings.Count(line, "$PWD")+strings.Count(line, "${PWD}")
	st := newStrictest()
	words := make([]rule.Word, 0, argCount(a.Commands))
	for _, c := range a.Commands {
		if onlyShells(c.Wrappers) && innocuous(c.Args) {
			continue
		}
		for i, w := range c.Args {
			if i == 0 && !strings.Contains(w.Text, "/") {
				continue // a program looked up in PATH, not a file here
			}
			if v, bad := j.protectedWord(w, c); bad {
				return v
			}
		}
		if v, bad := j.globListings(c); bad && st.beats(rankOf(v.Decision)) {
			st.offer(v)
		}
		if v, bad := j.trackedRewriteVerdict(c); bad {
			return v
		}
		if v, bad := j.sweepVerdict(c); bad {
			if v.Code == CodeSelfTamper {
				return v
			}
			st.offer(v)
		}
		if v, bad := j.gitRepoVerdict(c); bad {
			j.offer(&st, v)
		}
		if isReader(c) && !command.Modeled(path.Base(c.Args[0].Text)) && st.beats(rankOf(Ask)) {
			// A program the analysis does not model: every word may name a
			// file it reads.
			if v, bad := j.readerArgs(c); bad {
				if v.Code == CodeSelfTamper {
					return v
				}
				j.offer(&st, v)
			}
		}
		start := len(words)
		words = appendWords(words, c.Args)
		args := words[start:len(words):len(words)]
		// The reason names the command; it is built only for a verdict that
		// can still decide the line.
		if o := j.fold(func(s rule.Set) rule.Verdict { return s.CheckCommand(args) }); st.beats(o.rank()) {
			st.offer(withAllow(o.verdict("command "+quoteArgs(c.Args)), commandRule(args),
				func(r rule.Rule) bool { return r.MatchCommand(args, rule.Allow) }))
		}
		// A wrapper may itself be denied or held (sudo, doas…).
		for _, w := range c.Wrappers {
			wrapped := append([]rule.Word{{Text: w, Literal: true}}, args...)
			o := j.fold(func(s rule.Set) rule.Verdict {
				v := s.CheckCommand(wrapped)
				if v.Mode == rule.Allow {
					return rule.Verdict{Mode: rule.Allow}
				}
				if !v.Matched() && !privilegeWrappers[w] {
					return rule.Verdict{Mode: rule.Allow} // the inner command was judged above
				}
				return v
			})
			if st.beats(o.rank()) {
				st.offer(o.verdict("command " + quoteArgs(c.Args) + " under " + w))
			}
		}
	}
	for _, r := range a.Reads {
		if v, stop := j.lineRead(r); stop {
			return v
		} else if v.Decision != "" {
			j.offer(&st, v)
		}
	}
	for _, w := range a.Writes {
		if v, stop := j.lineWrite(w); stop {
			return v
		} else if v.Decision != "" {
			j.offer(&st, v)
		}
	}
	v := st.best
	switch {
	case v.Decision == Allow:
		v.Reason = fmt.Sprintf("all %d commands, %d writes and %d reads are granted", len(a.Commands), len(a.Writes), len(a.Reads)) + j.kernelNote()
		v.Kernel = j.kernelN > 0
	case v.Decision == Ask && j.kernelN > 0:
		// A person's approval runs the line as it is, uncontained: the
		// paths left to the kernel are refused as they would be alone.
		v = j.runtimeDeny
		v.runtime = false
	}
	return v
}

// lineRead judges one read the analysis found. stop is set for a verdict
// that decides the line at once (self-tamper); an empty verdict is an
// allow.
func (j *judge) lineRead(r command.Read) (v Verdict, stop bool) {
	switch {
	case r.Unknown && r.Literal:
		// a relative path in a directory the line changed to in a way the
		// gate cannot follow: the gate's own files are refused by name
		if v, bad := j.unknownDirName(r.Path, j.p.Private); bad {
			return v, true
		}
		return unknownPath("reading %q in a directory the line changed to in a way the gate cannot follow", truncate(r.Path)), false
	case r.Unknown:
		return unknownPath("%s: the paths it reads are known only when the line runs", truncate(r.Path)), false
	case isNetworkPath(r.Path) || !r.Literal && strings.Contains(r.Path, "/dev/"):
		return j.network(r.Path, r.Literal), false
	case !r.Literal:
		if prefix, next, known := j.expandPrefixNext(r.Path, j.cwd); r.Names && known && next == 0 &&
			!(j.pwdSet && strings.Contains(r.Path, "PWD")) {
			r.Path = prefix // cd ~ && ls: a place the gate knows
			break
		}
		if v, bad := j.readExpanded("the line", command.Word{Text: r.Path}, []string{j.cwd}); bad {
			return v, v.Code == CodeSelfTamper
		}
		return Verdict{}, false
	}
	abs, err := j.resolve(r.Path)
	if err != nil {
		return deny(CodeMalformed, "reading %q: %v", truncate(r.Path), err), false
	}
	if r.Names {
		v = j.placeVerdict("the line", abs)
	} else {
		v = j.readVerdict("the line", abs)
	}
	if v.Decision == Allow {
		return Verdict{}, false
	}
	return v, v.Code == CodeSelfTamper
}

// lineWrite judges one write the analysis found, like lineRead.
func (j *judge) lineWrite(w command.Write) (Verdict, bool) {
	switch {
	case w.Unknown && w.Literal:
		if v, bad := j.unknownDirName(w.Path, j.p.Protected); bad {
			return v, true
		}
		return unknownPath("writing %q in a directory the line changed to in a way the gate cannot follow", truncate(w.Path)), false
	case w.Unknown:
		return unknownPath("%s: the paths it writes are known only when the line runs", truncate(w.Path)), false
	case isNetworkPath(w.Path) || !w.Literal && strings.Contains(w.Path, "/dev/"):
		return j.network(w.Path, w.Literal), false
	case !w.Literal:
		if p, ok := j.reachesAny(command.Word{Text: w.Path}, []string{j.cwd}, j.p.Protected); ok {
			return deny(CodeSelfTamper, "writing %q can expand onto %s, which holds the gate's own files", truncate(w.Path), p), true
		}
		prefix, next, known := j.expandPrefixNext(w.Path, j.cwd)
		if known {
			if v, bad := j.nestedGitWrite(cleanPrefix(prefix)); bad {
				return v, true
			}
		}
		if !known || next != 0 || j.pwdSet && strings.Contains(w.Path, "PWD") {
			return unknownPath("writing %q: the target is computed when the line runs", truncate(w.Path)), false
		}
		w.Path = prefix // ~/x, $HOME/x, $PWD/x: a path the gate knows
	}
	abs, err := j.resolve(w.Path)
	if err != nil {
		return deny(CodeMalformed, "writing %q: %v", truncate(w.Path), err), false
	}
	if v, bad := j.protected(abs); bad {
		return v, true
	}
	if v, bad := j.nestedGitWrite(abs); bad {
		return v, true
	}
	if w.Tree {
		// offered, not final: a deny rule on the command (rm -rf /) says
		// it first
		if v, bad := j.treeVerdict(abs, w.Match); bad {
			return v, false
		}
	}
	o := j.fold(func(s rule.Set) rule.Verdict { return s.CheckPath(rule.Write, abs, j.rootsFor(abs)) })
	if o.rank() == rankOf(Allow) {
		return Verdict{}, false
	}
	v := o.verdict("writing " + abs)
	if v.Decision == Deny && v.Code == CodeNotGranted && !j.inRoots(abs) {
		v.Code = CodeOutside
	}
	return v, false
}

// privilegeWrappers run their command as another user: the wrapper is an
// action of its own, so a grant must hold a rule that allows it; that the
// inner command is granted is not enough.
var privilegeWrappers = map[string]bool{"sudo": true, "doas": true, "su": true}

// innocuous reports shell builtins that change only the shell's own state,
// given arguments whose meaning is certain; they need no capability. What
// they lead to (a write after cd) is judged. Any other argument makes the
// builtin a command like any other, which needs a rule.
func innocuous(args []command.Word) bool {
	ops := args[1:]
	switch args[0].Text {
	case "true", "false", ":":
		return true // arguments are ignored; their expansions are judged
	case "test", "[":
		return true // the analysis refuses -v and -R on names it cannot see
	case "cd", "pushd", "popd", "dirs":
		for len(ops) > 0 && ops[0].Literal && len(ops[0].Text) > 1 && ops[0].Text[0] == '-' &&
			strings.Trim(ops[0].Text[1:], "LPe@nclpv") == "" {
			ops = ops[1:]
		}
		if len(ops) > 0 && ops[0].Literal && ops[0].Text == "--" {
			ops = ops[1:]
		}
		return len(ops) <= 1
	case "set", "let", "getopts", "unset", "umask", "ulimit", "times", "type", "hash":
		// They change or show the shell's own state; the analysis refuses
		// what of it changes how the line is read or runs hidden code
		// (set -k, set -o with most options, let with code, hash -p).
		return true
	case "command":
		return len(ops) > 0 && (ops[0].Text == "-v" || ops[0].Text == "-V")
	case "export", "declare", "typeset", "local", "readonly":
		// Assignments, judged as NAME=value is (the analysis refuses the
		// names that make programs run code); -f shares functions with
		// the shells the line starts, which no rule then sees.
		for _, w := range ops {
			if !w.Literal && (w.Text == "" || !identStart(w.Text[0])) ||
				w.Literal && (strings.HasPrefix(w.Text, "-") || strings.HasPrefix(w.Text, "+")) && strings.ContainsRune(w.Text, 'f') {
				return false
			}
		}
		return true
	case "exit", "return", "shift", "break", "continue":
		return len(ops) == 0 || len(ops) == 1 && (decimal(ops[0], args[0].Text == "exit" || args[0].Text == "return") || ops[0].Text == "$?" || ops[0].Text == `"$?"`)
	case "read":
		// read [-ers] [-a NAME] [-d D] [-i T] [-n N] [-N N] [-p P] [-t T] [-u FD] NAME…:
		// it sets variables from its input, which the line's redirections
		// give and the gate judges. Names must be plain: the analysis
		// refuses subscripts, which bash would evaluate.
		for i := 0; i < len(ops); i++ {
			t := ops[i].Text
			switch {
			case !ops[i].Literal:
				return false
			case t == "-r" || t == "-s" || t == "-e" || t == "-rs" || t == "-sr" || t == "-er" || t == "-re":
			case len(t) == 2 && t[0] == '-' && strings.ContainsRune("adinNptu", rune(t[1])):
				i++ // its value
			case t == "--":
			case identifier(t):
			default:
				return false
			}
		}
		return true
	case "wait":
		for _, w := range ops {
			t := strings.TrimPrefix(w.Text, "%")
			if !(w.Literal && (w.Text == "-n" || w.Text == "-f" || decimal(command.Word{Text: t, Literal: true}, false))) &&
				w.Text != "$!" && w.Text != `"$!"` {
				return false
			}
		}
		return true
	}
	return false
}

// onlyShells reports whether every wrapper is a shell running a string,
// where a builtin is as innocuous as on the line itself (sh -c 'cd x').
func onlyShells(wrappers []string) bool {
	for _, w := range wrappers {
		switch w {
		case "sh", "bash", "dash", "ash", "posh", "mksh", "lksh", "rbash", "time":
		default:
			return false
		}
	}
	return true
}

// identStart reports a byte a shell variable name may start with: a
// computed word that starts otherwise may expand to an option.
func identStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// identifier reports a shell variable name.
func identifier(s string) bool {
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// decimal reports a literal decimal number, signed when signed is set.
func decimal(w command.Word, signed bool) bool {
	t := w.Text
	if signed {
		t = strings.TrimPrefix(t, "-")
	}
	return w.Literal && t != "" && strings.Trim(t, "0123456789") == ""
}

// askAll reports whether some link holds a bare Bash ask rule: the user
// asked to be consulted on commands the rules cannot settle.
func (j *judge) askAll() bool {
	for _, s := range j.p.Sets {
		for _, r := range s.Ask {
			if r.Tool() == "Bash" && r.Spec() == "" {
				return true
			}
		}
	}
	return false
}

// protectedWord denies a command whose argument names one of the gate's
// own files (rm -rf ~/.local/share/joule, sed -i … .claude/settings.json),
// also through expansion ($HOME/.local/share/jo*, ./.cl*/settings.json) and
// in a directory the line changed to (cd .claude && rm settings.json).
func (j *judge) protectedWord(w command.Word, c command.Command) (Verdict, bool) {
	text := w.Text
	if i := strings.IndexByte(text, '='); i > 0 && strings.HasPrefix(text, "-") {
		text = text[i+1:] // --file=path
		w = command.Word{Text: text, Literal: w.Literal}
	}
	dirs := j.commandDirs(c)
	if !w.Literal {
		// ~/x, $HOME/x and $PWD/x with nothing else to expand are paths
		// like any other; anything more may expand onto a protected path.
		if prefix, next, known := j.expandPrefixNext(w.Text, j.cwd); known && next == 0 {
			text, w = prefix, command.Word{Text: prefix, Literal: true}
		} else {
			if p, ok := j.reachesAny(w, dirs, j.p.Protected); ok {
				return deny(CodeSelfTamper, "the command names %q, which can expand onto %s, where the gate's own files are", truncate(w.Text), p), true
			}
			return Verdict{}, false
		}
	}
	if !strings.ContainsRune(text, '/') && !strings.HasPrefix(text, ".") && dirs != nil && len(c.Dirs) == 0 && !j.protectedName(text) {
		return Verdict{}, false
	}
	if dirs == nil {
		// Unknown directory: a relative name is protected if a protected
		// path ends with it or it lies inside a protected directory.
		if strings.HasPrefix(text, "/") {
			dirs = []string{j.cwd}
		} else {
			return j.unknownDirName(text, j.p.Protected)
		}
	}
	for _, d := range dirs {
		abs, err := j.resolveIn(d, text)
		if err != nil {
			continue
		}
		for _, p := range j.p.Protected {
			// Inside a protected path, or a narrow directory above one that is
			// neither /, the home directory nor on the way to the workspace
			// (rm -rf ~/.local takes ~/.local/share/joule with it).
			above := within(p, abs) && abs != "/" && abs != j.p.Home && !j.inRoots(abs) &&
				!slices.ContainsFunc(j.roots, func(r string) bool { return within(r, abs) })
			if within(abs, p) || above {
				return deny(CodeSelfTamper, "the command names %s, which holds the gate's own files", abs), true
			}
		}
	}
	return Verdict{}, false
}

// unknownDirName judges a relative path named in a directory the line
// changed to in a way the gate cannot follow: it is one of paths if one of
// them ends with it, or lies inside one.
func (j *judge) unknownDirName(text string, paths []string) (Verdict, bool) {
	clean := path.Clean(text)
	first, _, _ := strings.Cut(clean, "/")
	for _, p := range paths {
		if strings.HasSuffix(p, "/"+clean) || strings.Contains(p+"/", "/"+clean+"/") {
			return deny(CodeSelfTamper, "the line names %q in a directory the gate cannot follow, and %s ends with it", truncate(text), p), true
		}
		if _, err := os.Lstat(filepath.Join(p, first)); err == nil && first != "." && first != ".." {
			return deny(CodeSelfTamper, "the line names %q in a directory the gate cannot follow, and %s holds it", truncate(text), p), true
		}
	}
	return Verdict{}, false
}

// protectedName reports a bare name that some protected path ends with
// (opencode.json at a workspace root).
func (j *judge) protectedName(name string) bool {
	for _, p := range j.p.Protected {
		if len(p) > len(name) && p[len(p)-len(name)-1] == '/' && strings.HasSuffix(p, name) {
			return true
		}
	}
	return false
}

// argCount counts the words of cmds, to hold them all in one allocation.
func argCount(cmds []command.Command) int {
	n := 0
	for _, c := range cmds {
		n += len(c.Args)
	}
	return n
}

func appendWords(out []rule.Word, ws []command.Word) []rule.Word {
	for _, w := range ws {
		out = append(out, rule.Word{Text: w.Text, Literal: w.Literal})
	}
	return out
}

func quoteArgs(ws []command.Word) string {
	parts := make([]string, 0, len(ws))
	for _, w := range ws {
		parts = append(parts, w.Text)
	}
	return fmt.Sprintf("%q", truncate(strings.Join(parts, " ")))
}

func truncate(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// within reports whether abs is root or below it; both must be clean
// absolute paths, as everything the gate compares has been resolved.
func within(abs, root string) bool {
	switch {
	case root == "/":
		return strings.HasPrefix(abs, "/")
	case !strings.HasPrefix(abs, root):
		return false
	}
	return len(abs) == len(root) || abs[len(root)] == '/'
}

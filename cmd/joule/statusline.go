package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/rule"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/plugins/claudecode"
	"github.com/joulehook/joule/plugins/hook"
)

func init() {
	register(&command{name: "statusline", summary: "print one status line for Claude Code: the session's joules, decisions and budget left", run: runStatusline})
}

// sessionStats is what the status line shows of one session's receipts.
type sessionStats struct {
	allowed, denied, asked int
	calls, fitted          int // model calls, and those fitted to the budget
	// metered counts the host's model calls a meter saw: the proxy
	// (enforced) or telemetry (observed only); a tier's own calls are
	// joule's work, not the host's.
	enforced, observed int
	// joules by provenance: gate debits and efficiency receipts
	measured, modelled, estimated uint64
}

func runStatusline(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "statusline", `statusline < status.json

Reads Claude Code's status-line JSON on stdin and prints one short line for
its session: the joules its receipts account for (split into measured,
modelled and estimated), whether the model's own tokens are metered (by
joule proxy, or only observed through OpenTelemetry; without either the
figure is joule's own work), the gate's decisions allowed / denied, the
budget left on the active grant, and a warning when the install of
Claude Code for its workspace does not contain the shell commands joule
allows (--no-contain, an install from before containment was the
default, a kernel without Landlock or user namespaces). It never fails
loudly: a problem is printed as the line itself, since it runs on every
refresh.`)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, statusLine(ctx, e.stdin))
	return nil
}

func statusLine(ctx context.Context, r io.Reader) (line string) {
	defer func() {
		if p := recover(); p != nil {
			line = fmt.Sprintf("joule: internal error: %v", p)
		}
	}()
	var in struct {
		SessionID string `json:"session_id"`
		Cwd       string `json:"cwd"`
		Workspace struct {
			ProjectDir string `json:"project_dir"`
		} `json:"workspace"`
	}
	b, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil || json.Unmarshal(b, &in) != nil || in.SessionID == "" {
		return "joule: no session in the status-line input"
	}
	ep, err := openReader()
	if errors.Is(err, identity.ErrNoKey) {
		return "joule: not initialised (run joule init)"
	}
	if err != nil {
		return "joule: " + firstLine(err.Error())
	}
	// The store stays open until exit: see the note above openEndpoint.
	st, err := sessionStatsOf(ctx, ep, in.SessionID)
	if err != nil {
		return "joule: " + err.Error()
	}
	total := st.measured + st.modelled + st.estimated
	parts := []string{"⚡ " + grant.FormatEnergy(total)}
	var split []string
	for _, p := range []struct {
		uj   uint64
		name string
	}{{st.measured, "measured"}, {st.modelled, "modelled"}, {st.estimated, "estimated"}} {
		if p.uj > 0 {
			split = append(split, grant.FormatEnergy(p.uj)+" "+p.name)
		}
	}
	if len(split) > 0 {
		parts[0] += " (" + strings.Join(split, ", ") + ")"
	}
	// JouleHook §7: without a meter the figure is joule's own work only,
	// and says so; telemetry alone observes, it does not enforce.
	switch {
	case st.enforced > 0:
	case st.observed > 0:
		parts = append(parts, "model tokens observed, not enforced (OTel)")
	default:
		parts = append(parts, "model tokens unmetered (joule proxy)")
	}
	dec := fmt.Sprintf("%d allowed · %d denied", st.allowed, st.denied)
	if st.asked > 0 {
		dec += fmt.Sprintf(" · %d asked", st.asked)
	}
	parts = append(parts, dec)
	if st.fitted > 0 {
		// The budget is low enough that calls get less output than they
		// ask for: worth a glance before it refuses them.
		parts = append(parts, fmt.Sprintf("%d of %d calls fitted to the budget", st.fitted, st.calls))
	}
	parts = append(parts, budgetLeft(ctx, ep, in.SessionID, in.Cwd))
	dir := in.Workspace.ProjectDir
	if dir == "" {
		dir = in.Cwd
	}
	if w := containWarning(ep.home, dir); w != "" {
		parts = append(parts, w)
	}
	return "joule " + strings.Join(parts, " │ ")
}

// containWarning is the status line's warning when the install of Claude
// Code that serves dir (the innermost project install around it, else the
// user's), as $JOULE_HOME's record of installs has it, leaves the shell
// commands joule allows less than fully contained; "" when it does not,
// or when there is no record to go by.
func containWarning(home, dir string) string {
	recs, err := hook.LoadRecords(home)
	if err != nil {
		return ""
	}
	var rec *hook.Record
	for i, r := range recs {
		if r.Host != claudecode.Host {
			continue
		}
		switch {
		case r.Project == "":
			if rec == nil {
				rec = &recs[i]
			}
		case dir != "" && rule.Within(dir, r.Project) && (rec == nil || len(r.Project) > len(rec.Project)):
			rec = &recs[i]
		}
	}
	if rec == nil {
		return ""
	}
	switch rec.Contain {
	case hook.NoContain:
		return "⚠ not contained (--no-contain)"
	case hook.Contained:
	default:
		return "⚠ not contained (an install from before containment: joule doctor)"
	}
	abi, namespaces := sandboxState()
	switch {
	case abi == 0:
		return "⚠ not contained: no Landlock here"
	case !namespaces:
		return "⚠ Landlock alone: no user namespaces"
	}
	return ""
}

func sessionStatsOf(ctx context.Context, ep *endpoint, session string) (sessionStats, error) {
	var st sessionStats
	keys, err := ep.keys()
	if err != nil {
		return st, err
	}
	entries, err := ep.store.Session(ctx, session)
	if errors.Is(err, store.ErrNotFound) {
		return st, nil // nothing decided yet in this session
	}
	if err != nil {
		return st, err
	}
	for _, en := range entries {
		a, err := keys.Open(en.Envelope)
		if err != nil {
			return st, fmt.Errorf("receipt %d does not verify", en.Seq)
		}
		switch {
		case a.Decision != nil:
			switch a.Decision.Decision {
			case receipts.Allow, receipts.Rewrite:
				st.allowed++
			case receipts.Deny:
				st.denied++
			default:
				st.asked++
			}
			st.add(a.Decision.Provenance, a.Decision.DebitUJ, nil)
		case a.Efficiency != nil:
			if a.Efficiency.Unit == "model-call" {
				st.calls += a.Efficiency.CallCount()
				st.fitted += a.Efficiency.FittedCount()
			}
			switch a.Efficiency.Coverage {
			case receipts.CoverageEnforced:
				st.enforced++
			case receipts.CoverageObserved:
				st.observed++
			}
			st.add(a.Efficiency.Provenance, a.Efficiency.EstimatedUJ, a.Efficiency.MeasuredUJ)
		}
	}
	return st, nil
}

func (st *sessionStats) add(p core.Provenance, estimated uint64, measured *uint64) {
	switch {
	case measured != nil:
		st.measured += *measured
	case p == core.ModelBased:
		st.modelled += estimated
	default:
		st.estimated += estimated
	}
}

// budgetLeft is the least any link of the session's active chain has left:
// what the next allow can still spend.
func budgetLeft(ctx context.Context, ep *endpoint, session, cwd string) string {
	g, err := ep.gate()
	if err != nil {
		return "no grant"
	}
	chain, err := g.ActiveChainAt(ctx, session, cwd)
	if err != nil {
		return "no active grant"
	}
	if err := chain.Check(session, time.Now()); errors.Is(err, grant.ErrExpired) {
		// Nothing is left to spend: every call is denied until renewed.
		return "grant expired: joule grant renew " + shortPrefix(chain.Leaf().ID.String())
	} else if err != nil {
		return "grant not in force"
	}
	var left uint64
	for i, id := range chain.IDs() {
		rec, err := ep.store.Grant(ctx, id)
		if err != nil {
			return "budget unknown"
		}
		if r := rec.RemainingUJ(); i == 0 || r < left {
			left = r
		}
	}
	return grant.FormatEnergy(left) + " left"
}

// firstLine keeps a status line one short line.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return truncate(s, 160)
}

package acpagent

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/energy"
	"github.com/joulehook/joule/tiers"
	"github.com/joulehook/joule/tiers/l0"
	"github.com/joulehook/joule/tiers/l1"
)

func checkCwd(cwd string) (string, error) {
	if !filepath.IsAbs(cwd) {
		return "", acp.NewInvalidParams(map[string]any{"cwd": fmt.Sprintf("cwd %q must be an absolute path", cwd)})
	}
	fi, err := os.Stat(cwd)
	if err != nil || !fi.IsDir() {
		return "", acp.NewInvalidParams(map[string]any{"cwd": fmt.Sprintf("cwd %q is not a directory", cwd)})
	}
	return filepath.Clean(cwd), nil
}

// turn is one prompt being worked on; it is the Editor a delegated stage sees.
type turn struct {
	a *Agent
	s *session

	once  sync.Once
	fmu   sync.Mutex
	files core.Files // the disk, overlaid with the editor buffers read (see Buffer)
	err   error

	mu      sync.Mutex
	usage   *acp.Usage      // what a remote agent reported, if any
	metered bool            // the remote's model calls went through joule proxy
	from    uint64          // the session's last sequence when they started
	tail    string          // the end of the agent message text sent so far
	edits   map[string]bool // files the user allowed editing in this turn (absolute paths)

	out outcome // what the turn did, for the response's _meta
}

// outcome is the machine-readable result of one prompt, returned in the
// session/prompt response's _meta under "joule" so that an editor or a
// test reads what happened without parsing prose.
type outcome struct {
	consulted []tiers.Consultation
	closing   core.Tier
	opID      string       // the closing op, if the request was closed by a change
	applied   bool         // the op was written to the workspace
	changed   []string     // the files it changed, workspace-relative
	receipt   *store.Entry // the efficiency receipt sealed for the turn's work
	cancelled bool         // the turn was cancelled while a tier worked
}

// notApplied records a turn whose closing op could not be written (the
// editor's buffers could not be read): what closed, and the op, not applied.
func (o *outcome) notApplied(res *tiers.Result) {
	if res == nil {
		return
	}
	o.consulted, o.closing = res.Consulted, res.Closing
	if !res.Closed() || res.Resolution.Op == nil {
		return
	}
	if id, err := res.Resolution.Op.Verify(); err == nil {
		o.opID, o.changed = id.String(), nil
		seen := map[string]bool{}
		for _, e := range res.Resolution.Op.Op.Edits {
			if !seen[e.Path] {
				seen[e.Path] = true
				o.changed = append(o.changed, e.Path)
			}
		}
		sort.Strings(o.changed)
	}
}

func (o *outcome) meta() map[string]any {
	var tier any
	if o.closing != "" {
		tier = string(o.closing)
	}
	consulted := []map[string]any{}
	for i, k := range o.consulted {
		c := map[string]any{"tier": string(k.Tier)}
		switch {
		case k.Denied != nil:
			c["outcome"], c["code"], c["reason"] = "denied", k.Denied.Code, k.Denied.Reason
		case k.Err != nil && o.cancelled && i == len(o.consulted)-1:
			c["outcome"] = "cancelled"
		case k.Err != nil:
			c["outcome"], c["reason"] = "failed", oneLineMax(k.Err.Error(), 500)
		case k.Closed:
			c["outcome"] = "closed"
		default:
			c["outcome"] = "miss"
		}
		consulted = append(consulted, c)
	}
	m := map[string]any{"tier": tier, "consulted": consulted, "op": nil, "receipt": nil}
	if o.opID != "" {
		changed := o.changed
		if changed == nil {
			changed = []string{}
		}
		m["op"] = map[string]any{"id": o.opID, "applied": o.applied, "files": changed}
	}
	if o.receipt != nil {
		m["receipt"] = map[string]any{"session": o.receipt.Session, "sequence": o.receipt.Seq, "hash": core.ID(o.receipt.Hash).String()}
	}
	return map[string]any{"joule": m}
}

func (t *turn) Metered() {
	var last uint64
	if es, err := t.a.opt.Gate.Store.Session(context.Background(), string(t.s.id)); err == nil && len(es) > 0 {
		last = es[len(es)-1].Seq
	}
	t.mu.Lock()
	if !t.metered {
		t.metered, t.from = true, last
	}
	t.mu.Unlock()
}

// proxied is what joule proxy sealed in the session for the remote's model
// calls since Metered: their tokens summed, and which receipts they are.
// The proxy seals a call just after answering it, so this waits until no
// new receipt came for a moment (at most a few seconds).
func (t *turn) proxied(ctx context.Context) (u energy.Usage, uj uint64, refs []string, calls int) {
	t.mu.Lock()
	from := t.from
	t.mu.Unlock()
	var seen uint64
	quiet := 0
	for wait := 0; wait < 40 && quiet < 4; wait++ {
		es, err := t.a.opt.Gate.Store.SessionRange(ctx, string(t.s.id), from, 100000)
		if err != nil {
			break
		}
		if n := uint64(len(es)); n == seen && wait > 0 {
			quiet++
		} else {
			seen, quiet = n, 0
		}
		if quiet < 4 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		for _, e := range es {
			r, err := t.a.decode(e.Envelope)
			if err != nil || r.Efficiency == nil || r.Efficiency.Unit != "model-call" {
				continue
			}
			f := r.Efficiency
			u.Input += f.InputTokens
			u.CachedInput += f.CachedInputTokens
			u.CacheWrite += f.CacheWriteTokens
			u.Output += f.OutputTokens
			uj = energy.Cap(uj + f.EstimatedUJ)
			refs = append(refs, fmt.Sprintf("#%d %s", e.Seq, core.ID(e.Hash).String()[:12]))
			calls++
		}
	}
	return
}

func (t *turn) Usage(u acp.Usage) {
	t.mu.Lock()
	t.usage = &u
	t.mu.Unlock()
}

// work is what an efficiency receipt says about the turn's energy: the
// consultations' reference costs, plus, when a remote agent reported token
// usage and its model calls were not metered by joule proxy, an Estimator
// figure for those tokens at the frontier class's rates.
func (t *turn) work(ctx context.Context, uj uint64) (receipts.Efficiency, string) {
	t.mu.Lock()
	u, metered, viaSession := t.usage, t.metered || t.a.opt.Metered, t.metered
	t.mu.Unlock()
	e := receipts.Efficiency{EstimatedUJ: uj}
	if viaSession {
		// The remote's calls were sealed in this session by joule proxy:
		// this receipt carries their metered tokens and names them.
		if mu, muj, refs, calls := t.proxied(ctx); calls > 0 {
			e.InputTokens, e.CachedInputTokens, e.CacheWriteTokens, e.OutputTokens = mu.Input, mu.CachedInput, mu.CacheWrite, mu.Output
			return e, fmt.Sprintf("; the remote's %d model call(s) metered by joule proxy: %d input, %d cached, %d cache-write, %d output tokens, %s, in this session's receipts %s",
				calls, mu.Input, mu.CachedInput, mu.CacheWrite, mu.Output, grant.FormatEnergy(muj), strings.Join(refs, ", "))
		}
	}
	if u == nil {
		return e, ""
	}
	cached := uint64(0)
	if u.CachedReadTokens != nil {
		cached = uint64(*u.CachedReadTokens)
	}
	write := uint64(0)
	if u.CachedWriteTokens != nil {
		write = uint64(*u.CachedWriteTokens)
	}
	in := uint64(u.InputTokens)
	if in >= cached+write {
		in -= cached + write
	}
	e.InputTokens, e.CachedInputTokens, e.CacheWriteTokens, e.OutputTokens = in, cached, write, uint64(u.OutputTokens)
	if metered {
		return e, "; the remote's tokens are as it reported them, their energy is in the proxy's receipts"
	}
	eu := energy.Usage{Input: in, CachedInput: cached, CacheWrite: write, Output: e.OutputTokens}
	e.EstimatedUJ = energy.Cap(uj + energy.DefaultRates[energy.Frontier].Of(eu))
	return e, "; includes the remote's reported tokens at the frontier class's Estimator rates"
}

func (t *turn) Update(ctx context.Context, u acp.SessionUpdate) error {
	if c := u.AgentMessageChunk; c != nil && c.Content.Text != nil && c.Content.Text.Text != "" {
		t.mu.Lock()
		t.tail = lastRunes(t.tail+c.Content.Text.Text, 2)
		t.mu.Unlock()
	}
	return t.a.connection().SessionUpdate(ctx, acp.SessionNotification{SessionId: t.s.id, Update: u})
}

func lastRunes(s string, n int) string {
	r := []rune(s)
	return string(r[max(0, len(r)-n):])
}

// Permission asks the editor. An edit the user allows is remembered for the
// turn (allowedEdit), so that writing the op that follows does not ask
// about the same file again.
func (t *turn) Permission(ctx context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	req.SessionId = t.s.id
	resp, err := t.a.connection().RequestPermission(ctx, req)
	if err != nil || resp.Outcome.Selected == nil || req.ToolCall.Kind == nil || *req.ToolCall.Kind != acp.ToolKindEdit {
		return resp, err
	}
	for _, o := range req.Options {
		if o.OptionId == resp.Outcome.Selected.OptionId && (o.Kind == acp.PermissionOptionKindAllowOnce || o.Kind == acp.PermissionOptionKindAllowAlways) {
			t.mu.Lock()
			if t.edits == nil {
				t.edits = map[string]bool{}
			}
			for _, l := range req.ToolCall.Locations {
				t.edits[filepath.Clean(l.Path)] = true
			}
			t.mu.Unlock()
		}
	}
	return resp, err
}

// allowedEdit reports whether the user allowed editing abs in this turn: a
// remote agent's write is asked about when it makes it, and the op that
// carries it is the same write.
func (t *turn) allowedEdit(abs string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.edits[filepath.Clean(abs)]
}

// errTurnCancelled is a permission request answered "cancelled": ACP's
// clients answer so when the user cancels the prompt turn (agent-shell
// answers every pending request so, then sends session/cancel).
var errTurnCancelled = errors.New("the editor cancelled the turn")

// Ask asks the user through the editor: true for the allow option, false
// for the reject option. A "cancelled" outcome is errTurnCancelled; an
// editor that answers with an error (no one to ask) has not allowed it.
func (t *turn) Ask(ctx context.Context, call acp.ToolCallUpdate) (bool, error) {
	resp, err := t.Permission(ctx, acp.RequestPermissionRequest{ToolCall: call,
		Options: []acp.PermissionOption{
			{OptionId: "allow", Name: "Allow once", Kind: acp.PermissionOptionKindAllowOnce},
			{OptionId: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
		}})
	if err != nil {
		return false, err
	}
	if resp.Outcome.Cancelled != nil {
		return false, errTurnCancelled
	}
	return resp.Outcome.Selected != nil && resp.Outcome.Selected.OptionId == "allow", nil
}

// Files reads the workspace once per turn: every stage sees one tree state
// (with the editor buffers read so far, see Buffer).
func (t *turn) Files(ctx context.Context) (core.Files, error) {
	t.once.Do(func() { t.files, t.err = t.s.disk.Read() })
	t.fmu.Lock()
	defer t.fmu.Unlock()
	return t.files, t.err
}

func (t *turn) snapshot(ctx context.Context, root string) (core.Files, error) { return t.Files(ctx) }

// say sends joule's own message text, a paragraph apart from what was said
// before in the turn (a remote agent's relayed message does not end with
// one): editors join a turn's message chunks as they come.
func (t *turn) say(ctx context.Context, text string) {
	t.mu.Lock()
	tail := t.tail
	t.mu.Unlock()
	switch {
	case tail == "" || strings.HasSuffix(tail, "\n\n"):
	case strings.HasSuffix(tail, "\n"):
		text = "\n" + text
	default:
		text = "\n\n" + text
	}
	_ = t.Update(ctx, acp.UpdateAgentMessageText(text))
}

// Prompt implements acp.Agent: it runs the gated cascade on the request and
// applies whatever op closes it.
func (a *Agent) Prompt(ctx context.Context, p acp.PromptRequest) (resp acp.PromptResponse, err error) {
	a.prompts.Add(1)
	defer a.prompts.Done()
	var t *turn
	defer func() {
		if err == nil && t != nil {
			resp.Meta = t.out.meta()
		}
	}()
	s, err := a.session(p.SessionId)
	if err != nil {
		return acp.PromptResponse{}, err
	}
	if !s.begin() {
		return acp.PromptResponse{}, acp.NewInvalidRequest(map[string]any{"error": fmt.Sprintf("a prompt is already running in session %s; wait for it or cancel it", s.id)})
	}
	defer s.end()
	text, err := promptText(p.Prompt, s.cwd)
	if err != nil {
		return acp.PromptResponse{}, err
	}
	t = &turn{a: a, s: s}
	if strings.TrimSpace(text) == "/cost" {
		return a.cost(ctx, t)
	}
	stages, names := a.stages(t)
	c, err := tiers.New(stages...)
	if err != nil {
		return acp.PromptResponse{}, acp.NewInternalError(map[string]any{"error": err.Error()})
	}
	_ = t.Update(ctx, plan(names, nil, ""))
	c = c.WithGate(&memoGate{inner: tiers.GrantGate{Gate: a.opt.Gate}})
	req := &tiers.Request{Session: string(s.id), Prompt: text, Root: s.cwd, Sum: s.disk.Sum}
	if err := t.preload(ctx, text); err != nil {
		if ctx.Err() != nil {
			return cancelled()
		}
		t.say(ctx, fmt.Sprintf("Reading the editor's buffers failed: %v. Nothing was changed.", err))
		return endTurn()
	}
	res, err := c.Run(ctx, req)
	if err == nil && ctx.Err() == nil {
		if res, err = t.onBuffers(ctx, c, req, res); err != nil && ctx.Err() == nil {
			t.out.notApplied(res)
			t.say(ctx, fmt.Sprintf("The editor's buffers: %v.", err))
			return endTurn()
		}
	}
	if ctx.Err() != nil {
		if res != nil {
			t.out.consulted, t.out.cancelled = res.Consulted, true
		}
		return cancelled()
	}
	if err != nil {
		return acp.PromptResponse{}, acp.NewInternalError(map[string]any{"error": "the cascade stopped: " + err.Error()})
	}
	t.out.consulted, t.out.closing = res.Consulted, res.Closing
	_ = t.Update(ctx, plan(names, res.Consulted, res.Closing))
	for _, k := range res.Consulted {
		switch {
		case k.Denied != nil:
			_ = t.Update(ctx, acp.UpdateAgentThoughtText(fmt.Sprintf("%s denied by the grant (%s): %s", k.Tier, k.Denied.Code, k.Denied.Reason)))
		case k.Err != nil:
			_ = t.Update(ctx, acp.UpdateAgentThoughtText(fmt.Sprintf("%s could not close it: %v", k.Tier, k.Err)))
		}
	}
	uj := spent(res.Consulted)
	if !res.Closed() {
		t.say(ctx, fmt.Sprintf("No tier closed this request (%s).%s\n%s%s", consultedList(res.Consulted), reasons(res.Consulted), fallthroughHint(a.opt.Remote != nil, res.Consulted), a.noTiers(ctx, string(s.id), s.cwd)))
		return endTurn()
	}
	if res.Resolution.Op == nil {
		e, err := a.sealWork(ctx, t, "", res.Closing, uj, "answer: "+oneLine(text))
		if err != nil {
			return acp.PromptResponse{}, acp.NewInternalError(map[string]any{"error": err.Error()})
		}
		t.out.receipt = &e
		t.say(ctx, res.Resolution.Answer+"\n\n"+summaryLine(res.Closing, uj, e))
		return endTurn()
	}
	return a.apply(ctx, t, text, res, uj)
}

func cancelled() (acp.PromptResponse, error) {
	return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
}

func endTurn() (acp.PromptResponse, error) {
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

func (a *Agent) stages(t *turn) ([]tiers.Stage, []core.Tier) {
	var st []tiers.Stage
	if a.opt.Cache != nil {
		st = append(st, &l0.Stage{Cache: a.opt.Cache, Author: a.opt.Key.Public().(ed25519.PublicKey), Snapshot: t.snapshot})
	}
	if !a.opt.NoL1 {
		st = append(st, &l1.Stage{Key: a.opt.Key, Snapshot: t.snapshot})
	}
	var ix *indexStage
	if a.opt.Index != nil {
		ix = &indexStage{x: a.opt.Index, t: t}
		st = append(st, ix)
	}
	if a.opt.Local != nil {
		l := *a.opt.Local
		l.Snapshot = t.snapshot
		st = append(st, &l)
	}
	if a.opt.Remote != nil {
		st = append(st, a.opt.Remote.Stage(t))
	}
	names := make([]core.Tier, len(st))
	for i, s := range st {
		names[i] = s.Tier()
	}
	if ix != nil {
		ix.names = names
	}
	return st, names
}

var tierTitles = map[core.Tier]string{core.L0: "L0: cache of signed ops", core.L1: "L1: lawful deterministic edit", core.L2: "L2: retrieval", core.L3: "L3: local model", core.L4: "L4: remote agent"}

func plan(names []core.Tier, consulted []tiers.Consultation, closing core.Tier) acp.SessionUpdate {
	done := map[core.Tier]bool{}
	for _, k := range consulted {
		done[k.Tier] = true
	}
	var entries []acp.PlanEntry
	for i, n := range names {
		st := acp.PlanEntryStatusPending
		switch {
		case done[n] || (closing != "" && n > closing):
			st = acp.PlanEntryStatusCompleted
		case consulted == nil && i == 0:
			st = acp.PlanEntryStatusInProgress
		}
		title := tierTitles[n]
		if n == closing {
			title += " (closed the request)"
		}
		entries = append(entries, acp.PlanEntry{Content: title, Priority: acp.PlanEntryPriorityMedium, Status: st})
	}
	return acp.UpdatePlan(entries...)
}

// spent is what the turn's consultations debited: each tier that ran
// (allowed by the gate) at its reference cost.
func spent(ks []tiers.Consultation) uint64 {
	var uj uint64
	for _, k := range ks {
		if k.Denied == nil {
			uj += gate.TierCosts[k.Tier]
		}
	}
	return uj
}

func consultedList(ks []tiers.Consultation) string {
	var parts []string
	for _, k := range ks {
		switch {
		case k.Denied != nil:
			parts = append(parts, string(k.Tier)+" denied")
		case k.Err != nil:
			parts = append(parts, string(k.Tier)+" failed")
		default:
			parts = append(parts, string(k.Tier)+" miss")
		}
	}
	if len(parts) == 0 {
		return "no tier was consulted"
	}
	return strings.Join(parts, ", ")
}

// reasons lists why each consulted tier did not close, one line each.
func reasons(ks []tiers.Consultation) string {
	var sb strings.Builder
	for _, k := range ks {
		switch {
		case k.Denied != nil:
			fmt.Fprintf(&sb, "\n- %s: denied by the grant (%s): %s", k.Tier, k.Denied.Code, k.Denied.Reason)
		case k.Err != nil:
			fmt.Fprintf(&sb, "\n- %s: %v", k.Tier, k.Err)
		}
	}
	return sb.String()
}

func fallthroughHint(remote bool, ks []tiers.Consultation) string {
	if !remote {
		return "L1 understands /rename, /format, /replace, /diff and /find, and requests such as 'rename the method Hello of Greeter to Greet', 'Run gofmt on main.go.', 'where is X defined', 'who calls X' (docs/acp.md, What L1 understands); anything else needs a remote agent (L4): see 'joule acp -h'."
	}
	return "The remote agent did not close it either."
}

// noTiers explains a grant that names no tier verbs at all: every tier,
// L0 included, is denied under it.
func (a *Agent) noTiers(ctx context.Context, session, cwd string) string {
	chain, err := a.opt.Gate.ActiveChainAt(ctx, session, cwd)
	if err != nil || len(chain) == 0 {
		return ""
	}
	leaf := chain.Leaf()
	if len(leaf.Grant.Tiers) > 0 {
		return ""
	}
	return fmt.Sprintf("\nThe active grant %s names no tier verbs, so every tier is denied under it: issue one with --tiers (e.g. 'joule grant issue --template dev --use', or add --tiers l0,l1,l2,l4 to your rules) and make it active.", leaf.ID)
}

func summaryLine(tier core.Tier, uj uint64, e store.Entry) string {
	h := core.ID(e.Hash).String()
	return fmt.Sprintf("%s · %s · receipt %s#%d %s", tier, grant.FormatEnergy(uj), e.Session, e.Seq, h[:12])
}

func oneLineMax(s string, n int) string {
	if len(s) > n {
		return strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

func oneLine(s string) string {
	return oneLineMax(strings.Join(strings.Fields(s), " "), 160)
}

// apply writes a closing op: verified, applied in memory, every file's
// write gated, then all files written, then sealed. A denial, a
// cancellation or a stale buffer before the writes leaves the workspace
// untouched.
func (a *Agent) apply(ctx context.Context, t *turn, text string, res *tiers.Result, uj uint64) (acp.PromptResponse, error) {
	sop := res.Resolution.Op
	opID, err := sop.Verify()
	if err != nil {
		return acp.PromptResponse{}, acp.NewInternalError(map[string]any{"error": "the closing op does not verify: " + err.Error()})
	}
	files, err := t.Files(ctx)
	if err != nil {
		return acp.PromptResponse{}, acp.NewInternalError(map[string]any{"error": err.Error()})
	}
	// The op must build on exactly the tree this turn holds (the disk and
	// the editor buffers read): anything else is not what it was computed on.
	if tree, err := files.TreeWith(t.s.disk.Sum); err != nil || tree.ID() != sop.Op.Prior {
		t.say(ctx, fmt.Sprintf("%s produced an op computed on another tree state than the workspace's. Nothing was changed.", res.Closing))
		return endTurn()
	}
	next, err := core.ApplyWith(files, &sop.Op, t.s.disk.Sum)
	if err != nil {
		t.say(ctx, fmt.Sprintf("%s produced an op that does not apply to the workspace: %v. Nothing was changed.", res.Closing, err))
		return endTurn()
	}
	paths := changed(files, next)
	t.out.opID, t.out.changed = opID.String(), paths
	callID := acp.ToolCallId("op-" + opID.String()[:16])
	var diffs []acp.ToolCallContent
	var locs []acp.ToolCallLocation
	for _, p := range paths {
		abs := filepath.Join(t.s.cwd, filepath.FromSlash(p))
		if old, ok := files[p]; ok {
			diffs = append(diffs, acp.ToolDiffContent(abs, string(next[p]), string(old)))
		} else {
			diffs = append(diffs, acp.ToolDiffContent(abs, string(next[p])))
		}
		locs = append(locs, acp.ToolCallLocation{Path: abs})
	}
	title := fmt.Sprintf("%s: %s", res.Closing, oneLine(res.Resolution.Answer))
	_ = t.Update(ctx, acp.StartToolCall(callID, title, acp.WithStartKind(acp.ToolKindEdit), acp.WithStartStatus(acp.ToolCallStatusPending),
		acp.WithStartLocations(locs), acp.WithStartContent(diffs), acp.WithStartRawInput(map[string]any{"op_id": opID.String(), "intent": sop.Op.Intent, "tier": res.Closing})))
	fail := func(msg string) (acp.PromptResponse, error) {
		_ = t.Update(ctx, acp.UpdateToolCall(callID, acp.WithUpdateStatus(acp.ToolCallStatusFailed),
			acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock(msg))})))
		t.say(ctx, msg)
		return endTurn()
	}
	// Cancelled before anything is written: the tool call ends failed,
	// saying so, and the turn ends cancelled.
	cancel := func() (acp.PromptResponse, error) {
		_ = t.Update(context.WithoutCancel(ctx), acp.UpdateToolCall(callID, acp.WithUpdateStatus(acp.ToolCallStatusFailed),
			acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock("The turn was cancelled. Nothing was changed."))})))
		return cancelled()
	}
	for _, p := range paths {
		ok, msg, err := a.gateWrite(ctx, t, callID, title, p, files[p] != nil)
		switch {
		case ctx.Err() != nil || errors.Is(err, errTurnCancelled):
			return cancel()
		case err != nil:
			return acp.PromptResponse{}, acp.NewInternalError(map[string]any{"error": err.Error()})
		case !ok:
			return fail(msg + " Nothing was changed.")
		}
	}
	if ctx.Err() != nil {
		return cancel()
	}
	// From here the op is applied whole: a cancel no longer interrupts it.
	wctx := context.WithoutCancel(ctx)
	if err := a.write(wctx, t, files, next, paths); err != nil {
		return fail(err.Error())
	}
	e, err := a.sealWork(wctx, t, opID.String(), res.Closing, uj, fmt.Sprintf("%s: %s", oneLine(sop.Op.Intent), oneLine(res.Resolution.Answer)))
	if err != nil {
		return acp.PromptResponse{}, acp.NewInternalError(map[string]any{"error": "the op was applied but its receipt could not be sealed: " + err.Error()})
	}
	t.out.applied, t.out.receipt = true, &e
	if err := a.sealOp(opID, res.Closing, uj, e); err != nil {
		a.opt.Log.Error("sealing the JCR-1 receipt", "err", err)
	}
	if a.opt.Cache != nil && res.Closing != core.L0 {
		if err := a.opt.Cache.Put(text, sop); err != nil {
			a.opt.Log.Warn("l0 cache put", "err", err)
		}
	}
	line := summaryLine(res.Closing, uj, e)
	_ = t.Update(wctx, acp.UpdateToolCall(callID, acp.WithUpdateStatus(acp.ToolCallStatusCompleted),
		acp.WithUpdateRawOutput(map[string]any{"op_id": opID.String(), "receipt": core.ID(e.Hash).String(), "sequence": e.Seq, "estimated_uj": uj})))
	t.say(wctx, res.Resolution.Answer+"\n\n"+line)
	return endTurn()
}

func changed(prior, next core.Files) []string {
	var ps []string
	for p, b := range next {
		if old, ok := prior[p]; !ok || string(old) != string(b) {
			ps = append(ps, p)
		}
	}
	sort.Strings(ps)
	return ps
}

// gateWrite puts one file write to the gate as Claude Code's Edit (or
// Write, for a new file), asking the editor when the grant says ask.
func (a *Agent) gateWrite(ctx context.Context, t *turn, callID acp.ToolCallId, title, rel string, exists bool) (bool, string, error) {
	abs := filepath.Join(t.s.cwd, filepath.FromSlash(rel))
	tool := "Edit"
	if !exists {
		tool = "Write"
	}
	input, _ := json.Marshal(map[string]string{"file_path": abs})
	r := a.opt.Gate.Decide(ctx, &gate.Event{SessionID: string(t.s.id), Tool: tool, Input: input, Cwd: t.s.cwd})
	switch r.Decision {
	case gate.Allow:
		return true, "", nil
	case gate.Ask:
		if t.allowedEdit(abs) {
			return true, "", nil
		}
		ok, err := t.Ask(ctx, acp.ToolCallUpdate{ToolCallId: callID, Title: acp.Ptr(title), Kind: acp.Ptr(acp.ToolKindEdit),
			Locations: []acp.ToolCallLocation{{Path: abs}}})
		switch {
		case errors.Is(err, errTurnCancelled) || ctx.Err() != nil:
			return false, "", errTurnCancelled
		case err != nil:
			// No one to ask (a headless client that fails the request):
			// not allowed, and the turn says why rather than failing.
			return false, fmt.Sprintf("Writing %s needs your permission, and the editor answered the request with an error (%s).", rel, editorError(err)), nil
		case !ok:
			return false, fmt.Sprintf("Writing %s was rejected.", rel), nil
		}
		return true, "", nil
	}
	if r.Code == gate.CodeStoreError {
		return false, "", errors.New(r.Reason)
	}
	return false, fmt.Sprintf("The grant denies writing %s (%s): %s.", rel, r.Code, r.Reason), nil
}

// write puts every changed file in place: through the editor when it
// offers fs/write_text_file (so its buffers and undo follow), else on disk,
// each file staged next to its target and then renamed over it. Before
// anything is written, a file whose editor buffer is no longer the content
// the op was computed on (edited meanwhile) is refused, and so is writing
// an unsaved buffer's file on disk.
func (a *Agent) write(ctx context.Context, t *turn, prior, next core.Files, paths []string) error {
	caps := a.clientCaps()
	if caps.Fs.ReadTextFile {
		for _, p := range paths {
			old, ok := prior[p]
			if !ok {
				continue
			}
			abs := filepath.Join(t.s.cwd, filepath.FromSlash(p))
			r, err := a.connection().ReadTextFile(ctx, acp.ReadTextFileRequest{SessionId: t.s.id, Path: abs})
			if err != nil {
				return fmt.Errorf("the editor refused to let joule read %s again (%s); nothing was changed", p, editorError(err))
			}
			if r.Content != string(old) {
				return fmt.Errorf("%s changed in the editor while the request was worked on; ask again. Nothing was changed", p)
			}
		}
	}
	if !caps.Fs.WriteTextFile && caps.Fs.ReadTextFile {
		for _, p := range paths {
			if disk, err := os.ReadFile(filepath.Join(t.s.cwd, filepath.FromSlash(p))); err == nil && string(disk) != string(prior[p]) {
				return fmt.Errorf("%s has unsaved changes in the editor, which does not offer fs/write_text_file: save it and ask again. Nothing was changed", p)
			}
		}
	}
	if caps.Fs.WriteTextFile {
		for i, p := range paths {
			abs := filepath.Join(t.s.cwd, filepath.FromSlash(p))
			if _, err := a.connection().WriteTextFile(ctx, acp.WriteTextFileRequest{SessionId: t.s.id, Path: abs, Content: string(next[p])}); err != nil {
				if i == 0 {
					return fmt.Errorf("the editor refused to write %s (%s); nothing was changed", p, editorError(err))
				}
				return fmt.Errorf("the editor refused to write %s after %d other file(s) were written (%s)", p, i, editorError(err))
			}
		}
		return nil
	}
	return writeDisk(t.s.cwd, prior, next, paths)
}

// diskMu serialises disk writes in this process, so the check that each
// target still holds what the op was computed on, and the write, are one
// step for every session.
var diskMu sync.Mutex

func writeDisk(root string, prior, next core.Files, paths []string) error {
	diskMu.Lock()
	defer diskMu.Unlock()
	var todo []string
	for _, p := range paths {
		cur, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		if err == nil && string(cur) == string(next[p]) {
			// Already so: a remote agent's command wrote it (its turn's
			// disk changes are part of the op).
			continue
		}
		old, existed := prior[p]
		if present := err == nil; present != existed || string(cur) != string(old) {
			return fmt.Errorf("%s changed since the request was read; nothing was changed, ask again", p)
		}
		todo = append(todo, p)
	}
	paths = todo
	type staged struct{ tmp, dst string }
	var done []staged
	cleanup := func() {
		for _, s := range done {
			os.Remove(s.tmp)
		}
	}
	for _, p := range paths {
		dst := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			cleanup()
			return err
		}
		mode := os.FileMode(0o644)
		if fi, err := os.Stat(dst); err == nil {
			mode = fi.Mode().Perm()
		}
		f, err := os.CreateTemp(filepath.Dir(dst), ".joule-*")
		if err == nil {
			_, err = f.Write(next[p])
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = os.Chmod(f.Name(), mode)
			}
			done = append(done, staged{f.Name(), dst})
		}
		if err != nil {
			cleanup()
			return fmt.Errorf("staging %s: %v; nothing was changed", p, err)
		}
	}
	for i, s := range done {
		if err := os.Rename(s.tmp, s.dst); err != nil {
			cleanup()
			return fmt.Errorf("writing %s after %d file(s): %v", s.dst, i, err)
		}
	}
	return nil
}

// sealWork seals one efficiency/1 receipt of the cascade's own work in the
// session chain; the consultations were debited when the gate allowed them.
func (a *Agent) sealWork(ctx context.Context, t *turn, opID string, tier core.Tier, uj uint64, note string) (store.Entry, error) {
	session := string(t.s.id)
	w, extra := t.work(ctx, uj)
	note = oneLineMax(gate.Redact(note+extra), 1000) // the request is user text: no credentials in receipts
	g := a.opt.Gate
	var ids []string
	if chain, err := g.ActiveChainAt(ctx, session, t.s.cwd); err == nil {
		ids = chain.IDs()
	}
	if ids == nil {
		ids = []string{}
	}
	now := time.Now()
	unit := "coding-op"
	if opID == "" {
		unit = "answer"
	}
	return g.Store.Seal(ctx, store.SealRequest{Session: session, Build: func(pos store.Position, _ error) ([]byte, bool, error) {
		nonce, err := core.NewNonce()
		if err != nil {
			return nil, false, err
		}
		e := w
		e.Kind, e.Session, e.Sequence, e.Prev = receipts.KindEfficiency, pos.Session, pos.Seq, core.ID(pos.Prev)
		e.TimeMS, e.Unit, e.OpID, e.Tier, e.Provenance = uint64(now.UnixMilli()), unit, opID, tier, core.Estimator
		e.Coverage, e.Status, e.Note, e.Grants, e.Nonce, e.Steward = receipts.CoverageLocal, receipts.StatusComplete, note, ids, nonce, g.Sealer.Steward()
		payload, err := receipts.Encode(&e)
		if err != nil {
			return nil, false, err
		}
		env, err := g.Sealer.SealPayload(payload)
		return env, false, err
	}})
}

// sealOp seals the op's JCR-1 receipt (joule-code/1), numbered with its
// efficiency receipt's sequence, and keeps it in OpsDir as
// <session>-<sequence>.cbor.
func (a *Agent) sealOp(opID core.ID, tier core.Tier, uj uint64, e store.Entry) error {
	if a.opt.OpsDir == "" {
		return nil
	}
	env, err := a.opt.Gate.Sealer.Seal(&core.OpReceipt{OpID: opID.String(), Tier: tier, EstimatedUJ: uj, Provenance: core.Estimator, Sequence: e.Seq})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(a.opt.OpsDir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(a.opt.OpsDir, fmt.Sprintf("%s-%d.cbor", e.Session, e.Seq)), env, 0o600)
}

// cost answers /cost from the session's sealed receipts.
func (a *Agent) cost(ctx context.Context, t *turn) (acp.PromptResponse, error) {
	entries, err := a.opt.Gate.Store.Session(ctx, string(t.s.id))
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return acp.PromptResponse{}, acp.NewInternalError(map[string]any{"error": err.Error()})
	}
	var debited uint64
	ops, answers := map[core.Tier]int{}, 0
	for _, e := range entries {
		r, err := a.decode(e.Envelope)
		if err != nil {
			return acp.PromptResponse{}, acp.NewInternalError(map[string]any{"error": fmt.Sprintf("receipt %d: %v", e.Seq, err)})
		}
		switch {
		case r.Decision != nil:
			debited += r.Decision.DebitUJ
		case r.Efficiency != nil && r.Efficiency.OpID != "":
			ops[r.Efficiency.Tier]++
		case r.Efficiency != nil:
			answers++
		}
	}
	var by []string
	for _, tr := range []core.Tier{core.L0, core.L1, core.L2, core.L3, core.L4} {
		if ops[tr] > 0 {
			by = append(by, fmt.Sprintf("%s %d", tr, ops[tr]))
		}
	}
	if len(by) == 0 {
		by = []string{"none"}
	}
	t.say(ctx, fmt.Sprintf("Session %s: %d receipts; %s debited from the grant; ops closed by tier: %s; %d answers. Figures are Estimator (reference tier costs), local work only.",
		t.s.id, len(entries), grant.FormatEnergy(debited), strings.Join(by, ", "), answers))
	return endTurn()
}

func (a *Agent) decode(env []byte) (*receipts.Any, error) {
	s := a.opt.Gate.Sealer
	pub := a.opt.Key.Public().(ed25519.PublicKey)
	v, err := core.NewVerifier(s.Steward(), pub)
	if err != nil {
		return nil, err
	}
	return receipts.Open(v, s.Steward(), env)
}

// LoadSession implements acp.AgentLoader: the session's sealed history is
// replayed to the editor (each decision as a finished tool call, each unit
// of work as a message), then the session takes prompts again.
func (a *Agent) LoadSession(ctx context.Context, p acp.LoadSessionRequest) (acp.LoadSessionResponse, error) {
	cwd, err := checkCwd(p.Cwd)
	if err != nil {
		return acp.LoadSessionResponse{}, err
	}
	entries, err := a.opt.Gate.Store.Session(ctx, string(p.SessionId))
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return acp.LoadSessionResponse{}, acp.NewInternalError(map[string]any{"error": err.Error()})
	}
	if len(entries) == 0 && !a.issued(p.SessionId) {
		return acp.LoadSessionResponse{}, acp.NewInvalidParams(map[string]any{"sessionId": fmt.Sprintf("unknown session %q: this endpoint did not issue it and the store holds no receipts for it", p.SessionId)})
	}
	a.mu.Lock()
	if s, ok := a.sessions[p.SessionId]; ok && s.running {
		a.mu.Unlock()
		return acp.LoadSessionResponse{}, acp.NewInvalidRequest(map[string]any{"error": "the session has a prompt running"})
	}
	a.mu.Unlock()
	s := a.addSession(p.SessionId, cwd)
	t := &turn{a: a, s: s}
	for _, e := range entries {
		r, err := a.decode(e.Envelope)
		if err != nil {
			return acp.LoadSessionResponse{}, acp.NewInternalError(map[string]any{"error": fmt.Sprintf("receipt %d of the session does not verify: %v", e.Seq, err)})
		}
		h := core.ID(e.Hash).String()[:12]
		switch {
		case r.Decision != nil:
			d := r.Decision
			st := acp.ToolCallStatusCompleted
			if d.Decision == receipts.Deny {
				st = acp.ToolCallStatusFailed
			}
			_ = t.Update(ctx, acp.StartToolCall(acp.ToolCallId(fmt.Sprintf("receipt-%d", e.Seq)),
				fmt.Sprintf("%s %s: %s", d.Tool, d.Decision, d.Summary), acp.WithStartStatus(st), acp.WithStartKind(acp.ToolKindOther),
				acp.WithStartRawOutput(map[string]any{"code": d.Code, "reason": d.Reason, "debit_uj": d.DebitUJ, "receipt": h})))
		case r.Efficiency != nil:
			f := r.Efficiency
			_ = t.Update(ctx, acp.UpdateAgentMessageText(fmt.Sprintf("%s\n\n%s · %s · receipt %s#%d %s\n", f.Note, f.Tier, grant.FormatEnergy(f.EstimatedUJ), e.Session, e.Seq, h)))
		}
	}
	a.advertise(s.id)
	return acp.LoadSessionResponse{}, nil
}

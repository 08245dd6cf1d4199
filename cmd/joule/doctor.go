package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ollama/ollama/api"
	openai "github.com/sashabaranov/go-openai"
	"mvdan.cc/sh/v3/shell"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/grant"
	jhome "github.com/joulehook/joule/core/home"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/sandbox"
	storepkg "github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/energy"
	"github.com/joulehook/joule/energy/proxy"
	"github.com/joulehook/joule/plugins/hook"
	"github.com/joulehook/joule/plugins/hosts"
	"github.com/joulehook/joule/tiers/config"
	"github.com/joulehook/joule/tiers/l1/lsp"
	"github.com/joulehook/joule/tiers/l2"
	"github.com/joulehook/joule/tiers/l3"
	"github.com/joulehook/joule/tiers/tierconfig"
)

func init() {
	register(&command{name: "doctor", summary: "report whether each configured piece (store, key, grant, index, models, proxy, toolchain, energy counters) is reachable and working", run: runDoctor})
}

// finding is one line of the doctor's report.
type finding struct {
	Group  string `json:"group"` // installs, joule or optional
	Check  string `json:"check"`
	Status string `json:"status"` // ok, warn, fail, note (a limit of the set-up), or off (optional, not set up)
	Detail string `json:"detail"`
	Hint   string `json:"hint,omitempty"`
}

const (
	statusOK   = "ok"
	statusWarn = "warn"
	statusFail = "fail"
	// statusOff is an optional piece that is not set up: no fault, so a
	// hook set-up without it is all green.
	statusOff = "off"
	// statusNote is a limit of the chosen set-up the person should know,
	// not a fault in it: user mode's, which only system mode lifts.
	statusNote = "note"
)

// The doctor's groups, in the order it reports them: what joule is wired
// into first, then what every decision needs, then the pieces only joule
// acp's cascade and the meter use.
const (
	groupInstalls = "installs"
	groupJoule    = "joule"
	groupOptional = "optional"
)

// groupRank is a group's place in the report.
func groupRank(g string) int {
	return slices.Index([]string{groupInstalls, groupJoule, groupOptional}, g)
}

// groupTitles head each group in the text report.
var groupTitles = map[string]string{
	groupInstalls: "installs: the hosts joule is wired into ($JOULE_HOME/installs.json)",
	groupJoule:    "joule: the key, store, grant and containment every decision needs",
	groupOptional: "optional: joule acp's cascade (L2-L4, language servers), the meter and energy counters; hooks need none of them",
}

type doctor struct {
	left     *uint64 // what the active grant chain can still pay, when known
	findings []finding
	timeout  time.Duration
	hc       *http.Client
	group    string // the group add puts findings in
}

func (d *doctor) add(check, status, detail, hint string) {
	d.findings = append(d.findings, finding{Group: d.group, Check: check, Status: status, Detail: detail, Hint: hint})
}

func runDoctor(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "doctor", `doctor [--json] [--root DIR] [--timeout 5s] [--probe-counters]

Checks what joule needs, one line each with ok, warn, fail or off and a
hint, in three groups. First the installs $JOULE_HOME/installs.json
records: each armed (as joule install checks it: the host's files and
trust, joule serve for a resident install, the grant, containment), or
what is left to do and the command that does it. Then what every
decision needs: the key and store, the configuration (config.json,
meter.json), the active grant and its budget, the witness, the resident
gate, and what the kernel gives a contained command (Landlock, user
namespaces). Last, apart, the optional pieces, "off" when not set up:
the L2 index of the workspace (DIR, default the current directory) and
its embedding model, the L3 model, the L4 command, joule proxy, go and
gopls, the language servers L1 drives (typescript-language-server,
pyright-langserver, on PATH or in $JOULE_LSP_PATH), and the energy
counters. Exits 1 when any check fails. See docs/models.md.`)
	asJSON := fs.Bool("json", false, "print the findings as a JSON array")
	root := fs.String("root", ".", "the workspace whose L2 index to check")
	timeout := fs.Duration("timeout", 5*time.Second, "longest wait for each server")
	probe := fs.Bool("probe-counters", false, "prove each energy counter live under load (takes a few seconds)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	d := &doctor{timeout: *timeout, hc: &http.Client{Timeout: *timeout}}
	d.run(ctx, *root, *probe)
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(d.findings); err != nil {
			return err
		}
	} else {
		group := ""
		for _, f := range d.findings {
			if f.Group != group {
				if group != "" {
					fmt.Fprintln(e.stdout)
				}
				group = f.Group
				fmt.Fprintln(e.stdout, groupTitles[group])
			}
			line := fmt.Sprintf("%-4s  %-10s  %s", f.Status, f.Check, f.Detail)
			if f.Hint != "" && f.Status != statusOK {
				line += "\n                  hint: " + f.Hint
			}
			fmt.Fprintln(e.stdout, line)
		}
	}
	for _, f := range d.findings {
		if f.Status == statusFail {
			return &exitError{1}
		}
	}
	return nil
}

func (d *doctor) run(ctx context.Context, root string, probe bool) {
	// Reported in the groups' order whatever the order of the checks:
	// the mode decides which home the rest reads, so it runs first.
	defer func() {
		slices.SortStableFunc(d.findings, func(a, b finding) int {
			return groupRank(a.Group) - groupRank(b.Group)
		})
	}()
	d.group = groupJoule
	if !d.mode() {
		return
	}
	home, err := identity.Home()
	if err != nil {
		d.add("home", statusFail, err.Error(), "set JOULE_HOME or HOME")
		return
	}
	d.group = groupInstalls
	contained := d.installs(ctx, home)
	d.group = groupJoule
	if _, err := identity.Load(home); err != nil {
		d.add("key", statusFail, fmt.Sprintf("no endpoint key in %s: %v", home, err), "run 'joule init' (or 'joule keygen')")
		return
	}
	d.add("key", statusOK, "endpoint key in "+home, "")
	cfg, err := config.Load(home)
	if err != nil {
		d.add("config", statusFail, err.Error(), "fix "+filepath.Join(home, ConfigFile)+" (docs/models.md)")
		return
	}
	tc, err := tierconfig.Parse(cfg.Tiers)
	if err != nil {
		d.add("config", statusFail, fmt.Sprintf("%s: %v", filepath.Join(home, ConfigFile), err), "see docs/models.md for the tiers section")
		return
	}
	m, err := config.LoadMeter(home)
	if err != nil {
		d.add("config", statusFail, err.Error(), "see docs/meter.md")
		return
	}
	d.add("config", statusOK, configLine(home, tc), "")
	if loc, err := config.StoreLocation(home, cfg); err == nil {
		d.files(home, loc)
	}
	ep, err := openEndpoint()
	if err != nil {
		d.add("store", statusFail, err.Error(), "check the store setting in config.json and that $JOULE_HOME is writable")
	} else {
		defer ep.Close()
		d.add("store", statusOK, "the store opens", "")
		d.trust(ctx, ep)
		d.grant(ctx, ep)
		d.witness(ctx, ep)
	}
	if ok, text := gateState(); ok {
		d.add("gate", statusOK, "resident gate runs: "+strings.Join(strings.Fields(text), " "), "")
	} else {
		// Not a fault: joule-hook starts it on the first hook call, and
		// it exits when idle.
		d.add("gate", statusOK, text, "")
	}
	d.sandbox(home, cfg, contained)
	d.group = groupOptional
	d.index(ctx, home, root, tc)
	d.l3(ctx, home, tc, m.Table)
	d.l4(tc)
	d.proxy(home)
	d.tools(tc)
	d.servers(home)
	d.counters(ctx, probe)
}

// installs reports, first, each install $JOULE_HOME records: armed, as
// joule install checks it (the host's files, the trust steps, how hooks
// are answered, the grant, containment), or each thing left to do, with
// the command that does it. It says whether any install contains.
func (d *doctor) installs(ctx context.Context, home string) (contained bool) {
	recs, err := hook.LoadRecords(home)
	if err != nil {
		d.add("install", statusWarn, err.Error(), "the record of installs only lists them: fix or remove it, then run joule install again")
	}
	if err == nil && len(recs) == 0 {
		d.add("install", statusWarn, "joule is wired into no host yet, so no agent's tool call reaches the gate", "in your project: joule install claude-code --project (hosts: "+installerNames()+")")
	}
	serveAddr := ""
	if cfg, err := config.LoadServe(home); err == nil {
		serveAddr = cfg.Addr
	}
	for _, r := range recs {
		where := r.Host + " " + scopeArgs(r)
		again := installAgain(r)
		h, ok := hosts.Lookup(r.Host)
		if !ok || h.Installer == nil {
			d.add("install", statusWarn, where+": joule knows no such host", "joule install "+r.Host+" "+scopeArgs(r)+" --uninstall")
			continue
		}
		if r.Project != "" {
			if _, err := os.Stat(r.Project); err != nil {
				d.add("install", statusWarn, where+": the project is gone", "forget it: joule install "+r.Host+" "+scopeArgs(r)+" --uninstall")
				continue
			}
		}
		s, err := recordScope(r, home)
		if err != nil {
			d.add("install", statusFail, where+": "+err.Error(), again)
			continue
		}
		findings, c := armedFindings(ctx, h, s, home)
		todo := 0
		for _, f := range findings {
			switch {
			case !f.OK:
				todo++
				d.add("install", statusFail, where+" is not armed: "+f.Text, "then joule doctor; to write its files again: "+again+"; to remove the install: joule install "+r.Host+" "+scopeArgs(r)+" --uninstall")
			case f.Weak && c.mode == hook.NoContain:
				d.add("install", statusWarn, where+": "+f.Text, "to contain them: "+again)
			case f.Weak && c.mode == hook.Contained:
				d.add("install", statusWarn, where+": "+f.Text, "the sandbox line below says what this kernel lacks")
			}
		}
		if s.Resident != nil && serveAddr == proxy.DefaultListen {
			d.add("install", statusWarn, where+": joule serve listens on "+serveAddr+", joule proxy's default port, so the second of them to start fails",
				"move the resident gate to its own port: "+again+" --addr "+config.DefaultServeAddr+"; then restart joule serve")
		}
		if r.Contain == "" && hosts.Contained(h) {
			d.add("install", statusWarn, where+": installed before containment was the default, so its shell commands may run uncontained", "to contain them: "+again)
		}
		if c.mode == hook.Contained {
			contained = true
		}
		if todo == 0 {
			d.add("install", statusOK, where+": "+c.armed(r.Host), "")
		}
	}
	return contained
}

// recordScope is the scope of the install r records, as this joule would
// install it again: its project, containment, trust steps and, for a
// resident install, joule serve's address and token.
func recordScope(r hook.Record, home string) (hook.Scope, error) {
	self, err := os.Executable()
	if err != nil {
		return hook.Scope{}, err
	}
	if p, err := filepath.EvalSymlinks(self); err == nil {
		self = p
	}
	userHome, err := os.UserHomeDir()
	if err != nil {
		return hook.Scope{}, err
	}
	s := hook.Scope{Project: r.Project, Home: userHome, Joule: self, Client: hookClient(self), Contain: r.Contain, Trust: r.Trusted}
	if s.JouleHome, err = customHome(); err != nil {
		return s, err
	}
	if residentRecord(r) {
		cfg, err := config.LoadServe(home)
		if err != nil {
			return s, fmt.Errorf("a resident install without joule serve's %s: %v", config.ServeFile, err)
		}
		s.Resident = &hook.Resident{URL: "http://" + cfg.Addr + hook.ResidentPath(r.Host, r.Contain), Token: cfg.Token}
	}
	return s, nil
}

// sandbox reports what this machine's kernel gives a contained command:
// Landlock and the user namespaces joule-exec builds its mounts in; with
// none, a contained install (contained) denies every shell command.
func (d *doctor) sandbox(home string, cfg *config.Config, contained bool) {
	abi, namespaces := sandboxState()
	switch {
	case abi == 0:
		st, what := statusWarn, "contained hooks deny every shell command (no-containment)"
		if cfg.ExecFallback == "unconfined" {
			what = "contained hooks run shell commands on analysis alone (exec_fallback is \"unconfined\"), and each receipt says so"
		} else if contained {
			st = statusFail
		}
		d.add("sandbox", st, sandbox.ErrUnavailable.Error()+": "+what,
			"run joule on a kernel with Landlock (Linux 5.13 or later, landlock in the lsm= boot list); until then set \"exec_fallback\": \"unconfined\" in "+filepath.Join(home, ConfigFile)+", or run each install above again with --no-contain")
	case !namespaces:
		d.add("sandbox", statusWarn, fmt.Sprintf("Landlock ABI %d without user namespaces: %s, which leaves open: %s", abi, gate.LandlockOnlyWarning, strings.Join(sandbox.LandlockOnlyGaps(), "; ")),
			"unset "+sandbox.LandlockOnlyEnv+", or let unprivileged users create user namespaces (sysctl user.max_user_namespaces > 0, kernel.unprivileged_userns_clone=1, kernel.apparmor_restrict_unprivileged_userns=0)")
	default:
		d.add("sandbox", statusOK, fmt.Sprintf("Landlock ABI %d and user namespaces: a contained command gets joule-exec's whole confinement", abi), "")
	}
}

// files flags a home, store or key that other users can write (fail) or
// read (warn): the store and the key must be the user's alone (0600 in a
// 0700 directory), and the hint is the chmod that makes them so.
func (d *doctor) files(home, store string) {
	dirs := []string{home}
	files := []string{filepath.Join(home, identity.KeyFile)}
	if !storepkg.IsURL(store) {
		files = append(files, store, store+"-wal", store+"-shm")
		if dir := filepath.Dir(store); dir != home {
			dirs = append(dirs, dir)
		}
	}
	var writable, readable, loose []string
	check := func(path string, want os.FileMode) {
		fi, err := os.Stat(path)
		if err != nil {
			return // absent: nothing to expose
		}
		mode := fi.Mode().Perm()
		switch {
		case mode&0o022 != 0:
			writable = append(writable, fmt.Sprintf("%s is mode %04o", path, mode))
		case mode&^want != 0:
			readable = append(readable, fmt.Sprintf("%s is mode %04o", path, mode))
		default:
			return
		}
		fix := fmt.Sprintf("chmod %o %s", want, hook.ShellQuote(path))
		if strings.HasSuffix(path, "-wal") || strings.HasSuffix(path, "-shm") {
			// SQLite removes them when the last connection closes
			// (this doctor's own, say) and recreates them with the
			// store's mode.
			fix = fmt.Sprintf("{ [ ! -e %s ] || %s; }", hook.ShellQuote(path), fix)
		}
		loose = append(loose, fix)
	}
	for _, dir := range dirs {
		check(dir, 0o700)
	}
	for _, f := range files {
		check(f, 0o600)
	}
	hint := strings.Join(loose, " && ")
	switch {
	case len(writable) > 0:
		d.add("files", statusFail, "other users can write the store, key or home: "+strings.Join(append(writable, readable...), "; "), hint)
	case len(readable) > 0:
		d.add("files", statusWarn, "other users can read the store, key or home: "+strings.Join(readable, "; "), hint)
	default:
		d.add("files", statusOK, "home 0700, store and key 0600: the user's alone", "")
	}
}

// configLine says which configuration files there are and what they turn
// on: a file that does not exist is reported as such, not as parsing, and
// the tiers not running here are named beside the ones that are (a grant
// may allow l0–l4 while this endpoint runs only l0–l2).
func configLine(home string, tc *tierconfig.Tiers) string {
	var files []string
	for _, f := range []struct{ name, none string }{{ConfigFile, "defaults"}, {MeterFile, "default coefficients"}} {
		if _, err := os.Stat(filepath.Join(home, f.name)); err == nil {
			files = append(files, f.name+" parses")
		} else {
			files = append(files, "no "+f.name+" ("+f.none+")")
		}
	}
	on := tc.EnabledNames()
	line := strings.Join(files, ", ") + "; tiers running here: " + strings.Join(on, " ")
	var off []string
	for _, t := range tierconfig.Names {
		if !slices.Contains(on, t) {
			off = append(off, t)
		}
	}
	if len(off) > 0 {
		line += " (" + strings.Join(off, " ") + " not configured: docs/models.md)"
	}
	return line
}

// trust reports whether the issuers file, config.json and the store are
// what the home's signed history says, and what user mode leaves open.
func (d *doctor) trust(ctx context.Context, ep *endpoint) {
	g, err := ep.gate()
	if err != nil {
		d.add("trust", statusFail, err.Error(), "")
		return
	}
	if _, err := g.HomeState(ctx); err != nil {
		d.add("trust", statusFail, gate.ChainError(err).Error(), "'joule trust' shows what differs")
		return
	}
	if _, err := g.TrustState(ctx); err != nil {
		d.add("trust", statusFail, gate.ChainError(err).Error(), "'joule store check' names what is wrong")
		return
	}
	d.add("trust", statusOK, "the issuers file, config.json and the grants' trust chain are the signed ones (user mode: the key is this user's, so code running as this user outside containment can still run joule or sign with it; that leaves receipts, which a witness elsewhere keeps out of its reach: docs/receipts.md, \"Threat model\")", "")
}

func (d *doctor) grant(ctx context.Context, ep *endpoint) {
	g, err := ep.gate()
	if err != nil {
		d.add("grant", statusFail, err.Error(), "")
		return
	}
	wd, _ := os.Getwd() // the grant of the workspace doctor runs in
	chain, err := g.ActiveChainAt(ctx, "", wd)
	if err != nil {
		d.add("grant", statusFail, gate.ChainError(err).Error(), "run 'joule init' or 'joule grant use ID'")
		return
	}
	if err := chain.Check("", time.Now()); err != nil {
		hint := "issue a new one with 'joule grant issue --template dev --use'"
		if errors.Is(err, grant.ErrExpired) {
			hint = "run 'joule grant renew active'"
		}
		d.add("grant", statusFail, fmt.Sprintf("the active grant %s is not in force: %v", chain.Leaf().ID, err), hint)
		return
	}
	var left uint64 = 1<<64 - 1
	for _, id := range chain.IDs() {
		rec, err := ep.store.Grant(ctx, id)
		if err != nil {
			d.add("grant", statusFail, fmt.Sprintf("grant %s: %v", id, err), "")
			return
		}
		left = min(left, rec.RemainingUJ())
	}
	d.left = &left
	leaf := chain.Leaf()
	detail := fmt.Sprintf("active grant %s valid until %s; %s left", leaf.ID, time.Unix(leaf.Grant.NotAfter, 0).UTC().Format(time.RFC3339), grant.FormatEnergy(left))
	if left < 10_000_000 { // less than one L4 consultation
		d.add("grant", statusWarn, detail, "the budget is nearly spent: issue a larger grant")
		return
	}
	d.add("grant", statusOK, detail, "")
}

// witness reports the witnesses elsewhere: each asked to cosign the log
// as it is now. One that fails is a failure when a quorum is required
// (every action is denied until it cosigns), else a warning.
func (d *doctor) witness(ctx context.Context, ep *endpoint) {
	w := ep.store.Witness()
	if w == nil || len(w.Cosigners) == 0 {
		d.add("witness", statusOK, "the witness is a file in "+filepath.Join(ep.home, WitnessDir)+" only: it catches a rolled-back store, not a rollback of the whole home", "")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	err := ep.store.Cosign(ctx)
	var qe *storepkg.QuorumError
	if err != nil && !errors.As(err, &qe) {
		d.add("witness", statusFail, err.Error(), "'joule store check' says what the witness files hold")
		return
	}
	size, _ := ep.store.LogSize(ctx)
	bad := map[string]error{}
	if qe != nil {
		for _, f := range qe.Failures {
			var ce *storepkg.CosignerError
			if errors.As(f, &ce) {
				bad[ce.Witness] = ce.Err
			}
		}
	}
	for _, c := range w.Cosigners {
		name := c.Verifier().Name()
		err, failed := bad[name]
		switch {
		case !failed:
			d.add("witness", statusOK, fmt.Sprintf("%s cosigned the log as it is now (size %d)", name, size), "")
		case errors.Is(err, storepkg.ErrRolledBack):
			d.add("witness", statusFail, fmt.Sprintf("%s: %v", name, err), "restore the lost receipts ('joule store restore FILE'); 'joule witness status' shows what each witness cosigned")
		case w.Quorum > 0:
			d.add("witness", statusFail, fmt.Sprintf("%s: %v", name, err), "start the witness or fix config.json's witness.witnesses; then 'joule witness sync'")
		default:
			d.add("witness", statusWarn, fmt.Sprintf("%s: %v; decisions go on (witness.quorum is 0), but what it has not cosigned is not protected against a rollback of the whole home", name, err), "start the witness, then 'joule witness sync'")
		}
	}
	if qe != nil && !qe.Met() {
		d.add("witness", statusFail, fmt.Sprintf("%d of %d witnesses cosigned, %d required: every action is denied until the quorum cosigns", qe.Got, qe.Of, qe.Need), "'joule witness status'")
	}
}

func (d *doctor) index(ctx context.Context, home, root string, tc *tierconfig.Tiers) {
	if !tc.Enabled("l2") {
		d.add("l2", statusOff, "off in the tiers config", "set tiers.l2 in "+ConfigFile+" (docs/retrieval.md)")
		return
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		d.add("l2 index", statusFail, err.Error(), "")
		return
	}
	path := l2.DefaultPath(home, abs) // where joule acp and joule index keep it
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		d.add("l2 index", statusOff, "no index of "+abs+" yet", "it is built on the first prompt 'joule acp' puts to L2")
	} else if ix, err := l2.Open(path, abs); err != nil {
		d.add("l2 index", statusFail, fmt.Sprintf("%s: %v", path, err), "delete the file: the index is a cache and is rebuilt")
	} else {
		st, err := ix.Status(ctx)
		ix.Close()
		switch {
		case err != nil:
			d.add("l2 index", statusFail, err.Error(), "delete "+path+": the index is a cache and is rebuilt")
		default:
			newer := newestChange(abs, st.Updated)
			detail := fmt.Sprintf("%s: %d files, %d chunks, %d embedded, updated %s", abs, st.Files, st.Chunks, st.Vectors, st.Updated.UTC().Format(time.RFC3339))
			if newer != "" {
				d.add("l2 index", statusWarn, detail+"; "+newer+" changed since", "it is brought up to date on the next prompt L2 sees")
			} else {
				d.add("l2 index", statusOK, detail+"; fresh", "")
			}
		}
	}
	e := tc.L2.Embedder
	if e == nil {
		d.add("embedder", statusOff, "none configured: L2 is "+l2.LexicalOnly, "set tiers.l2.embedder (e.g. ollama, nomic-embed-text)")
		return
	}
	rt := tierconfig.RouteOf(home, *e)
	if e.Provider == "ollama" && !d.ollamaModel(ctx, "embedder", rt, e.Model, "embedding") {
		return
	}
	emb, _, err := tc.Embedder(home)
	if err != nil {
		d.add("embedder", statusFail, err.Error(), "export the variable named by tiers.l2.embedder.api_key_env")
		return
	}
	// The dimension comes from a real embedding, as the index will get it.
	cctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	vs, err := emb.Embed(cctx, []string{"joule doctor"})
	if err != nil {
		d.add("embedder", statusFail, fmt.Sprintf("%s at %s does not embed: %v", e.Model, rt.BaseURL, err), "start the embedding server and check tiers.l2.embedder")
		return
	}
	d.add("embedder", statusOK, fmt.Sprintf("%s at %s embeds (%d dimensions), %s", e.Model, rt.BaseURL, len(vs[0]), rt.Note), "")
}

// newestChange names a file under root modified after t, if any.
func newestChange(root string, t time.Time) string {
	var found string
	errStop := errors.New("stop")
	filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if de.IsDir() {
			if n := de.Name(); p != root && (strings.HasPrefix(n, ".") || n == "node_modules" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if fi, err := de.Info(); err == nil && fi.ModTime().After(t) {
			found, _ = filepath.Rel(root, p)
			return errStop
		}
		return nil
	})
	return found
}

// ollamaModel checks that the Ollama server answers, has model, and that
// the model can do what the tier asks of it (capability: "completion" for
// L3, "embedding" for L2's embedder). It adds a failure and reports false
// when not; for L3 it also adds the ok line.
func (d *doctor) ollamaModel(ctx context.Context, check string, rt tierconfig.Route, model, capability string) bool {
	u, err := url.Parse(rt.BaseURL)
	if err != nil {
		d.add(check, statusFail, err.Error(), "")
		return false
	}
	cctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	c := api.NewClient(u, d.hc)
	list, err := c.List(cctx)
	if err != nil && cctx.Err() == context.DeadlineExceeded {
		d.add(check, statusFail, fmt.Sprintf("Ollama at %s accepts connections but did not answer within %s", rt.BaseURL, d.timeout), "restart it, or check that base_url names an Ollama server")
		return false
	}
	if err != nil {
		d.add(check, statusFail, fmt.Sprintf("Ollama at %s is not reachable: %v", rt.BaseURL, err), "start it ('ollama serve') or fix base_url")
		return false
	}
	var names []string
	for _, m := range list.Models {
		names = append(names, m.Name, m.Model)
	}
	if !slices.Contains(names, model) && !slices.Contains(names, model+":latest") {
		d.add(check, statusFail, fmt.Sprintf("Ollama at %s does not have %s", rt.BaseURL, model), "run 'ollama pull "+model+"'")
		return false
	}
	show, err := c.Show(cctx, &api.ShowRequest{Model: model})
	if err != nil {
		d.add(check, statusFail, fmt.Sprintf("Ollama at %s cannot describe %s: %v", rt.BaseURL, model, err), "check the model with 'ollama show "+model+"'")
		return false
	}
	var caps []string
	for _, c := range show.Capabilities {
		caps = append(caps, string(c))
	}
	// A server too old to list capabilities is given the benefit of the doubt.
	if len(caps) > 0 && !slices.Contains(caps, capability) {
		what := map[string]string{"completion": "a chat model", "embedding": "an embedding model"}[capability]
		d.add(check, statusFail, fmt.Sprintf("%s at %s is not %s (its capabilities: %s)", model, rt.BaseURL, what, strings.Join(caps, ", ")),
			"name "+what+" here ('ollama show MODEL' lists a model's capabilities)")
		return false
	}
	if check != "embedder" {
		d.add(check, statusOK, fmt.Sprintf("%s present at %s, %s", model, rt.BaseURL, rt.Note), "")
	}
	return true
}

func (d *doctor) l3(ctx context.Context, home string, tc *tierconfig.Tiers, table *energy.Table) {
	if !tc.Enabled("l3") {
		d.add("l3", statusOff, "no tiers.l3 model configured", "for a local model, set tiers.l3 in "+ConfigFile+" (docs/models.md)")
		return
	}
	e := tc.L3.Endpoint
	rt := tierconfig.RouteOf(home, e)
	if e.Provider == "ollama" {
		d.ollamaModel(ctx, "l3 model", rt, e.Model, "completion")
	} else {
		key, err := e.APIKey()
		if err != nil {
			d.add("l3 model", statusFail, err.Error(), "export the variable named by tiers.l3.api_key_env")
		} else {
			cfg := openai.DefaultConfig(key)
			cfg.BaseURL, cfg.HTTPClient = strings.TrimRight(rt.BaseURL, "/"), d.hc
			cctx, cancel := context.WithTimeout(ctx, d.timeout)
			list, err := openai.NewClientWithConfig(cfg).ListModels(cctx)
			cancel()
			switch {
			case err != nil:
				d.add("l3 model", statusFail, fmt.Sprintf("the server at %s is not reachable: %v", rt.BaseURL, err), "start it (e.g. 'vllm serve MODEL') or fix tiers.l3.base_url")
			case !slices.ContainsFunc(list.Models, func(m openai.Model) bool { return m.ID == e.Model }):
				d.add("l3 model", statusFail, fmt.Sprintf("the server at %s does not serve %s", rt.BaseURL, e.Model), "check tiers.l3.model against GET /v1/models")
			default:
				d.add("l3 model", statusOK, fmt.Sprintf("%s served at %s, %s", e.Model, rt.BaseURL, rt.Note), "")
			}
		}
	}
	maxOut := uint64(tc.L3.MaxOutput)
	if maxOut == 0 {
		maxOut = table.MaxOutput(e.Model)
	}
	// A direct call reserves its prompt (up to max_context bytes, at most
	// a token a byte) plus its output cap.
	maxCtx := tc.L3.MaxContext
	if maxCtx == 0 {
		maxCtx = 64 << 10
	}
	worst := table.Energy(e.Model, energy.Usage{Input: l3.TokensAtMost(maxCtx) + 2048, Output: maxOut}).UJ
	if d.left != nil && !rt.Metered && *d.left < worst {
		d.add("l3 budget", statusWarn, fmt.Sprintf("one L3 call may reserve up to %s; the active grant has %s left", grant.FormatEnergy(worst), grant.FormatEnergy(*d.left)),
			"issue a larger grant, or lower tiers.l3.max_output")
	}
	_, _, prov, basis := table.RatesFor(e.Model)
	if prov == "ModelBased" {
		d.add("l3 energy", statusOK, fmt.Sprintf("%s is calibrated (%s): receipts are ModelBased", e.Model, basis), "")
	} else {
		d.add("l3 energy", statusWarn, fmt.Sprintf("no calibration for %s: receipts are Estimator (%s)", e.Model, basis), "add a calibration to meter.json (docs/models.md)")
	}
	if len(tc.L3.Check) > 0 {
		if _, err := exec.LookPath(tc.L3.Check[0]); err != nil {
			d.add("l3 check", statusFail, fmt.Sprintf("check command %q is not on PATH", tc.L3.Check[0]), "fix tiers.l3.check")
		} else {
			d.add("l3 check", statusOK, "check command: "+strings.Join(tc.L3.Check, " "), "")
		}
	}
}

func (d *doctor) l4(tc *tierconfig.Tiers) {
	cmd := os.Getenv("JOULE_ACP_REMOTE")
	if cmd == "" && tc.Enabled("l4") {
		cmd = tc.L4.Command
	}
	if cmd == "" {
		d.add("l4", statusOff, "no remote agent configured", "set tiers.l4.command in "+ConfigFile+", or give joule acp --remote CMD (docs/acp.md)")
		return
	}
	argv, err := shell.Fields(cmd, func(string) string { return "" })
	if err != nil || len(argv) == 0 {
		d.add("l4", statusFail, fmt.Sprintf("%q is not a command line", cmd), "fix tiers.l4.command")
		return
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		d.add("l4", statusFail, fmt.Sprintf("%s is not on PATH", argv[0]), "install the remote agent or fix tiers.l4.command")
		return
	}
	d.add("l4", statusOK, "remote agent: "+cmd, "")
}

func (d *doctor) proxy(home string) {
	a, err := proxy.Discover(home)
	switch {
	case err != nil:
		d.add("proxy", statusWarn, err.Error(), "delete the file; a running proxy rewrites it")
	case a == nil:
		d.add("proxy", statusOff, "joule proxy is not running: the model's own tokens are not metered (local tiers seal their calls themselves)", "run 'joule proxy' to meter and refuse model calls at the grant (docs/meter.md)")
	default:
		c, err := net.DialTimeout("tcp", a.Addr, d.timeout)
		if err != nil {
			d.add("proxy", statusFail, fmt.Sprintf("joule proxy (pid %d) announced %s but does not accept connections: %v", a.PID, a.Addr, err), "restart 'joule proxy'")
			return
		}
		c.Close()
		d.add("proxy", statusOK, fmt.Sprintf("joule proxy running at %s (pid %d)", a.Addr, a.PID), "")
	}
}

func (d *doctor) tools(tc *tierconfig.Tiers) {
	if p, err := exec.LookPath("go"); err != nil {
		st := statusOff
		if tc.Enabled("l3") {
			st = statusFail // L3 validates Go edits with the toolchain
		}
		d.add("go", st, "go is not on PATH", "install Go: L3 builds and vets Go edits with it, L1 uses it for renames")
	} else if why := d.runs(p, "version"); why != "" {
		st := statusWarn
		if tc.Enabled("l3") {
			st = statusFail
		}
		d.add("go", st, p+" is on PATH but does not run ("+why+")", "reinstall Go, or put a working go first on PATH")
	} else {
		d.add("go", statusOK, p, "")
	}
	if p, err := lsp.Look(lsp.Gopls.Name); err != nil {
		d.add("gopls", statusOff, "gopls is not on PATH or in GOBIN/GOPATH/bin: L1 leaves extract function/variable and inline call to the next tier (its own type-checked rename needs no gopls)", "go install golang.org/x/tools/gopls@"+lsp.GoplsVersion)
	} else if why := d.runs(p, "version"); why != "" {
		d.add("gopls", statusWarn, p+" is there but does not run ("+why+"): L1 cannot extract function/variable or inline calls", "go install golang.org/x/tools/gopls@"+lsp.GoplsVersion)
	} else {
		d.add("gopls", statusOK, p+" (extract function/variable, inline call)", "")
	}
	for _, f := range lsp.Discover() {
		switch {
		case f.Path == "":
			d.add(f.Name, statusOff, f.Name+" is not on PATH or in $"+lsp.PathEnv+": L1 leaves "+f.Language+" renames and organize imports to the next tier", "npm install -g "+lsp.Package[f.Name])
		case f.CheckerPath == "":
			d.add(f.Name, statusWarn, f.Path+", but "+f.Checker+" is not: L1 cannot type-check "+f.Language+" edits, so it refuses them", "npm install -g "+lsp.Package[f.Checker])
		default:
			d.add(f.Name, statusOK, f.Path+" (type-checked with "+f.CheckerPath+")", "")
		}
	}
}

// runs says why bin ARGS fails ("" when it runs): a tool on PATH is not
// reported working until it has run (a rustup or asdf shim with no
// toolchain behind it, a broken install).
func (d *doctor) runs(bin string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), d.timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err == nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if line == "" {
		return err.Error()
	}
	return line
}

// servers shows the language servers joule's processes keep resident.
func (d *doctor) servers(home string) {
	run := lsp.ReadState(lsp.StateDir(home))
	if len(run) == 0 {
		d.add("lsp pool", statusOK, fmt.Sprintf("no language server running (L1 starts one per workspace on its first request, keeps at most %d, each until %s idle)", lsp.DefaultMax, lsp.DefaultIdle), "")
		return
	}
	for _, r := range run {
		state := "idle " + time.Since(r.LastUsed).Round(time.Second).String()
		if r.Busy || r.LastUsed.IsZero() {
			state = "busy"
		}
		d.add("lsp pool", statusOK, fmt.Sprintf("%s pid %d in %s, up %s, %s", r.Server, r.PID, r.Root, time.Since(r.Started).Round(time.Second), state), "")
	}
}

func (d *doctor) counters(ctx context.Context, probe bool) {
	cs, err := energy.Discover()
	if len(cs) == 0 {
		why := "none found"
		if err != nil {
			why = err.Error()
		}
		d.add("counters", statusOff, "no hardware energy counter ("+strings.ReplaceAll(why, "\n", "; ")+"): figures are Estimator or ModelBased", "RAPL needs read access to /sys/class/powercap; NVML needs an NVIDIA driver")
		return
	}
	var names []string
	for _, c := range cs {
		names = append(names, c.Name())
	}
	if !probe {
		d.add("counters", statusOK, "found "+strings.Join(names, ", ")+" (not probed; --probe-counters proves them live)", "")
		return
	}
	m := energy.NewMeter(ctx, cs, nil, energy.ProbeOptions{Idle: 500 * time.Millisecond, Load: time.Second})
	for _, lv := range m.Evidence() {
		if lv.Live {
			d.add("counter", statusOK, fmt.Sprintf("%s live: %s", lv.Counter, lv.Reason), "")
		} else {
			d.add("counter", statusWarn, fmt.Sprintf("%s not live: %s", lv.Counter, lv.Reason), "receipts fall back to Estimator")
		}
	}
}

// userModeGaps is what user mode leaves open, said plainly by joule doctor
// and docs/receipts.md ("User mode and system mode"), with what stops it.
const userModeGaps = "user mode: the key, the store and the witness are files of yours, so a process running as you that joule does not gate " +
	"(a command run with --no-contain or without Landlock, a tool of a host that is not hooked, anything you started) can put its own " +
	"server on the gate's socket and answer allow, read the key and sign receipts and grants as joule, rewrite the witness with the store, " +
	"or delete $JOULE_HOME and start over with joule init: the checks detect edits, not a home replaced whole " +
	"(a witness file re-signed with the key and the store with it, or a whole home put back, is seen only by a witness elsewhere with a quorum, witness.quorum). " +
	"System mode (sudo joule install --system) stops each: the gate runs as a system user whose files you cannot open, " +
	"the hooks refuse any other peer, and only root or the admin group changes grants"

// mode reports user or system mode; in system mode, whether the system
// gate answers as the system user. It returns false when the rest of the
// report cannot be made here (system mode, run by a person, who cannot
// open the system home).
func (d *doctor) mode() bool {
	sys, err := jhome.LoadSystem("")
	switch {
	case errors.Is(err, jhome.ErrNoSystem):
		d.add("mode", statusNote, userModeGaps, "on a machine you manage: sudo joule install --system HOST... (docs/receipts.md, System mode)")
		return true
	case err != nil:
		d.add("mode", statusFail, err.Error(), "the system configuration must be root's, in root's directories: run sudo joule install --system again")
		return false
	}
	if ok, text := systemGateState(sys); ok {
		d.add("mode", statusOK, fmt.Sprintf("system mode: the gate runs as %s (uid %d), checked by its peer credentials on %s; the key, store and witness are in %s, %s's alone; grants change only with root or the %s group",
			sys.User, sys.UID, sys.Socket(), sys.Home, sys.User, sys.AdminGroup), "")
	} else {
		d.add("mode", statusFail, "system mode, but "+text, "sudo systemctl start joule-gate, or: sudo runuser -u "+sys.User+" -- "+filepath.Join(sys.Bin, "joule")+" gate serve --system")
	}
	if os.Geteuid() != sys.UID {
		// Not even root goes on here: opening the store as root would
		// leave files in the system home its user cannot write.
		d.add("home", statusOK, "the system home "+sys.Home+" is "+sys.User+"'s alone, by design: the rest of this report is made as that user", "sudo -u "+sys.User+" "+filepath.Join(sys.Bin, "joule")+" doctor")
		return false
	}
	os.Setenv("JOULE_HOME", sys.Home)
	os.Unsetenv(StoreEnv)
	return true
}

// Package trust derives an endpoint's trust state from the signed receipts
// that changed it. Two chains hold it:
//
//   - GrantsSession ("joule-grants"): which grants were issued, which were
//     revoked and which is active: for every session (the default), for
//     one session, or for one workspace root (the actions whose working
//     directory is inside it). On a
//     team's shared store every machine reads the same chain.
//   - a home's own session (HomeSession, "joule-home:NAME+HASH" of its
//     key): which trusted issuers and which trust-relevant configuration
//     the home runs with, as digests of its issuers file and config.json.
//
// Every change of trust state is a receipt sealed into one of them before
// it takes effect, so the state a decision reads is what signatures say and
// nothing else: a revoked flag, an active-grant setting, a grant row or a
// file changed without a receipt changes no decision, and a receipt taken
// out of a chain leaves a chain that no longer matches the heads its
// witness recorded (store.Witness.Chains). docs/receipts.md, "Trust
// state", has the receipts and what each one means.
package trust

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
)

// Sessions joule seals its own receipts into. A host's event never lands
// in one (Reserved).
const (
	// GrantsSession holds the receipts of changes to grants: issued,
	// activated, revoked, renewed.
	GrantsSession = "joule-grants"
	// StoreSession holds the receipts of changes to the store itself: a
	// loss accepted, a restore, a move.
	StoreSession = "joule-store"
	homePrefix   = store.SystemPrefix + "home:"
)

// HomeSession is the session of the home whose endpoint key has the
// signed-note verifier key vkey ("NAME+HASH+KEY"): "joule-home:NAME+HASH".
func HomeSession(vkey string) string {
	name, rest, _ := strings.Cut(vkey, "+")
	hash, _, _ := strings.Cut(rest, "+")
	return homePrefix + name + "+" + hash
}

// Reserved reports a session id that is joule's own: a host event naming
// one is refused, so that nothing but joule's trust changes ever enters a
// trust chain.
func Reserved(session string) bool { return strings.HasPrefix(session, store.SystemPrefix) }

// LegacyActiveSetting is the store setting that named the active grant
// (and, under LegacyActiveSetting+":"+session, a session's) before the
// trust chain did. Nothing reads it to decide; store check reports one that
// disagrees with the chain, which only an edit by hand makes.
const LegacyActiveSetting = "active_grant"

// Codes of the receipts that change trust state. Each is a
// joule-decision/1 receipt with decision allow, no debit, and a summary of
// a fixed form (below) that, with its grants, says exactly what changed.
const (
	CodeIssued    = "grant-issued"    // grants [ID]; summary "grant ID issued"
	CodeActivated = "grant-activated" // grants [ID]; "grant ID active for every session", "… for session S" or "… for workspace ROOT"
	CodeRevoked   = "grant-revoked"   // grants [ID]; "grant ID revoked"
	CodeRenewed   = "grant-renewed"   // grants [OLD, NEW]; "grant OLD renewed as NEW"
	CodeHome      = "home-recorded"   // grants []; "issuers DIGEST config DIGEST"
)

// Errors a derivation or a check wraps. Each comes as an *Error that says
// where.
var (
	// ErrCorrupt: a trust chain that does not verify (a receipt damaged,
	// missing, reordered, signed by a key not trusted, or not one of the
	// receipts above).
	ErrCorrupt = errors.New("trust chain corrupt")
	// ErrBehind: a trust chain behind the head its witness recorded
	// (the last receipts taken out, or rewritten).
	ErrBehind = errors.New("trust chain behind its witness")
	// ErrUnrecorded: a grant the trust chain records no issue of.
	ErrUnrecorded = errors.New("grant not recorded as issued")
	// ErrIssuersUnsigned, ErrConfigUnsigned: the issuers file, or
	// config.json's trust-relevant settings, differ from what the home's
	// chain last recorded.
	ErrIssuersUnsigned = errors.New("issuers file not recorded")
	ErrConfigUnsigned  = errors.New("configuration not recorded")
)

// Error says which chain, and which receipt of it, a finding concerns.
type Error struct {
	Session string
	Seq     uint64 // 0: the chain as a whole
	Problem string
	err     error
}

func (e *Error) Error() string {
	if e.Seq > 0 {
		return fmt.Sprintf("%v: session %s seq %d: %s", e.err, e.Session, e.Seq, e.Problem)
	}
	return fmt.Sprintf("%v: session %s: %s", e.err, e.Session, e.Problem)
}

func (e *Error) Unwrap() error { return e.err }

func fault(kind error, session string, seq uint64, format string, args ...any) *Error {
	return &Error{Session: session, Seq: seq, Problem: fmt.Sprintf(format, args...), err: kind}
}

// Grants is the grant trust state a GrantsSession chain signs.
type Grants struct {
	Seq  uint64  // the chain's length
	Head core.ID // the chain hash of its last receipt
	// issued and revoked map each grant to the sequence of the receipt
	// that issued or revoked it.
	issued, revoked map[string]uint64
	active          string            // for every session
	activeFor       map[string]string // for one session
	activeAt        map[string]string // for one workspace root
}

// NewGrants is the state of an empty chain: nothing issued, nothing
// active.
func NewGrants() *Grants {
	return &Grants{issued: map[string]uint64{}, revoked: map[string]uint64{}, activeFor: map[string]string{}, activeAt: map[string]string{}}
}

// Issued reports whether the chain records an issue of grant id.
func (g *Grants) Issued(id string) bool { _, ok := g.issued[id]; return ok }

// Revoked reports whether the chain records a revocation of grant id.
func (g *Grants) Revoked(id string) bool { _, ok := g.revoked[id]; return ok }

// IssuedAt is the sequence of the receipt that issued id (0: none).
func (g *Grants) IssuedAt(id string) uint64 { return g.issued[id] }

// RevokedAt is the sequence of the receipt that revoked id (0: none).
func (g *Grants) RevokedAt(id string) uint64 { return g.revoked[id] }

// Active is the grant active for session: its own, else the one for
// every session; "" when none is.
func (g *Grants) Active(session string) string {
	if id, ok := g.activeFor[session]; ok && session != "" {
		return id
	}
	return g.active
}

// ActiveAt is the grant that decides an action of session whose working
// directory is cwd (absolute, symbolic links resolved): the session's
// own, else the one active for the longest workspace root that holds cwd,
// else the one for every session; "" when none is. root is the workspace
// root that chose it ("" when it was not a workspace's).
func (g *Grants) ActiveAt(session, cwd string) (id, root string) {
	if id, ok := g.activeFor[session]; ok && session != "" {
		return id, ""
	}
	if root = g.WorkspaceOf(cwd); root != "" {
		return g.activeAt[root], root
	}
	return g.active, ""
}

// WorkspaceOf is the longest workspace root with a grant of its own that
// holds dir ("" for none).
func (g *Grants) WorkspaceOf(dir string) string {
	best := ""
	if dir == "" {
		return ""
	}
	for root := range g.activeAt {
		if Within(dir, root) && len(root) > len(best) {
			best = root
		}
	}
	return best
}

// Within reports whether dir is root or below it, by whole path
// components (/a/bc is not within /a/b).
func Within(dir, root string) bool {
	if dir == root || root == "/" {
		return true
	}
	return strings.HasPrefix(dir, root) && len(dir) > len(root) && dir[len(root)] == '/'
}

// HasWorkspaces reports whether any workspace root has a grant of its
// own: only then does an action's directory choose one.
func (g *Grants) HasWorkspaces() bool { return len(g.activeAt) > 0 }

// Workspaces lists the workspace roots with a grant of their own, sorted.
func (g *Grants) Workspaces() []string {
	return slices.Sorted(maps.Keys(g.activeAt))
}

// WorkspaceGrant is the grant active for workspace root exactly ("" for
// none).
func (g *Grants) WorkspaceGrant(root string) string { return g.activeAt[root] }

// ActiveRoots lists, sorted, the workspace roots grant id is active for.
func (g *Grants) ActiveRoots(id string) []string {
	var out []string
	for root, a := range g.activeAt {
		if a == id {
			out = append(out, root)
		}
	}
	slices.Sort(out)
	return out
}

// Default is the grant active for every session ("" for none).
func (g *Grants) Default() string { return g.active }

// Sessions lists the sessions with a grant of their own, sorted.
func (g *Grants) Sessions() []string {
	out := make([]string, 0, len(g.activeFor))
	for s := range g.activeFor {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Places says where id is active: "default" (for every session), each
// workspace root that has it, and "session S" for each session that has
// it. One list for every view (grant ls and show, the MCP server's and
// the web UI's grants).
func (g *Grants) Places(id string) []string {
	var out []string
	if g.active == id {
		out = append(out, "default")
	}
	out = append(out, g.ActiveRoots(id)...)
	for _, s := range g.Sessions() {
		if g.activeFor[s] == id {
			out = append(out, "session "+s)
		}
	}
	return out
}

// Summaries of the trust receipts: the exact text each code's receipt
// carries, which Apply parses back.
func IssuedSummary(id string) string  { return "grant " + id + " issued" }
func RevokedSummary(id string) string { return "grant " + id + " revoked" }
func RenewedSummary(old, renewed string) string {
	return "grant " + old + " renewed as " + renewed
}

// ActivatedSummary says id is active for session, or for every session
// when session is "".
func ActivatedSummary(id, session string) string {
	if session == "" {
		return "grant " + id + " active for every session"
	}
	return "grant " + id + " active for session " + session
}

// WorkspaceSummary says id is active for the actions whose working
// directory is inside workspace root.
func WorkspaceSummary(id, root string) string {
	return "grant " + id + " active for workspace " + root
}

// ValidRoot reports why root cannot be a workspace root a grant is made
// active for: it must be absolute, clean, and one line.
func ValidRoot(root string) error {
	switch {
	case root == "" || !filepath.IsAbs(root):
		return fmt.Errorf("workspace %q is not an absolute path", root)
	case filepath.Clean(root) != root:
		return fmt.Errorf("workspace %q is not a clean path (%s)", root, filepath.Clean(root))
	case strings.ContainsAny(root, "\n\r\x00"):
		return fmt.Errorf("workspace %q holds a line break or NUL", root)
	}
	return nil
}

// Apply changes g by the receipt at seq of its chain. A receipt that is
// not one of the trust receipts, or not in its exact form, is an error:
// the chain holds nothing else.
func (g *Grants) Apply(seq uint64, d *receipts.Decision) error {
	bad := func(format string, args ...any) error {
		return fault(ErrCorrupt, GrantsSession, seq, format, args...)
	}
	if d.Decision != receipts.Allow || d.DebitUJ != 0 {
		return bad("a %s receipt (code %s) is not a change of trust state", d.Decision, d.Code)
	}
	one := func() (string, error) {
		if len(d.Grants) != 1 || d.Grants[0] == "" {
			return "", bad("a %s receipt names %d grants, want 1", d.Code, len(d.Grants))
		}
		return d.Grants[0], nil
	}
	switch d.Code {
	case CodeIssued:
		id, err := one()
		if err != nil {
			return err
		}
		if d.Summary != IssuedSummary(id) {
			return bad("summary %q is not %q", d.Summary, IssuedSummary(id))
		}
		if _, ok := g.issued[id]; !ok {
			g.issued[id] = seq
		}
	case CodeRevoked:
		id, err := one()
		if err != nil {
			return err
		}
		if d.Summary != RevokedSummary(id) {
			return bad("summary %q is not %q", d.Summary, RevokedSummary(id))
		}
		if _, ok := g.revoked[id]; !ok {
			g.revoked[id] = seq
		}
	case CodeActivated:
		id, err := one()
		if err != nil {
			return err
		}
		rest, ok := strings.CutPrefix(d.Summary, "grant "+id+" active for ")
		switch {
		case ok && rest == "every session":
			// A choice for every session is one for every workspace too:
			// the workspaces' own choices made before it are dropped
			// (a session's own stays, as its session asked for it).
			g.active = id
			clear(g.activeAt)
		case ok && strings.HasPrefix(rest, "session ") && len(rest) > len("session "):
			g.activeFor[rest[len("session "):]] = id
		case ok && strings.HasPrefix(rest, "workspace "):
			root := rest[len("workspace "):]
			if err := ValidRoot(root); err != nil {
				return bad("summary %q: %v", d.Summary, err)
			}
			g.activeAt[root] = id
		default:
			return bad("summary %q is not an activation of grant %s", d.Summary, id)
		}
	case CodeRenewed:
		if len(d.Grants) != 2 || d.Grants[0] == "" || d.Grants[1] == "" || d.Grants[0] == d.Grants[1] {
			return bad("a renewal names %d grants, want the old and the new", len(d.Grants))
		}
		old, renewed := d.Grants[0], d.Grants[1]
		if d.Summary != RenewedSummary(old, renewed) {
			return bad("summary %q is not %q", d.Summary, RenewedSummary(old, renewed))
		}
		if _, ok := g.issued[renewed]; !ok {
			g.issued[renewed] = seq
		}
		if _, ok := g.revoked[old]; !ok {
			g.revoked[old] = seq
		}
		if g.active == old {
			g.active = renewed
		}
		for s, a := range g.activeFor {
			if a == old {
				g.activeFor[s] = renewed
			}
		}
		for root, a := range g.activeAt {
			if a == old {
				g.activeAt[root] = renewed
			}
		}
	default:
		return bad("code %q is not a change of grants", d.Code)
	}
	return nil
}

// Home is what a home's chain signs: the digests of its issuers file and
// of config.json's trust-relevant settings, as last recorded.
type Home struct {
	Session string
	Seq     uint64
	Head    core.ID
	Issuers core.ID // zero with Seq 0: nothing recorded, the home runs without issuers
	Config  core.ID // zero with Seq 0: the default configuration
}

// HomeSummary is the summary of a home-recorded receipt.
func HomeSummary(issuers, config core.ID) string {
	return "issuers " + issuers.String() + " config " + config.String()
}

// Apply records the receipt at seq of the home's chain.
func (h *Home) Apply(seq uint64, d *receipts.Decision) error {
	bad := func(format string, args ...any) error { return fault(ErrCorrupt, h.Session, seq, format, args...) }
	if d.Decision != receipts.Allow || d.Code != CodeHome || d.DebitUJ != 0 || len(d.Grants) != 0 {
		return bad("a %s receipt with code %q is not a record of the home's files", d.Decision, d.Code)
	}
	var is, cf string
	if n, err := fmt.Sscanf(d.Summary, "issuers %s config %s", &is, &cf); err != nil || n != 2 {
		return bad("summary %q is not %q", d.Summary, "issuers DIGEST config DIGEST")
	}
	i, err1 := core.ParseID(is)
	c, err2 := core.ParseID(cf)
	if err1 != nil || err2 != nil || d.Summary != HomeSummary(i, c) {
		return bad("summary %q is not %q", d.Summary, "issuers DIGEST config DIGEST")
	}
	h.Issuers, h.Config = i, c
	return nil
}

// Files is what a home's files say now, as digests (IssuersDigest, and
// config.json's trust-relevant settings, tiers/config), and the digest of
// the default configuration, which a home that recorded nothing runs with.
type Files struct {
	Home          string         // the home's session, HomeSession of its key
	Steward       string         // the home's steward, which alone records its files
	Key           core.PublicKey // and its key
	Issuers       core.ID
	Config        core.ID
	DefaultConfig core.ID
}

// IssuersDigest is the digest of a set of trusted issuers, each a
// signed-note verifier key line: the same for any order, comment or blank
// line, so that only a change of who is trusted is one.
func IssuersDigest(keys []string) core.ID {
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	return core.Sum([]byte("joule-issuers/1\n" + strings.Join(sorted, "\n")))
}

// NoIssuers is the digest of a home without an issuers file.
var NoIssuers = IssuersDigest(nil)

// Check compares the files with what h signs (the defaults when h records
// nothing): nil, or an *Error wrapping ErrIssuersUnsigned or
// ErrConfigUnsigned that says which was recorded where.
func (h *Home) Check(f Files) error {
	issuers, config, where := NoIssuers, f.DefaultConfig, "none recorded: the defaults"
	if h.Seq > 0 {
		issuers, config, where = h.Issuers, h.Config, fmt.Sprintf("as recorded at seq %d", h.Seq)
	}
	if f.Issuers != issuers {
		return fault(ErrIssuersUnsigned, h.Session, 0, "the issuers file (digest %s) is not the signed list of trusted issuers (%s, digest %s)", f.Issuers, where, issuers)
	}
	if f.Config != config {
		return fault(ErrConfigUnsigned, h.Session, 0, "config.json's trust settings (digest %s) are not the signed ones (%s, digest %s)", f.Config, where, config)
	}
	return nil
}

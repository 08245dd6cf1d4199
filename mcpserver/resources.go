package mcpserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/core/trust"
)

// The joule:// resources.
const (
	URISteward    = "joule://steward"
	URISessions   = "joule://sessions"
	URICheckpoint = "joule://checkpoint"
	URIGrants     = "joule://grants"

	TemplateSessionsPage = "joule://sessions{?cursor}"
	TemplateSession      = "joule://sessions/{session}"
	TemplateReceipts     = "joule://sessions/{session}/receipts{?after}"
	TemplateReceipt      = "joule://sessions/{session}/receipts/{seq}"
	TemplateLogEntry     = "joule://log/{index}"
	TemplateGrant        = "joule://grants/{id}"
)

const jsonMIME = "application/json"

func (s *Server) addResources() {
	static := func(uri, name, title, desc string, h server.ResourceHandlerFunc) {
		s.mcp.AddResource(mcp.NewResource(uri, name, mcp.WithResourceTitle(title), mcp.WithResourceDescription(desc), mcp.WithMIMEType(jsonMIME)), h)
	}
	tmpl := func(uri, name, title, desc string, h server.ResourceTemplateHandlerFunc) {
		s.mcp.AddResourceTemplate(mcp.NewResourceTemplate(uri, name, mcp.WithTemplateTitle(title), mcp.WithTemplateDescription(desc), mcp.WithTemplateMIMEType(jsonMIME)), h)
	}
	static(URISteward, "steward", "Steward and public key",
		"The steward name and Ed25519 public key that sign every receipt: all a third party needs to verify them offline.", s.readSteward)
	static(URISessions, "sessions", "Sessions",
		fmt.Sprintf("Every session with receipts, oldest first, %d per page; next_uri gives the next page.", PageSize), s.readSessions)
	static(URICheckpoint, "checkpoint", "Latest log checkpoint",
		"The latest signed checkpoint (C2SP signed note) of the Merkle log over every receipt, signed afresh when the log has grown.", s.readCheckpoint)
	static(URIGrants, "grants", "Grants",
		"Every grant: capabilities, tiers, budget, spent, reserved and left, window, revocation, and which is active.", s.readGrants)
	tmpl(TemplateSessionsPage, "sessions-page", "Sessions (a page)", "A page of the session list; cursor comes from next_uri.", s.readSessions)
	tmpl(TemplateSession, "session", "Session summary",
		"A session's account: joules by tier and by provenance, decisions allowed and denied, budget left, chain head and verification, and what the figure covers. Subscribe to hear of each new receipt.", s.readSession)
	tmpl(TemplateReceipts, "session-receipts", "Session receipts",
		fmt.Sprintf("A session's receipts in order, %d per page after sequence number after.", PageSize), s.readReceipts)
	tmpl(TemplateReceipt, "receipt", "Receipt",
		"One sealed receipt: decoded, its COSE_Sign1 envelope, and its verification against the steward key and the chain.", s.readReceipt)
	tmpl(TemplateLogEntry, "log-entry", "Receipt by log index", "The receipt at a Merkle log index (0-based).", s.readLogEntry)
	tmpl(TemplateGrant, "grant", "Grant", "One grant by id, with its ledger state.", s.readGrant)
}

// arg returns one template variable.
func arg(req mcp.ReadResourceRequest, name string) string {
	switch v := req.Params.Arguments[name].(type) {
	case string:
		return v
	case []string:
		if len(v) == 1 {
			return v[0]
		}
	}
	return ""
}

// jsonContents is compact JSON: a resource is read by models more than by
// people, and indentation is tokens a model pays for.
func jsonContents(uri string, v any) ([]mcp.ResourceContents, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: jsonMIME, Text: string(b)}}, nil
}

func (s *Server) readSteward(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	return jsonContents(req.Params.URI, map[string]any{
		"steward":      s.cfg.Steward,
		"public_key":   base64.RawURLEncoding.EncodeToString(s.cfg.PublicKey),
		"verifier_key": s.cfg.VerifierKey,
		"algorithm":    "Ed25519 (COSE_Sign1, alg -8, kid = steward)",
		"verify":       "joule receipts verify --steward STEWARD --pubkey KEY < export; the formats are in docs/receipts.md",
	})
}

// sessionItem is one entry of the session list.
type sessionItem struct {
	ID       string    `json:"id"`
	URI      string    `json:"uri"`
	Receipts uint64    `json:"receipts"`
	First    time.Time `json:"first"`
	Last     time.Time `json:"last"`
	Head     string    `json:"chain_head"`
}

func (s *Server) readSessions(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	from := 0
	if c := arg(req, "cursor"); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("cursor %q is not a cursor from next_uri", c)
		}
		from = n
	}
	all, err := s.store.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	page := []sessionItem{}
	for i := from; i < len(all) && len(page) < PageSize; i++ {
		si := all[i]
		page = append(page, sessionItem{ID: si.ID, URI: sessionURI(si.ID), Receipts: si.Count, First: si.First.UTC(), Last: si.Last.UTC(), Head: core.ID(si.Head).String()})
	}
	out := map[string]any{"total": len(all), "sessions": page}
	if next := from + len(page); next < len(all) {
		out["next_uri"] = fmt.Sprintf("%s?cursor=%d", URISessions, next)
	}
	return jsonContents(req.Params.URI, out)
}

func (s *Server) readSession(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	id := arg(req, "session")
	if id == "" {
		return nil, errors.New("the session id is missing")
	}
	sum, err := s.sums.get(ctx, id)
	if err != nil {
		return nil, err
	}
	return jsonContents(req.Params.URI, sum)
}

// receiptItem is one entry of a session's receipt list.
type receiptItem struct {
	Sequence uint64 `json:"sequence"`
	URI      string `json:"uri"`
	Hash     string `json:"hash"`
	Index    int64  `json:"index"`
	Kind     string `json:"kind"`
	Tool     string `json:"tool,omitempty"`
	Decision string `json:"decision,omitempty"`
	Code     string `json:"code,omitempty"`
	Summary  string `json:"summary,omitempty"`
	Unit     string `json:"unit,omitempty"`
	EnergyUJ uint64 `json:"energy_uj"`
	// A model call fitted to the budget: the output cap asked for and the
	// one it was forwarded with.
	MaxOutputRequested uint64 `json:"max_output_requested,omitempty"`
	MaxOutputFitted    uint64 `json:"max_output_fitted,omitempty"`
	// Calls and FittedCalls, for a receipt that covers several calls: how
	// many, and how many of them were fitted to the budget.
	Calls       int    `json:"calls,omitempty"`
	FittedCalls int    `json:"fitted_calls,omitempty"`
	Error       string `json:"error,omitempty"` // does not verify
}

func (s *Server) readReceipts(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	id := arg(req, "session")
	var after uint64
	if a := arg(req, "after"); a != "" {
		n, err := strconv.ParseUint(a, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("after %q is not a sequence number", a)
		}
		after = n
	}
	entries, err := s.store.SessionRange(ctx, id, after, PageSize+1)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 && after == 0 {
		return nil, fmt.Errorf("session %q has no receipts", id)
	}
	more := len(entries) > PageSize
	if more {
		entries = entries[:PageSize]
	}
	items := make([]receiptItem, 0, len(entries))
	for _, en := range entries {
		it := receiptItem{Sequence: en.Seq, URI: receiptURI(en.Session, en.Seq), Hash: core.ID(en.Hash).String(), Index: en.Index}
		a, err := s.verified.open(s, en.Hash, en.Envelope)
		switch {
		case err != nil:
			it.Error = err.Error()
		case a.Decision != nil:
			d := a.Decision
			it.Kind, it.Tool, it.Decision, it.Code, it.Summary, it.EnergyUJ = d.Kind, d.Tool, d.Decision, d.Code, d.Summary, d.DebitUJ
		default:
			e := a.Efficiency
			it.Kind, it.Unit, it.EnergyUJ = e.Kind, e.Unit, e.EstimatedUJ
			it.MaxOutputRequested, it.MaxOutputFitted = e.MaxOutputRequested, e.MaxOutputFitted
			if len(e.Calls) > 0 {
				it.Calls, it.FittedCalls = e.CallCount(), e.FittedCount()
			}
			if e.MeasuredUJ != nil {
				it.EnergyUJ = *e.MeasuredUJ
			}
		}
		items = append(items, it)
	}
	out := map[string]any{"session": id, "receipts": items}
	if more {
		out["next_uri"] = fmt.Sprintf("%s/receipts?after=%d", sessionURI(id), entries[len(entries)-1].Seq)
	}
	return jsonContents(req.Params.URI, out)
}

func (s *Server) readReceipt(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	id := arg(req, "session")
	seq, err := strconv.ParseUint(arg(req, "seq"), 10, 64)
	if err != nil || seq == 0 {
		return nil, fmt.Errorf("receipt sequence %q must be a positive integer", arg(req, "seq"))
	}
	entries, err := s.store.SessionRange(ctx, id, seq-1, 1)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 || entries[0].Seq != seq {
		return nil, fmt.Errorf("session %q has no receipt %d", id, seq)
	}
	return s.receiptContents(req.Params.URI, entries[0])
}

func (s *Server) readLogEntry(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	idx, err := strconv.ParseInt(arg(req, "index"), 10, 64)
	if err != nil || idx < 0 {
		return nil, fmt.Errorf("log index %q must be a non-negative integer", arg(req, "index"))
	}
	en, err := s.store.EntryAt(ctx, idx)
	if err != nil {
		return nil, err
	}
	return s.receiptContents(req.Params.URI, en)
}

// receiptView is a receipt as the receipt resource shows it.
type receiptView struct {
	URI          string    `json:"uri"`
	Session      string    `json:"session"`
	Sequence     uint64    `json:"sequence"`
	Index        int64     `json:"log_index"`
	Hash         string    `json:"hash"`
	Prev         string    `json:"prev"`
	Time         time.Time `json:"time"`
	Verified     bool      `json:"verified"`
	Verification string    `json:"verification"`
	Receipt      any       `json:"receipt,omitempty"`
	Envelope     string    `json:"envelope"` // base64url COSE_Sign1
}

// receiptContents shows one receipt: decoded JSON with its verification, and
// the raw envelope as a second, binary content.
func (s *Server) receiptContents(uri string, en store.Entry) ([]mcp.ResourceContents, error) {
	v := receiptView{URI: uri, Session: en.Session, Sequence: en.Seq, Index: en.Index, Hash: core.ID(en.Hash).String(), Prev: core.ID(en.Prev).String(), Time: en.Time.UTC(), Envelope: core.EncodeBase64(en.Envelope)}
	a, err := s.verified.open(s, en.Hash, en.Envelope)
	switch {
	case err != nil:
		v.Verification = "does not verify: " + err.Error()
	case a.Session != en.Session || a.Sequence != en.Seq || a.Prev != core.ID(en.Prev):
		v.Verification = "signature verifies, but the receipt's session, sequence or prev differ from its place in the chain"
		v.Receipt = a.Core()
	default:
		v.Verified = true
		v.Verification = fmt.Sprintf("signature verifies against steward %s, and prev is the chain hash of receipt %d", s.cfg.Steward, en.Seq-1)
		if en.Seq == 1 {
			v.Verification = fmt.Sprintf("signature verifies against steward %s; first receipt of the chain (prev is zero)", s.cfg.Steward)
		}
		v.Receipt = a.Core()
	}
	out, err := jsonContents(uri, v)
	if err != nil {
		return nil, err
	}
	return append(out, mcp.BlobResourceContents{URI: uri, MIMEType: "application/cose; cose-type=cose-sign1", Blob: base64.StdEncoding.EncodeToString(en.Envelope)}), nil
}

func (s *Server) readCheckpoint(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	size, err := s.store.LogSize(ctx)
	if err != nil {
		return nil, err
	}
	signed, err := s.store.LatestCheckpoint(ctx)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	cp, perr := parseSigned(signed)
	if (err != nil || perr != nil || cp.Size < size) && s.cfg.NoteSigner != nil {
		if signed, err = s.store.Checkpoint(ctx, s.cfg.LogOrigin, s.cfg.NoteSigner); err != nil {
			return nil, err
		}
		cp, perr = parseSigned(signed)
	}
	if len(signed) == 0 {
		return nil, errors.New("no checkpoint has been signed yet: run 'joule receipts checkpoint'")
	}
	if perr != nil {
		return nil, perr
	}
	return jsonContents(req.Params.URI, map[string]any{
		"origin":       cp.Origin,
		"size":         cp.Size,
		"root":         base64.StdEncoding.EncodeToString(cp.Root[:]),
		"log_size_now": max(size, cp.Size),
		"note":         string(signed),
		"verifier_key": s.cfg.VerifierKey,
		"verify":       "golang.org/x/mod/sumdb/note.Open(note, note.VerifierList(verifier)); 'joule receipts prove INDEX' proves a receipt is in it",
	})
}

// parseSigned reads the body of a signed checkpoint note.
func parseSigned(signed []byte) (store.Checkpoint, error) {
	i := bytes.Index(signed, []byte("\n\n"))
	if i < 0 {
		return store.Checkpoint{}, errors.New("the stored checkpoint is not a signed note")
	}
	return store.ParseCheckpoint(signed[:i+1])
}

// grantView is a grant as the grant resources show it.
type grantView struct {
	ID         string    `json:"id"`
	URI        string    `json:"uri"`
	Parent     string    `json:"parent,omitempty"`
	Active     bool      `json:"active"`               // decides this server's tools
	ActiveFor  []string  `json:"active_for,omitempty"` // where it is active: "default", workspace roots, "session S"
	Issuer     string    `json:"issuer,omitempty"`
	Subject    string    `json:"subject,omitempty"`
	Roots      []string  `json:"roots,omitempty"`
	Allow      []string  `json:"allow,omitempty"`
	Ask        []string  `json:"ask,omitempty"`
	Deny       []string  `json:"deny,omitempty"`
	Tiers      []string  `json:"tiers,omitempty"`
	NotBefore  time.Time `json:"not_before,omitzero"`
	NotAfter   time.Time `json:"not_after,omitzero"`
	BudgetUJ   uint64    `json:"budget_uj"`
	SpentUJ    uint64    `json:"spent_uj"`
	ReservedUJ uint64    `json:"reserved_uj"`
	LeftUJ     uint64    `json:"left_uj"`
	Revoked    bool      `json:"revoked"`
	Created    time.Time `json:"created"`
	Error      string    `json:"error,omitempty"` // does not verify against the trusted issuers
}

// grantView shows rec, active and revoked as ts, the signed trust state,
// says (nil: it could not be read, and nothing is shown active). Active
// is the grant this server's tools are decided by: its session's, else its
// workspace's, else the default.
func (s *Server) grantView(rec store.GrantRecord, ts *trust.Grants) grantView {
	v := grantView{ID: rec.ID, URI: URIGrants + "/" + rec.ID, Parent: rec.Parent,
		BudgetUJ: rec.BudgetUJ, SpentUJ: rec.SpentUJ, ReservedUJ: rec.ReservedUJ, LeftUJ: rec.RemainingUJ(), Revoked: rec.Revoked, Created: rec.Created.UTC()}
	if ts != nil {
		active, _ := ts.ActiveAt(s.cfg.Session, s.ws.root)
		v.Active, v.ActiveFor, v.Revoked = rec.ID == active, ts.Places(rec.ID), rec.Revoked || ts.Revoked(rec.ID)
	}
	sg, err := s.cfg.Gate.Trust.Open(rec.Signed)
	if err != nil {
		v.Error = err.Error()
		return v
	}
	g := sg.Grant
	v.Issuer, v.Subject, v.Roots, v.Allow, v.Ask, v.Deny, v.Tiers = sg.IssuerName, g.Subject, g.Roots, g.Allow, g.Ask, g.Deny, g.Tiers
	v.NotBefore, v.NotAfter = time.Unix(g.NotBefore, 0).UTC(), time.Unix(g.NotAfter, 0).UTC()
	return v
}

func (s *Server) readGrants(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	recs, err := s.store.Grants(ctx)
	if err != nil {
		return nil, err
	}
	ts, _ := s.cfg.Gate.TrustState(ctx)
	active := ""
	if ts != nil {
		active, _ = ts.ActiveAt(s.cfg.Session, s.ws.root)
	}
	out := make([]grantView, 0, len(recs))
	for _, r := range recs {
		out = append(out, s.grantView(r, ts))
	}
	return jsonContents(req.Params.URI, map[string]any{"active": active, "grants": out})
}

func (s *Server) readGrant(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	rec, err := s.store.Grant(ctx, arg(req, "id"))
	if err != nil {
		return nil, err
	}
	ts, _ := s.cfg.Gate.TrustState(ctx)
	return jsonContents(req.Params.URI, s.grantView(rec, ts))
}

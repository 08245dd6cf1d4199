package ui

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/fxamacker/cbor/v2"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
)

func (s *Server) checkpoint(text []byte) (store.Checkpoint, error) {
	nv, err := note.NewVerifier(s.cfg.VerifierKey)
	if err != nil {
		return store.Checkpoint{}, fmt.Errorf("the endpoint's verifier key: %v", err)
	}
	n, err := note.Open(text, note.VerifierList(nv))
	if err != nil {
		return store.Checkpoint{}, fmt.Errorf("the latest checkpoint's signature does not verify: %v", err)
	}
	return store.ParseCheckpoint([]byte(n.Text))
}

// latestCheckpoint is the newest signed checkpoint of the log: the last
// one stored (joule receipts checkpoint) or the one the witness keeps
// outside the store (rewritten after every append), whichever is larger,
// its signature verified. Nil when there is none yet.
func (s *Server) latestCheckpoint(ctx context.Context) ([]byte, store.Checkpoint, error) {
	var best []byte
	var bestCP store.Checkpoint
	text, err := s.cfg.Store.LatestCheckpoint(ctx)
	switch {
	case err == nil:
		cp, err := s.checkpoint(text)
		if err != nil {
			return nil, store.Checkpoint{}, err
		}
		best, bestCP = text, cp
	case !errors.Is(err, store.ErrNotFound):
		return nil, store.Checkpoint{}, err
	}
	if w := s.cfg.Store.Witness(); w != nil {
		for _, f := range w.Files {
			cp, msg, err := store.ReadWitnessFile(f, w.Origin, w.Verifier)
			if err != nil || cp == nil {
				continue
			}
			if best == nil || cp.Size > bestCP.Size {
				best, bestCP = msg, *cp
			}
		}
	}
	return best, bestCP, nil
}

// Envelope is a COSE_Sign1 envelope taken apart for display.
type Envelope struct {
	Hex         string `json:"hex"`
	Bytes       int    `json:"bytes"`
	Protected   string `json:"protected_hex,omitempty"`
	Kid         string `json:"kid,omitempty"`
	Alg         int64  `json:"alg,omitempty"`
	Unprotected string `json:"unprotected_hex,omitempty"`
	Payload     string `json:"payload_hex,omitempty"`
	Signature   string `json:"signature_hex,omitempty"`
	Error       string `json:"error,omitempty"`
}

func envelopeOf(b []byte) Envelope {
	e := Envelope{Hex: hex.EncodeToString(b), Bytes: len(b)}
	var tag cbor.RawTag
	if err := cbor.Unmarshal(b, &tag); err != nil || tag.Number != 18 {
		e.Error = "not a tagged COSE_Sign1 (CBOR tag 18)"
		if err != nil {
			e.Error += ": " + err.Error()
		}
		return e
	}
	var parts []cbor.RawMessage
	if err := cbor.Unmarshal(tag.Content, &parts); err != nil || len(parts) != 4 {
		e.Error = "a COSE_Sign1 is an array of 4 elements"
		return e
	}
	var prot, payload, sig []byte
	if cbor.Unmarshal(parts[0], &prot) == nil {
		e.Protected = hex.EncodeToString(prot)
		var hdr map[int64]any
		if cbor.Unmarshal(prot, &hdr) == nil {
			if a, ok := hdr[1].(int64); ok {
				e.Alg = a
			}
			if k, ok := hdr[4].([]byte); ok {
				e.Kid = string(k)
			}
		}
	}
	e.Unprotected = hex.EncodeToString(parts[1])
	if cbor.Unmarshal(parts[2], &payload) == nil {
		e.Payload = hex.EncodeToString(payload)
	}
	if cbor.Unmarshal(parts[3], &sig) == nil {
		e.Signature = hex.EncodeToString(sig)
	}
	return e
}

// Proof is a receipt's Merkle inclusion proof against the latest signed
// checkpoint, checked here.
type Proof struct {
	Checkpoint string   `json:"checkpoint,omitempty"`
	TreeSize   int64    `json:"tree_size,omitempty"`
	Root       string   `json:"root,omitempty"`
	Index      int64    `json:"index"`
	LeafHash   string   `json:"leaf_hash,omitempty"`
	Hashes     []string `json:"hashes"`
	Verified   bool     `json:"verified"`
	Note       string   `json:"note,omitempty"`
}

func (s *Server) receipt(r *http.Request) (any, error) {
	id, err := sessionParam(r)
	if err != nil {
		return nil, err
	}
	seq, err := intParam(r, "seq", 0, 1, 1<<62)
	if err != nil {
		return nil, err
	}
	if seq == 0 {
		return nil, badRequest("want a receipt's sequence number (&seq=N)")
	}
	ctx := r.Context()
	sess, err := s.idx.get(ctx, id)
	if err != nil {
		return nil, err
	}
	var row *Row
	for i := range sess.rows {
		if sess.rows[i].Seq == uint64(seq) {
			rr := sess.rows[i]
			row = &rr
			break
		}
	}
	sess.mu.Unlock()
	if row == nil {
		return nil, &httpError{http.StatusNotFound, fmt.Sprintf("session %q has no receipt with seq %d", id, seq)}
	}
	stored, err := s.cfg.Store.SessionRows(ctx, id)
	if err != nil {
		return nil, err
	}
	var env []byte
	for _, st := range stored {
		if st.Index == row.Index {
			env = st.Envelope
		}
	}
	if env == nil {
		return nil, &httpError{http.StatusNotFound, fmt.Sprintf("receipt seq %d of session %q is no longer stored", seq, id)}
	}
	out := map[string]any{"row": row, "envelope": envelopeOf(env), "chain_hash": core.Sum(env).String()}
	if a, err := s.cfg.Keys.Open(env); err == nil {
		out["receipt"] = a.Core()
	} else {
		out["open_error"] = err.Error()
		// What the payload claims, shown as unverified.
		if e := envelopeOf(env); e.Payload != "" {
			if p, err := hex.DecodeString(e.Payload); err == nil {
				if a, err := receipts.Decode(p); err == nil {
					out["unverified_receipt"] = a.Core()
				}
			}
		}
	}
	out["proof"] = s.prove(r, row.Index, env)
	return out, nil
}

func (s *Server) prove(r *http.Request, idx int64, env []byte) Proof {
	p := Proof{Index: idx, Hashes: []string{}, LeafHash: tlog.RecordHash(env).String()}
	text, cp, err := s.latestCheckpoint(r.Context())
	if err != nil {
		p.Note = err.Error()
		return p
	}
	if text == nil {
		p.Note = "no signed checkpoint yet (joule receipts checkpoint signs one)"
		return p
	}
	p.Checkpoint = string(text)
	p.TreeSize, p.Root = cp.Size, cp.Root.String()
	if idx >= cp.Size {
		p.Note = fmt.Sprintf("log index %d is after the latest signed checkpoint (size %d): the next one covers it", idx, cp.Size)
		return p
	}
	proof, err := s.cfg.Store.ProveRecord(r.Context(), idx, cp.Size)
	if err != nil {
		p.Note = err.Error()
		return p
	}
	for _, h := range proof {
		p.Hashes = append(p.Hashes, h.String())
	}
	if err := tlog.CheckRecord(proof, cp.Size, cp.Root, idx, tlog.RecordHash(env)); err != nil {
		p.Note = "the envelope as stored is not the leaf the signed checkpoint commits to: " + err.Error()
		return p
	}
	p.Verified = true
	return p
}

// GrantView is one grant as the grants view shows it.
type GrantView struct {
	ID        string   `json:"id"`
	Parent    string   `json:"parent,omitempty"`
	Chain     []string `json:"chain"`                // root first, ending with this grant
	Active    bool     `json:"active"`               // active somewhere (ActiveFor)
	ActiveFor []string `json:"active_for,omitempty"` // "default", workspace roots, "session S"

	BudgetUJ   uint64   `json:"budget_uj"`
	SpentUJ    uint64   `json:"spent_uj"`
	ReservedUJ uint64   `json:"reserved_uj"`
	LeftUJ     uint64   `json:"left_uj"`
	Revoked    bool     `json:"revoked"`
	Created    int64    `json:"created_ms"`
	Verified   bool     `json:"verified"`
	Error      string   `json:"error,omitempty"`
	Issuer     string   `json:"issuer,omitempty"`
	Subject    string   `json:"subject,omitempty"`
	Roots      []string `json:"roots,omitempty"`
	Allow      []string `json:"allow,omitempty"`
	Ask        []string `json:"ask,omitempty"`
	Deny       []string `json:"deny,omitempty"`
	Tiers      []string `json:"tiers,omitempty"`
	NotBefore  int64    `json:"not_before,omitempty"`
	NotAfter   int64    `json:"not_after,omitempty"`
	Expired    bool     `json:"expired"`
}

func (s *Server) grants(r *http.Request) (any, error) {
	ctx := r.Context()
	recs, err := s.cfg.Store.Grants(ctx)
	if err != nil {
		return nil, err
	}
	active, revoked, places := "", func(string) bool { return false }, func(string) []string { return nil }
	if s.cfg.TrustState != nil {
		if ts, err := s.cfg.TrustState(ctx); err == nil {
			active, revoked, places = ts.Default(), ts.Revoked, ts.Places
		}
	}
	parent := map[string]string{}
	for _, g := range recs {
		parent[g.ID] = g.Parent
	}
	now := time.Now().Unix()
	out := []GrantView{}
	for _, g := range recs {
		v := GrantView{ID: g.ID, Parent: g.Parent, ActiveFor: places(g.ID), BudgetUJ: g.BudgetUJ, SpentUJ: g.SpentUJ, ReservedUJ: g.ReservedUJ,
			LeftUJ: g.RemainingUJ(), Revoked: g.Revoked || revoked(g.ID), Created: g.Created.UnixMilli()}
		v.Active = len(v.ActiveFor) > 0
		for id, n := g.ID, 0; id != "" && n < 17; id, n = parent[id], n+1 {
			v.Chain = append([]string{id}, v.Chain...)
		}
		if sg, err := s.cfg.Trust.Open(g.Signed); err != nil {
			v.Error = "the envelope does not verify: " + err.Error()
		} else if sg.ID.String() != g.ID {
			v.Error = fmt.Sprintf("the envelope is grant %s, not %s", sg.ID, g.ID)
		} else {
			gr := sg.Grant
			v.Verified, v.Issuer, v.Subject, v.Roots = true, sg.IssuerName, gr.Subject, gr.Roots
			v.Allow, v.Ask, v.Deny, v.Tiers, v.NotBefore, v.NotAfter = gr.Allow, gr.Ask, gr.Deny, gr.Tiers, gr.NotBefore, gr.NotAfter
			v.Expired = gr.NotAfter < now
			if gr.BudgetUJ != g.BudgetUJ {
				v.Error = fmt.Sprintf("the budget column (%d µJ) is not the signed budget (%d µJ): run joule store check", g.BudgetUJ, gr.BudgetUJ)
				v.BudgetUJ = gr.BudgetUJ
			}
		}
		out = append(out, v)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created > out[j].Created })
	return map[string]any{"grants": out, "active": active}, nil
}

// events streams the log's size as server-sent events whenever it grows
// (one indexed read per poll, as the MCP subscriptions do), so the page
// shows new receipts without a reload.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	// no-transform: a compressing proxy in front (code-server's port
	// proxy, as VS Code's webview reaches joule ui) would otherwise
	// buffer the stream in its gzip window and the page never hears it.
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	ctx := r.Context()
	last := int64(-1)
	tick := time.NewTicker(s.cfg.Poll)
	defer tick.Stop()
	beat := 0
	for {
		size, err := s.cfg.Store.LogSize(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			fmt.Fprintf(w, "event: problem\ndata: %q\n\n", "the store cannot be read: "+err.Error())
			fl.Flush()
		case err == nil && size != last:
			fmt.Fprintf(w, "event: log\ndata: {\"size\":%d}\n\n", size)
			fl.Flush()
			last = size
		case beat%20 == 0:
			fmt.Fprint(w, ": keep-alive\n\n")
			fl.Flush()
		}
		beat++
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

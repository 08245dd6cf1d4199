// Package receipts defines joule's session receipts, the decision receipt
// (joule-decision/1, made by NewDecision) and the efficiency receipt
// (efficiency/1), and verifies a session's hash chain and its exports.
//
// Session receipts are not the JCR-1 receipt of a coding operation
// (joule-code/1), which is core.OpReceipt and is not chained; both ride in
// the same COSE_Sign1 envelope (core.Sealer, core.Verifier).
// docs/receipts.md specifies their canonical CBOR.
package receipts

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/fxamacker/cbor/v2"

	"github.com/joulehook/joule/core"
)

// Receipt kinds, the value of "jc_receipt".
const (
	KindDecision   = "joule-decision/1"
	KindEfficiency = "efficiency/1"
)

// Decision values.
const (
	Allow   = "allow"
	Deny    = "deny"
	Ask     = "ask"
	Rewrite = "rewrite"
)

// Decision is the signed core of a decision receipt: one gate decision.
type Decision struct {
	Kind        string          `cbor:"jc_receipt" json:"jc_receipt"`
	Session     string          `cbor:"session" json:"session"`
	Sequence    uint64          `cbor:"sequence" json:"sequence"`
	Prev        core.ID         `cbor:"prev" json:"prev"`
	TimeMS      uint64          `cbor:"time_ms" json:"time_ms"`
	Tool        string          `cbor:"tool" json:"tool"`
	InputDigest core.ID         `cbor:"input_digest" json:"input_digest"`
	Summary     string          `cbor:"summary" json:"summary"`
	Cwd         string          `cbor:"cwd" json:"cwd"`
	ContentID   string          `cbor:"content_id,omitempty" json:"content_id,omitempty"`
	Decision    string          `cbor:"decision" json:"decision"`
	Code        string          `cbor:"code" json:"code"`
	Reason      string          `cbor:"reason" json:"reason"`
	Grants      []string        `cbor:"grants" json:"grants"`
	DebitUJ     uint64          `cbor:"debit_uj" json:"debit_uj"`
	Provenance  core.Provenance `cbor:"energy_provenance" json:"energy_provenance"`
	Nonce       string          `cbor:"nonce" json:"nonce"`
	Steward     string          `cbor:"steward" json:"steward"`
}

// Efficiency is the signed core of an efficiency receipt: one completed unit
// of work (a model call, a coding operation) with its energy.
type Efficiency struct {
	Kind              string          `cbor:"jc_receipt" json:"jc_receipt"`
	Session           string          `cbor:"session" json:"session"`
	Sequence          uint64          `cbor:"sequence" json:"sequence"`
	Prev              core.ID         `cbor:"prev" json:"prev"`
	TimeMS            uint64          `cbor:"time_ms" json:"time_ms"`
	Unit              string          `cbor:"unit" json:"unit"`
	Model             string          `cbor:"model,omitempty" json:"model,omitempty"`
	OpID              string          `cbor:"op_id,omitempty" json:"op_id,omitempty"`
	Tier              core.Tier       `cbor:"tier,omitempty" json:"tier,omitempty"`
	InputTokens       uint64          `cbor:"input_tokens" json:"input_tokens"`
	CachedInputTokens uint64          `cbor:"cached_input_tokens" json:"cached_input_tokens"`
	CacheWriteTokens  uint64          `cbor:"cache_write_tokens" json:"cache_write_tokens"`
	OutputTokens      uint64          `cbor:"output_tokens" json:"output_tokens"`
	EstimatedUJ       uint64          `cbor:"estimated_uj" json:"estimated_uj"`
	MeasuredUJ        *uint64         `cbor:"measured_uj,omitempty" json:"measured_uj,omitempty"`
	Provenance        core.Provenance `cbor:"energy_provenance" json:"energy_provenance"`
	Coverage          string          `cbor:"coverage" json:"coverage"`
	Status            string          `cbor:"status" json:"status"`
	Note              string          `cbor:"note,omitempty" json:"note,omitempty"`
	Grants            []string        `cbor:"grants" json:"grants"`
	Nonce             string          `cbor:"nonce" json:"nonce"`
	Steward           string          `cbor:"steward" json:"steward"`
	// A call the meter fitted to its budget: the output cap it asked for
	// and the one it was forwarded with (both absent otherwise).
	MaxOutputRequested uint64 `cbor:"max_output_requested,omitempty" json:"max_output_requested,omitempty"`
	MaxOutputFitted    uint64 `cbor:"max_output_fitted,omitempty" json:"max_output_fitted,omitempty"`
	// Calls, when present, are the units of work the receipt covers, two
	// or more, in the order they ended: the meter seals the calls of one
	// session that end together under one signature. The receipt's token
	// and energy figures are then their sums, its status complete only if
	// all of theirs are, its time the last of theirs.
	Calls []Call `cbor:"calls,omitempty" json:"calls,omitempty"`
}

// Call is one unit of work of an efficiency receipt that covers several.
// It shares the receipt's unit, energy provenance, coverage and grants.
type Call struct {
	TimeMS             uint64 `cbor:"time_ms" json:"time_ms"`
	Model              string `cbor:"model,omitempty" json:"model,omitempty"`
	InputTokens        uint64 `cbor:"input_tokens" json:"input_tokens"`
	CachedInputTokens  uint64 `cbor:"cached_input_tokens" json:"cached_input_tokens"`
	CacheWriteTokens   uint64 `cbor:"cache_write_tokens" json:"cache_write_tokens"`
	OutputTokens       uint64 `cbor:"output_tokens" json:"output_tokens"`
	EstimatedUJ        uint64 `cbor:"estimated_uj" json:"estimated_uj"`
	Status             string `cbor:"status" json:"status"`
	Note               string `cbor:"note,omitempty" json:"note,omitempty"`
	Nonce              string `cbor:"nonce" json:"nonce"`
	MaxOutputRequested uint64 `cbor:"max_output_requested,omitempty" json:"max_output_requested,omitempty"`
	MaxOutputFitted    uint64 `cbor:"max_output_fitted,omitempty" json:"max_output_fitted,omitempty"`
}

// Cover makes e the receipt of calls, two or more: their list, and the
// figures, status, time and model that follow from them. A sum that
// overflows is left for Validate to refuse.
func (e *Efficiency) Cover(calls []Call) {
	e.Calls, e.Model = calls, calls[0].Model
	e.InputTokens, e.CachedInputTokens, e.CacheWriteTokens, e.OutputTokens, e.EstimatedUJ, e.TimeMS = 0, 0, 0, 0, 0, 0
	e.MaxOutputRequested, e.MaxOutputFitted, e.Status = 0, 0, StatusComplete
	for _, c := range calls {
		if c.Model != e.Model {
			e.Model = ""
		}
		e.InputTokens += c.InputTokens
		e.CachedInputTokens += c.CachedInputTokens
		e.CacheWriteTokens += c.CacheWriteTokens
		e.OutputTokens += c.OutputTokens
		e.EstimatedUJ += c.EstimatedUJ
		e.TimeMS = max(e.TimeMS, c.TimeMS)
		if c.Status != StatusComplete {
			e.Status = StatusIncomplete
		}
	}
}

// CallCount is how many units of work e covers: its calls, or itself.
func (e *Efficiency) CallCount() int {
	if len(e.Calls) > 0 {
		return len(e.Calls)
	}
	return 1
}

// FittedCount is how many of the calls e covers were fitted to their budget.
func (e *Efficiency) FittedCount() int {
	if len(e.Calls) == 0 {
		if e.MaxOutputFitted != 0 {
			return 1
		}
		return 0
	}
	n := 0
	for _, c := range e.Calls {
		if c.MaxOutputFitted != 0 {
			n++
		}
	}
	return n
}

// Split returns one efficiency core per call e covers: e itself when it
// covers one, else a copy of e for each of its calls with that call's
// figures, status, note, nonce and caps (and no calls list).
func (e *Efficiency) Split() []*Efficiency {
	if len(e.Calls) == 0 {
		return []*Efficiency{e}
	}
	out := make([]*Efficiency, len(e.Calls))
	for i, c := range e.Calls {
		one := *e
		one.Calls = nil
		one.TimeMS, one.Model, one.Status, one.Note, one.Nonce = c.TimeMS, c.Model, c.Status, c.Note, c.Nonce
		one.InputTokens, one.CachedInputTokens, one.CacheWriteTokens, one.OutputTokens = c.InputTokens, c.CachedInputTokens, c.CacheWriteTokens, c.OutputTokens
		one.EstimatedUJ, one.MaxOutputRequested, one.MaxOutputFitted = c.EstimatedUJ, c.MaxOutputRequested, c.MaxOutputFitted
		out[i] = &one
	}
	return out
}

// Nonces are the nonces e carries: its own and its calls'.
func (e *Efficiency) Nonces() []string {
	n := make([]string, 0, 1+len(e.Calls))
	n = append(n, e.Nonce)
	for _, c := range e.Calls {
		n = append(n, c.Nonce)
	}
	return n
}

// Coverage values of an efficiency receipt.
const (
	CoverageEnforced = "enforced" // metered where the call could be refused (the proxy)
	CoverageObserved = "observed" // from telemetry: observed, not enforced
	CoverageLocal    = "local"    // joule's own work (a tier of the cascade)
)

// Status values of an efficiency receipt.
const (
	StatusComplete   = "complete"
	StatusIncomplete = "incomplete"
)

// Header is what every session receipt carries for chaining.
type Header struct {
	Kind     string
	Session  string
	Sequence uint64
	Prev     core.ID
	Steward  string
}

// Validate checks a decision core's rules.
func (d *Decision) Validate() error {
	switch {
	case d.Kind != KindDecision:
		return fmt.Errorf("decision receipt: jc_receipt is %q", d.Kind)
	case d.Session == "" || d.Sequence == 0 || d.Steward == "":
		return errors.New("decision receipt: session, sequence and steward are required")
	case d.Decision != Allow && d.Decision != Deny && d.Decision != Ask && d.Decision != Rewrite:
		return fmt.Errorf("decision receipt: decision %q is not allow, deny, ask or rewrite", d.Decision)
	case d.Code == "":
		return errors.New("decision receipt: code is empty")
	case d.Provenance != core.Estimator && d.Provenance != core.ModelBased:
		return fmt.Errorf("decision receipt: energy_provenance %q (a debit is an estimate)", d.Provenance)
	case d.Decision == Deny && d.DebitUJ != 0:
		return errors.New("decision receipt: a deny debits nothing")
	case !core.ValidNonce(d.Nonce):
		return errors.New("decision receipt: nonce is not 32 lowercase hex digits")
	}
	return nil
}

// Validate checks an efficiency core's rules, the provenance coupling among them.
func (e *Efficiency) Validate() error {
	switch {
	case e.Kind != KindEfficiency:
		return fmt.Errorf("efficiency receipt: jc_receipt is %q", e.Kind)
	case e.Session == "" || e.Sequence == 0 || e.Steward == "" || e.Unit == "":
		return errors.New("efficiency receipt: session, sequence, unit and steward are required")
	case !e.Provenance.Valid():
		return fmt.Errorf("efficiency receipt: energy_provenance %q", e.Provenance)
	case (e.Provenance == core.HwShunt) != (e.MeasuredUJ != nil):
		return errors.New("efficiency receipt: measured_uj is present exactly when provenance is HwShunt")
	case e.Coverage != CoverageEnforced && e.Coverage != CoverageObserved && e.Coverage != CoverageLocal:
		return fmt.Errorf("efficiency receipt: coverage %q is not enforced, observed or local", e.Coverage)
	case e.Status != StatusComplete && e.Status != StatusIncomplete:
		return fmt.Errorf("efficiency receipt: status %q is not complete or incomplete", e.Status)
	case e.Tier != "" && !e.Tier.Valid():
		return fmt.Errorf("efficiency receipt: tier %q", e.Tier)
	case !core.ValidNonce(e.Nonce):
		return errors.New("efficiency receipt: nonce is not 32 lowercase hex digits")
	case (e.MaxOutputRequested == 0) != (e.MaxOutputFitted == 0):
		return errors.New("efficiency receipt: max_output_requested and max_output_fitted are present together")
	}
	if e.Calls != nil {
		return e.validateCalls()
	}
	return nil
}

// validateCalls checks that a receipt covering several calls is what its
// calls add up to.
func (e *Efficiency) validateCalls() error {
	if len(e.Calls) < 2 {
		return fmt.Errorf("efficiency receipt: %d calls (a receipt covers one call by itself, or two or more in calls)", len(e.Calls))
	}
	if e.MeasuredUJ != nil || e.MaxOutputFitted != 0 {
		return errors.New("efficiency receipt: measured_uj and the fitted caps belong to each call, not to a receipt of several")
	}
	var in, cached, write, out, uj, last uint64
	complete := true
	seen := map[string]bool{e.Nonce: true}
	for i, c := range e.Calls {
		switch {
		case c.Status != StatusComplete && c.Status != StatusIncomplete:
			return fmt.Errorf("efficiency receipt: call %d: status %q is not complete or incomplete", i, c.Status)
		case !core.ValidNonce(c.Nonce):
			return fmt.Errorf("efficiency receipt: call %d: nonce is not 32 lowercase hex digits", i)
		case seen[c.Nonce]:
			return fmt.Errorf("efficiency receipt: call %d: nonce %s appears twice", i, c.Nonce)
		case (c.MaxOutputRequested == 0) != (c.MaxOutputFitted == 0):
			return fmt.Errorf("efficiency receipt: call %d: max_output_requested and max_output_fitted are present together", i)
		case e.Model != "" && c.Model != e.Model:
			return fmt.Errorf("efficiency receipt: call %d: model %q, not the receipt's %q", i, c.Model, e.Model)
		}
		seen[c.Nonce] = true
		var ok [5]bool
		in, ok[0] = addOK(in, c.InputTokens)
		cached, ok[1] = addOK(cached, c.CachedInputTokens)
		write, ok[2] = addOK(write, c.CacheWriteTokens)
		out, ok[3] = addOK(out, c.OutputTokens)
		uj, ok[4] = addOK(uj, c.EstimatedUJ)
		if ok != [5]bool{true, true, true, true, true} {
			return fmt.Errorf("efficiency receipt: call %d: the sum of the calls' figures overflows", i)
		}
		last = max(last, c.TimeMS)
		complete = complete && c.Status == StatusComplete
	}
	switch {
	case in != e.InputTokens || cached != e.CachedInputTokens || write != e.CacheWriteTokens || out != e.OutputTokens:
		return errors.New("efficiency receipt: its token counts are not the sums of its calls'")
	case uj != e.EstimatedUJ:
		return errors.New("efficiency receipt: estimated_uj is not the sum of its calls'")
	case (e.Status == StatusComplete) != complete:
		return errors.New("efficiency receipt: status is complete exactly when every call's is")
	case e.TimeMS != last:
		return errors.New("efficiency receipt: time_ms is not the last of its calls'")
	}
	return nil
}

func addOK(a, b uint64) (uint64, bool) {
	s := a + b
	return s, s >= a
}

// Any is a decoded session receipt of either kind.
type Any struct {
	Header
	Decision   *Decision
	Efficiency *Efficiency
}

// Core returns the decoded core for display.
func (a *Any) Core() any {
	if a.Decision != nil {
		return a.Decision
	}
	return a.Efficiency
}

// kindProbe reads only jc_receipt, to pick the schema the payload is then
// decoded against strictly.
var kindProbe, _ = cbor.DecOptions{DupMapKey: cbor.DupMapKeyEnforcedAPF, IndefLength: cbor.IndefLengthForbidden}.DecMode()

// Decode decodes a canonical session receipt payload of either kind.
func Decode(payload []byte) (*Any, error) {
	var probe struct {
		Kind string `cbor:"jc_receipt"`
	}
	if err := kindProbe.Unmarshal(payload, &probe); err != nil {
		return nil, fmt.Errorf("receipt payload: %w", err)
	}
	switch probe.Kind {
	case KindDecision:
		d := new(Decision)
		if err := decodeCanonical(payload, d); err != nil {
			return nil, err
		}
		if err := d.Validate(); err != nil {
			return nil, err
		}
		return &Any{Header: Header{d.Kind, d.Session, d.Sequence, d.Prev, d.Steward}, Decision: d}, nil
	case KindEfficiency:
		e := new(Efficiency)
		if err := decodeCanonical(payload, e); err != nil {
			return nil, err
		}
		if err := e.Validate(); err != nil {
			return nil, err
		}
		return &Any{Header: Header{e.Kind, e.Session, e.Sequence, e.Prev, e.Steward}, Efficiency: e}, nil
	}
	return nil, fmt.Errorf("receipt payload: unknown kind %q", probe.Kind)
}

func decodeCanonical(b []byte, v any) error { return core.DecodeCanonical("receipt payload", b, v) }

// AppendEncoded appends the canonical CBOR of a decision or efficiency core
// to buf after validating it, for a caller that reuses buf.
func AppendEncoded(buf *bytes.Buffer, c interface{ Validate() error }) error {
	if err := c.Validate(); err != nil {
		return err
	}
	return core.AppendCanonical(buf, c)
}

// Encode returns the canonical CBOR of a decision or efficiency core after
// validating it.
func Encode(c interface{ Validate() error }) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return core.Canonical(c)
}

package receipts

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/fxamacker/cbor/v2"

	"github.com/joulehook/joule/core"
)

// Export formats: how a session's chain is written for a verifier that
// holds only the steward's public key (docs/receipts.md, "Chains").
const (
	ExportCBOR  = "cbor"  // a CBOR sequence (RFC 8742) of COSE_Sign1 envelopes
	ExportJSONL = "jsonl" // one ExportLine per line
)

// ExportLine is one line of a JSON-lines export: one receipt's envelope,
// where its store kept it, and the verdict it had there. Only Envelope is
// read back; the rest is for a person. The fields are in the order
// encoding/json would sort them as map keys, the order exports have
// always had.
type ExportLine struct {
	Envelope string `json:"envelope"` // base64url without padding
	Hash     string `json:"hash"`     // chain hash, base64url
	Index    int64  `json:"index"`    // leaf index in the store's log
	Reason   string `json:"reason,omitempty"`
	Sequence uint64 `json:"sequence"`
	Session  string `json:"session"`
	Verdict  string `json:"verdict"`
}

// MaxExportLine bounds one line of a JSON-lines export, in bytes.
const MaxExportLine = 16 << 20

// SplitExport splits an export in format (ExportCBOR or ExportJSONL) into
// its envelopes, in order, without verifying them: a CBOR sequence item by
// item (well-formed CBOR, each kept byte for byte), JSON lines by their
// "envelope" member (blank lines skipped). The error names the item or
// line that does not parse.
func SplitExport(data []byte, format string) ([][]byte, error) {
	switch format {
	case ExportJSONL:
		return splitLines(data)
	case ExportCBOR:
		return splitSequence(data)
	}
	return nil, fmt.Errorf("export format %q: want %s or %s", format, ExportCBOR, ExportJSONL)
}

// ExportFormat tells the two export formats apart by their first byte: a
// JSON line opens with '{', a CBOR sequence of envelopes with the
// COSE_Sign1 tag (0xd2), never with '{' (a short text string).
func ExportFormat(data []byte) string {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		return ExportJSONL
	}
	return ExportCBOR
}

func splitLines(data []byte) ([][]byte, error) {
	var envs [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), MaxExportLine)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var line struct {
			Envelope string `json:"envelope"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		b, err := base64.RawURLEncoding.Strict().DecodeString(line.Envelope)
		if err != nil {
			return nil, fmt.Errorf("line %d: envelope: %v", n, err)
		}
		envs = append(envs, b)
	}
	return envs, sc.Err()
}

func splitSequence(data []byte) ([][]byte, error) {
	var envs [][]byte
	dec := cbor.NewDecoder(bytes.NewReader(data))
	for {
		var raw cbor.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			return envs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("receipt %d of the CBOR sequence: %v", len(envs)+1, err)
		}
		envs = append(envs, []byte(raw))
	}
}

// ErrEmptyExport is VerifyExport's error for an export with no receipts.
var ErrEmptyExport = errors.New("the export holds no receipts")

// ExportError is VerifyExport's error for an export with damaged receipts.
type ExportError struct {
	Damaged int // receipts whose verdict is not ok
	Total   int
	First   int // 1-based position of the first
}

func (e *ExportError) Error() string {
	return fmt.Sprintf("%d of %d receipts damaged; the first bad position is receipt %d of the export", e.Damaged, e.Total, e.First)
}

// VerifyExport judges every receipt of an export (its envelopes, in order,
// as SplitExport returns them) as one session's chain: the verdict of
// each (Keys.Verdicts), so that all the damage is seen, not only the first,
// and an *ExportError when any is not ok, or ErrEmptyExport.
func (k Keys) VerifyExport(envs [][]byte) ([]Verdict, error) {
	if len(envs) == 0 {
		return nil, ErrEmptyExport
	}
	verdicts := k.Verdicts(envs)
	if n, first := Damaged(verdicts); n > 0 {
		return verdicts, &ExportError{Damaged: n, Total: len(envs), First: first + 1}
	}
	return verdicts, nil
}

// Damaged counts the verdicts that are not ok and finds the first (its
// index, -1 when there is none).
func Damaged(verdicts []Verdict) (n, first int) {
	first = -1
	for i, v := range verdicts {
		if v.Verdict != VerdictOK {
			if first < 0 {
				first = i
			}
			n++
		}
	}
	return n, first
}

// VerdictBadRow is the verdict of a receipt that verifies but whose
// stored row does not (CheckRow).
const VerdictBadRow = "bad-row"

// CheckRow adds to v, a receipt's verdict within its chain, what only the
// store's row for it can tell: fault, the store's account of how the row
// breaks its invariants (a stored hash that is not the envelope's, a
// malformed column; "" when none), and a sequence or prev column that is
// not the signed receipt's. A receipt that verifies but whose row does not
// becomes VerdictBadRow; a damaged one keeps its verdict, with the row's
// fault added to its reason.
func (v *Verdict) CheckRow(seq uint64, prev core.ID, fault string) {
	switch {
	case v.Verdict != VerdictOK:
		if fault != "" {
			v.Reason += "; row: " + fault
		}
	case fault != "":
		v.Verdict, v.Reason = VerdictBadRow, fault
	case v.Receipt.Sequence != seq || v.Receipt.Prev != prev:
		v.Verdict, v.Reason = VerdictBadRow, fmt.Sprintf("the row says seq %d, the signed receipt seq %d", seq, v.Receipt.Sequence)
	}
}

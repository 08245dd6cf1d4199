package witness

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/joulehook/joule/core/store"
)

// ProofHeader is the first line of a tlog proof (c2sp.org/tlog-proof).
const ProofHeader = "c2sp.org/tlog-proof@v1"

// MaxProofSize bounds a tlog proof file: a checkpoint with a few dozen
// cosignatures, 63 proof hashes and a receipt.
const MaxProofSize = 1 << 20

// Proof is an offline proof that one entry is in a log (a tlog proof, or
// "spicy signature"): the entry's index, its inclusion proof, and the
// checkpoint it is proved against, signed by the log and cosigned by
// witnesses. joule puts the receipt envelope itself in Extra, so that the
// file alone is what a verifier needs besides the keys.
type Proof struct {
	Extra      []byte // nil: no extra line
	Index      int64
	Inclusion  tlog.RecordProof
	Checkpoint []byte // a signed note
}

// Marshal encodes p as a tlog proof.
func (p Proof) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString(ProofHeader + "\n")
	if p.Extra != nil {
		b.WriteString("extra " + base64.StdEncoding.EncodeToString(p.Extra) + "\n")
	}
	fmt.Fprintf(&b, "index %d\n", p.Index)
	for _, h := range p.Inclusion {
		b.WriteString(h.String() + "\n")
	}
	b.WriteString("\n")
	b.Write(p.Checkpoint)
	return b.Bytes()
}

// ParseProof parses a tlog proof, as strictly as Marshal writes one. The
// checkpoint is for Verify to check.
func ParseProof(b []byte) (Proof, error) {
	if len(b) > MaxProofSize {
		return Proof{}, fmt.Errorf("tlog proof of %d bytes, limit %d", len(b), MaxProofSize)
	}
	head, cp, ok := bytes.Cut(b, []byte("\n\n"))
	if !ok || len(cp) == 0 {
		return Proof{}, errors.New("not a tlog proof: no checkpoint after an empty line")
	}
	lines := strings.Split(string(head), "\n")
	if lines[0] != ProofHeader {
		return Proof{}, fmt.Errorf("not a tlog proof: the first line is %q, want %q", clip(lines[0]), ProofHeader)
	}
	lines = lines[1:]
	var p Proof
	if len(lines) > 0 {
		if extra, ok := strings.CutPrefix(lines[0], "extra "); ok {
			e, err := base64.StdEncoding.Strict().DecodeString(extra)
			if err != nil {
				return Proof{}, fmt.Errorf("tlog proof: the extra line is not base64: %v", err)
			}
			p.Extra = e
			lines = lines[1:]
		}
	}
	if len(lines) == 0 {
		return Proof{}, errors.New("tlog proof: no index line")
	}
	idx, ok := strings.CutPrefix(lines[0], "index ")
	n, err := strconv.ParseInt(idx, 10, 64)
	if !ok || err != nil || n < 0 || strconv.FormatInt(n, 10) != idx {
		return Proof{}, fmt.Errorf("tlog proof: %q is not \"index N\" with a canonical decimal", clip(lines[0]))
	}
	p.Index = n
	if len(lines)-1 > MaxProofLines {
		return Proof{}, fmt.Errorf("tlog proof: %d inclusion proof lines, at most %d", len(lines)-1, MaxProofLines)
	}
	for _, l := range lines[1:] {
		h, err := tlog.ParseHash(l)
		if err != nil || h.String() != l {
			return Proof{}, fmt.Errorf("tlog proof: inclusion proof line %q is not a canonical base64 hash", clip(l))
		}
		p.Inclusion = append(p.Inclusion, h)
	}
	p.Checkpoint = cp
	return p, nil
}

// Policy is what a verifier trusts: the log's origin and key, its
// witnesses' keys, and how many of them must have cosigned.
type Policy struct {
	Origin    string
	Log       note.Verifier
	Witnesses []note.Verifier
	Quorum    int
}

// Cosigned is one witness's verified cosignature.
type Cosigned struct {
	Witness string
	Time    time.Time
}

// Verified is what a proof proved.
type Verified struct {
	Checkpoint store.Checkpoint
	Cosigned   []Cosigned
}

// Verify checks p against pol for the entry record (its leaf is
// tlog.RecordHash(record)): the checkpoint signed by the log's key for
// its origin, at least Quorum of the witnesses' cosignatures, and the
// inclusion proof from the leaf to the checkpoint's root.
func (p Proof) Verify(record []byte, pol Policy) (Verified, error) {
	vs := append([]note.Verifier{pol.Log}, pol.Witnesses...)
	n, err := note.Open(p.Checkpoint, note.VerifierList(vs...))
	if err != nil {
		return Verified{}, fmt.Errorf("the checkpoint: %v", err)
	}
	var out Verified
	logSigned := false
	for _, s := range n.Sigs {
		if s.Name == pol.Log.Name() && s.Hash == pol.Log.KeyHash() {
			logSigned = true
			continue
		}
		t, err := SignatureTime(s)
		if err != nil {
			return Verified{}, err
		}
		out.Cosigned = append(out.Cosigned, Cosigned{Witness: s.Name, Time: t})
	}
	if !logSigned {
		return Verified{}, fmt.Errorf("the checkpoint is not signed by the log's key %s", pol.Log.Name())
	}
	cp, err := store.ParseCheckpoint([]byte(n.Text))
	if err != nil {
		return Verified{}, err
	}
	out.Checkpoint = cp
	if cp.Origin != pol.Origin {
		return Verified{}, fmt.Errorf("the checkpoint is of the log %q, not %q", cp.Origin, pol.Origin)
	}
	if len(out.Cosigned) < pol.Quorum {
		return out, fmt.Errorf("%d of the %d witnesses given cosigned the checkpoint, %d required", len(out.Cosigned), len(pol.Witnesses), pol.Quorum)
	}
	if p.Index >= cp.Size {
		return out, fmt.Errorf("index %d is outside the checkpoint's log of size %d", p.Index, cp.Size)
	}
	if err := tlog.CheckRecord(p.Inclusion, cp.Size, cp.Root, p.Index, tlog.RecordHash(record)); err != nil {
		return out, fmt.Errorf("the inclusion proof of entry %d does not lead to the checkpoint's root: %v", p.Index, err)
	}
	return out, nil
}

package witness

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// MaxProofLines is the most consistency proof lines an add-checkpoint
// request may carry (c2sp.org/tlog-witness): a proof between trees of
// up to 2^63 leaves.
const MaxProofLines = 63

// MaxRequestSize bounds an add-checkpoint request body, as litewitness
// does (10 KiB): a checkpoint with its signatures and a full proof is a
// few KiB.
const MaxRequestSize = 10 << 10

// AddCheckpoint is the body of an add-checkpoint request: the size of
// the checkpoint the witness last cosigned for the log, a consistency
// proof from it, and the new checkpoint, a signed note.
type AddCheckpoint struct {
	OldSize    int64
	Proof      tlog.TreeProof
	Checkpoint []byte
}

// Body encodes r: "old N", one base64 hash a line, an empty line, the
// checkpoint.
func (r AddCheckpoint) Body() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "old %d\n", r.OldSize)
	for _, h := range r.Proof {
		b.WriteString(h.String())
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.Write(r.Checkpoint)
	return b.Bytes()
}

// ParseAddCheckpoint parses an add-checkpoint request body, as strictly
// as the protocol writes it: a canonical old size, at most MaxProofLines
// canonical base64 hashes, and a checkpoint after the empty line. The
// checkpoint itself is for the caller to verify.
func ParseAddCheckpoint(body []byte) (AddCheckpoint, error) {
	if len(body) > MaxRequestSize {
		return AddCheckpoint{}, fmt.Errorf("request of %d bytes, limit %d", len(body), MaxRequestSize)
	}
	head, cp, ok := bytes.Cut(body, []byte("\n\n"))
	if !ok {
		return AddCheckpoint{}, errors.New("no empty line between the proof and the checkpoint")
	}
	if len(cp) == 0 {
		return AddCheckpoint{}, errors.New("no checkpoint after the empty line")
	}
	lines := strings.Split(string(head), "\n")
	size, ok := strings.CutPrefix(lines[0], "old ")
	if !ok {
		return AddCheckpoint{}, fmt.Errorf("first line %q is not \"old SIZE\"", clip(lines[0]))
	}
	old, err := strconv.ParseInt(size, 10, 64)
	if err != nil || old < 0 || strconv.FormatInt(old, 10) != size {
		return AddCheckpoint{}, fmt.Errorf("old size %q is not a canonical decimal", clip(size))
	}
	if len(lines)-1 > MaxProofLines {
		return AddCheckpoint{}, fmt.Errorf("%d consistency proof lines, at most %d", len(lines)-1, MaxProofLines)
	}
	r := AddCheckpoint{OldSize: old, Checkpoint: cp}
	for _, l := range lines[1:] {
		h, err := tlog.ParseHash(l)
		if err != nil || h.String() != l {
			return AddCheckpoint{}, fmt.Errorf("proof line %q is not a canonical base64 hash", clip(l))
		}
		r.Proof = append(r.Proof, h)
	}
	return r, nil
}

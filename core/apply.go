package core

import (
	"bytes"
	"errors"
	"fmt"

	"lukechampine.com/blake3"
)

// ErrStalePrior reports an op applied to a tree other than its prior.
var ErrStalePrior = errors.New("stale prior: the tree is not the state the op builds on")

// AnchorError reports an edit whose anchor does not select exactly one place
// in the file as the edits before it left it.
type AnchorError struct {
	Edit   int    // index of the edit in the op
	Path   string // the file it targets
	Reason string
}

func (e *AnchorError) Error() string {
	return fmt.Sprintf("edit %d (%s): %s", e.Edit, e.Path, e.Reason)
}

// maxHunkSearch bounds the exhaustive hunk search in hash finalisations; a
// hunk that is not line-aligned in a large file is reported, not searched
// for minutes.
const maxHunkSearch = 1 << 23

// Apply applies op to files, which must be exactly the op's prior state, and
// returns the successor state. files is not modified.
func Apply(files Files, op *CodingOp) (Files, error) { return ApplyWith(files, op, nil) }

// ApplyWith is Apply with the files' tree state summed by sum (nil means Sum).
func ApplyWith(files Files, op *CodingOp, sum SumFunc) (Files, error) {
	if err := op.Validate(); err != nil {
		return nil, err
	}
	t, err := files.TreeWith(sum)
	if err != nil {
		return nil, err
	}
	if got := t.ID(); got != op.Prior {
		return nil, fmt.Errorf("%w (tree %s, op prior %s)", ErrStalePrior, got, op.Prior)
	}
	out := files.Clone()
	for i, e := range op.Edits {
		cur, exists := out[e.Path]
		start, end, err := locate(cur, exists, e.Anchor)
		if err != nil {
			return nil, &AnchorError{Edit: i, Path: e.Path, Reason: err.Error()}
		}
		next := make([]byte, 0, len(cur)-int(end-start)+len(e.Replacement))
		next = append(next, cur[:start]...)
		next = append(next, e.Replacement...)
		next = append(next, cur[end:]...)
		out[e.Path] = next
	}
	return out, nil
}

// locate returns the byte range an anchor selects in content.
func locate(content []byte, exists bool, a Anchor) (start, end uint64, err error) {
	if err := a.validate(); err != nil {
		return 0, 0, err
	}
	if !exists {
		if a.Range != nil && a.Range[0] == 0 && a.Range[1] == 0 {
			return 0, 0, nil
		}
		return 0, 0, errors.New("file is absent from the tree; only a range [0,0] edit may create it")
	}
	if a.Range != nil {
		if a.Range[1] > uint64(len(content)) {
			return 0, 0, fmt.Errorf("stale anchor: range [%d, %d) lies beyond the file's %d bytes", a.Range[0], a.Range[1], len(content))
		}
		return a.Range[0], a.Range[1], nil
	}
	s, e, err := findHunk(content, *a.Hunk)
	return uint64(s), uint64(e), err
}

// findHunk finds the one place in content whose bytes hash to h. A hunk
// carries no length, so candidates are searched line-aligned first, then
// exhaustively within maxHunkSearch; once found, the bytes are counted in the
// whole file to prove the match is unique.
func findHunk(content []byte, h ID) (int, int, error) {
	s, e, ok := searchHunk(content, h)
	if !ok {
		if len(content)*(len(content)+1)/2 > maxHunkSearch {
			return 0, 0, fmt.Errorf("stale anchor: no line-aligned hunk %s in the file, and at %d bytes it is too large for an exhaustive search", h, len(content))
		}
		return 0, 0, fmt.Errorf("stale anchor: hunk %s does not occur in the file", h)
	}
	if n := countOverlapping(content, content[s:e]); n > 1 {
		return 0, 0, fmt.Errorf("ambiguous anchor: hunk %s occurs %d times in the file", h, n)
	}
	return s, e, nil
}

func searchHunk(content []byte, h ID) (int, int, bool) {
	var sum ID
	// Line-aligned spans: each start is a line start, each end a line end.
	starts := []int{0}
	for i, c := range content {
		if c == '\n' && i+1 < len(content) {
			starts = append(starts, i+1)
		}
	}
	for _, s := range starts {
		hasher := blake3.New(32, nil)
		prev := s
		for i := s; i <= len(content); i++ {
			if i < len(content) && content[i] != '\n' {
				continue
			}
			end := i
			if i < len(content) {
				end = i + 1
			}
			hasher.Write(content[prev:end])
			prev = end
			if hasher.Sum(sum[:0]); sum == h {
				return s, end, true
			}
		}
	}
	if Sum(nil) == h {
		return 0, 0, true // the empty hunk; uniqueness is checked by the caller
	}
	// Exhaustive: every [s, e), incrementally per start.
	if len(content)*(len(content)+1)/2 > maxHunkSearch {
		return 0, 0, false
	}
	for s := 0; s < len(content); s++ {
		hasher := blake3.New(32, nil)
		for e := s + 1; e <= len(content); e++ {
			hasher.Write(content[e-1 : e])
			if hasher.Sum(sum[:0]); sum == h {
				return s, e, true
			}
		}
	}
	return 0, 0, false
}

// countOverlapping counts the occurrences of sub in b, overlaps included;
// the empty string occurs len(b)+1 times.
func countOverlapping(b, sub []byte) int {
	if len(sub) == 0 {
		return len(b) + 1
	}
	n := 0
	for i := 0; ; {
		j := bytes.Index(b[i:], sub)
		if j < 0 {
			return n
		}
		n++
		i += j + 1
	}
}

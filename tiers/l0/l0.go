// Package l0 is the cascade's cache tier: a request closes here only when
// exactly the same normalized request was closed before on exactly the same
// tree state, and then the stored signed op is replayed. Never a similarity
// match.
package l0

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers"
)

// Dir is the cache's directory name inside $JOULE_HOME.
const Dir = "l0"

// keyDomain separates cache keys from every other content address.
const keyDomain = "joule-l0/1"

// Cache is a content-addressed store of signed ops, one file per key, under
// a directory. Writes are atomic (a temporary file renamed into place), so
// concurrent joule processes share it safely.
type Cache struct{ dir string }

// Open returns the cache in dir, creating it (0700) if missing.
func Open(dir string) (*Cache, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("l0 cache: %w", err)
	}
	return &Cache{dir: dir}, nil
}

// Normalize is the request form the key is computed over: surrounding blank
// space dropped, line endings made \n and trailing blanks of each line
// removed; a one-line request also has its inner runs of blanks folded. Case
// and every other byte are kept: "rename a to B" and "rename A to B" differ.
func Normalize(prompt string) string {
	p := strings.ReplaceAll(strings.TrimSpace(prompt), "\r\n", "\n")
	if !strings.Contains(p, "\n") {
		return strings.Join(strings.Fields(p), " ")
	}
	lines := strings.Split(p, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.Join(lines, "\n")
}

// Key is the content address of a request on a tree state: BLAKE3-256 over
// the canonical CBOR array ["joule-l0/1", normalized request, tree id].
func Key(prompt string, tree core.ID) (core.ID, error) {
	b, err := core.Canonical([]any{keyDomain, Normalize(prompt), tree[:]})
	if err != nil {
		return core.ID{}, err
	}
	return core.Sum(b), nil
}

func (c *Cache) path(k core.ID) string { return filepath.Join(c.dir, k.String()+".op") }

// Put records that op closed prompt on its prior tree state.
func (c *Cache) Put(prompt string, op *core.SignedOp) error {
	k, err := Key(prompt, op.Op.Prior)
	if err != nil {
		return err
	}
	b, err := op.Encode()
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(c.dir, ".put-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), c.path(k))
}

// ErrCorrupt reports a cache entry that does not decode or verify; it is a
// miss, never a replay.
var ErrCorrupt = errors.New("l0 cache entry is corrupt")

// Get returns the op stored for prompt on tree, or (nil, nil) on a miss.
// The entry is verified: its signature, its author (author must match when
// given), and that its prior is tree.
func (c *Cache) Get(prompt string, tree core.ID, author ed25519.PublicKey) (*core.SignedOp, error) {
	k, err := Key(prompt, tree)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(c.path(k))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	op, _, err := core.OpenSignedOp(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if op.Op.Prior != tree || Normalize(op.Op.Intent) != Normalize(prompt) {
		return nil, fmt.Errorf("%w: it is not an op for this request and tree", ErrCorrupt)
	}
	if author != nil && !bytes.Equal(op.Op.Author[:], author) {
		return nil, fmt.Errorf("%w: signed by another author", ErrCorrupt)
	}
	return op, nil
}

// Stage is the L0 tier over a cache.
type Stage struct {
	Cache    *Cache
	Author   ed25519.PublicKey // only ops by this key are replayed
	Snapshot func(ctx context.Context, root string) (core.Files, error)
}

var _ tiers.Stage = (*Stage)(nil)

// Tier implements tiers.Stage.
func (s *Stage) Tier() core.Tier { return core.L0 }

// TryResolve implements tiers.Stage.
func (s *Stage) TryResolve(ctx context.Context, req *tiers.Request) (*tiers.Resolution, error) {
	var files core.Files
	var err error
	if s.Snapshot != nil {
		files, err = s.Snapshot(ctx, req.Root)
	} else {
		files, err = core.ReadDir(req.Root)
	}
	if err != nil {
		return nil, err
	}
	tree, err := req.Tree(files)
	if err != nil {
		return nil, err
	}
	op, err := s.Cache.Get(req.Prompt, tree.ID(), s.Author)
	if op == nil || err != nil {
		return nil, err
	}
	id, _ := op.Op.ID()
	return &tiers.Resolution{Op: op, Answer: fmt.Sprintf("replayed op %s, cached when %s closed this request on this tree", id, op.Op.Tier)}, nil
}

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/joulehook/joule/core/store"
)

// WitnessDir holds, in $JOULE_HOME, the newest signed checkpoint of each
// store this home has appended to (docs/receipts.md, "The witness").
const WitnessDir = "witness"

// witnessConfig is config.json's "witness": further witness files and a
// witness command, for the home's configured store.
type witnessConfig struct {
	Files   []string
	Command []string
	Timeout time.Duration
}

// witnessFile is its JSON shape.
type witnessFile struct {
	Files   []string `json:"files"`
	Command []string `json:"command"`
	Timeout string   `json:"timeout"`
}

func (f *witnessFile) parse(home string) (witnessConfig, error) {
	c := witnessConfig{Command: f.Command}
	for _, p := range f.Files {
		if p == "" {
			return c, errors.New("files: an empty path")
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(home, p)
		}
		c.Files = append(c.Files, filepath.Clean(p))
	}
	if len(f.Command) > 0 && f.Command[0] == "" {
		return c, errors.New("command: an empty program name")
	}
	if f.Timeout != "" {
		d, err := time.ParseDuration(f.Timeout)
		if err != nil || d <= 0 {
			return c, fmt.Errorf("timeout %q: want a positive duration such as 5s", f.Timeout)
		}
		c.Timeout = d
	}
	return c, nil
}

// witnessPath is the home's own witness file for the store at loc:
// witness/checkpoint for the home's default store, else one named after
// the location (a URL without its password), so that a home that also
// opens other stores keeps a witness for each.
func witnessPath(home, loc string) string {
	if loc == filepath.Join(home, StoreFile) {
		return filepath.Join(home, WitnessDir, "checkpoint")
	}
	sum := sha256.Sum256([]byte(showStore(loc)))
	return filepath.Join(home, WitnessDir, "checkpoint-"+hex.EncodeToString(sum[:8]))
}

// witnessFor is the witness of the store at loc opened from home: the
// home's own file, and for the home's configured store the files and the
// command of config.json.
func witnessFor(home, loc string, configured bool, cfg *config, signer note.Signer, verifierKey string) (*store.Witness, error) {
	v, err := note.NewVerifier(verifierKey)
	if err != nil {
		return nil, err
	}
	primary := witnessPath(home, loc)
	w := &store.Witness{
		Origin:   logOrigin(signer.Name()),
		Signer:   signer,
		Verifier: v,
		Files:    []string{primary},
		OnError:  func(err error) { fmt.Fprintf(os.Stderr, "joule: %v\n", err) },
	}
	if host, err := os.Hostname(); err == nil {
		w.Marker = host + ":" + primary
	} else {
		w.Marker = primary
	}
	if configured && cfg != nil {
		w.Files = append(w.Files, cfg.Witness.Files...)
		w.Command, w.CommandTimeout = cfg.Witness.Command, cfg.Witness.Timeout
	}
	return w, nil
}

// witnessProblem checks the endpoint's store against its witness: nil, or
// the error (wrapping store.ErrRolledBack or store.ErrWitnessInvalid) to
// report, with the way out.
func (ep *endpoint) witnessProblem(ctx context.Context) error {
	_, _, err := ep.store.WitnessState(ctx)
	if err == nil {
		return nil
	}
	if errors.Is(err, store.ErrRolledBack) || errors.Is(err, store.ErrWitnessInvalid) {
		return withHint(err, recoverHint)
	}
	return err
}

// recoverHint is the way out of a store refused by its witness.
const recoverHint = "nothing is decided until the loss is accepted: inspect with 'joule store check', then run 'joule store accept-loss' to record the loss as a signed receipt and re-anchor the witness"

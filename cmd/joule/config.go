package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/grant"
)

// ConfigFile is joule's configuration in $JOULE_HOME (docs/config.md).
const ConfigFile = "config.json"

// config is the parsed configuration file.
type config struct {
	Costs       gate.Costs
	LockTimeout time.Duration // how long a decision waits for the store's write lock; 0: the store's default

	// Sections other commands parse themselves (see tiersconfig.go and
	// storeconfig.go): kept raw so each stays next to its command.
	Tiers json.RawMessage
	Store string // where the ledger and receipts live: a path or a postgres:// URL

	// ExecFallback is what joule exec does where the kernel has no
	// Landlock: "refuse" (the default) or "unconfined" (run the program,
	// analysis alone having judged it).
	ExecFallback string
	// Witness lists further places the log's checkpoints are kept
	// (witness.go).
	Witness witnessConfig
}

// configFile is its JSON shape: energies as strings with units ("50mJ").
type configFile struct {
	Costs        map[string]string `json:"costs"`
	LockTimeout  string            `json:"lock_timeout"`
	Tiers        json.RawMessage   `json:"tiers,omitempty"`
	Store        string            `json:"store,omitempty"`
	ExecFallback string            `json:"exec_fallback,omitempty"`
	Witness      *witnessFile      `json:"witness,omitempty"`
}

func loadConfig(home string) (*config, error) {
	path := filepath.Join(home, ConfigFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &config{}, nil
	}
	if err != nil {
		return nil, err
	}
	var f configFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	cfg := &config{Costs: gate.Costs{}, Tiers: f.Tiers, Store: f.Store, ExecFallback: f.ExecFallback}
	switch f.ExecFallback {
	case "", "refuse", "unconfined":
	default:
		return nil, fmt.Errorf("%s: exec_fallback %q: want \"refuse\" or \"unconfined\"", path, f.ExecFallback)
	}
	if f.Witness != nil {
		if cfg.Witness, err = f.Witness.parse(home); err != nil {
			return nil, fmt.Errorf("%s: witness: %v", path, err)
		}
	}
	if f.LockTimeout != "" {
		d, err := time.ParseDuration(f.LockTimeout)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%s: lock_timeout %q: want a positive duration such as 2s", path, f.LockTimeout)
		}
		cfg.LockTimeout = d
	}
	for tool, s := range f.Costs {
		uj, err := grant.ParseEnergy(s)
		if err != nil {
			return nil, fmt.Errorf("%s: costs.%s: %v", path, tool, err)
		}
		cfg.Costs[tool] = uj
	}
	return cfg, nil
}

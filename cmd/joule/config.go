package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/grant"
)

// ConfigFile is joule's configuration in $JOULE_HOME (docs/config.md).
const ConfigFile = "config.json"

// config is the parsed configuration file.
type config struct {
	Costs gate.Costs
}

// configFile is its JSON shape: energies as strings with units ("50mJ").
type configFile struct {
	Costs map[string]string `json:"costs"`
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
	cfg := &config{Costs: gate.Costs{}}
	for tool, s := range f.Costs {
		uj, err := grant.ParseEnergy(s)
		if err != nil {
			return nil, fmt.Errorf("%s: costs.%s: %v", path, tool, err)
		}
		cfg.Costs[tool] = uj
	}
	return cfg, nil
}

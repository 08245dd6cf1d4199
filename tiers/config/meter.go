package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/joulehook/joule/core/grant"
	"github.com/joulehook/joule/energy"
)

// MeterFile is the meter's configuration in $JOULE_HOME (docs/meter.md).
const MeterFile = "meter.json"

// Meter is meter.json, parsed.
type Meter struct {
	// Upstreams are the base URLs the proxy forwards to, "" for the
	// built-in default (a flag overrides either).
	Upstreams Upstreams
	// Table is the model classes, rates, output caps and calibrations,
	// validated.
	Table *energy.Table
}

// Upstreams is meter.json's "upstreams".
type Upstreams struct {
	Anthropic string `json:"anthropic"`
	OpenAI    string `json:"openai"`
	Ollama    string `json:"ollama"`
	Gemini    string `json:"gemini"`
}

// meterFile is meter.json's JSON shape: energies as strings with units.
type meterFile struct {
	Upstreams    Upstreams                          `json:"upstreams"`
	Classes      []energy.ClassRule                 `json:"classes"`
	Rates        map[energy.Class]map[string]string `json:"rates"`
	OutputCaps   map[energy.Class]uint64            `json:"output_caps"`
	Calibrations []struct {
		Model string            `json:"model"`
		ID    string            `json:"id"`
		Rates map[string]string `json:"rates"`
	} `json:"calibrations"`
}

// LoadMeter reads home's meter.json; a missing file is the defaults.
func LoadMeter(home string) (*Meter, error) {
	path := filepath.Join(home, MeterFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &Meter{Table: &energy.Table{}}, nil
	}
	if err != nil {
		return nil, err
	}
	m, err := ParseMeter(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// ParseMeter reads the text of a meter.json.
func ParseMeter(data []byte) (*Meter, error) {
	var f meterFile
	if err := decode(data, &f); err != nil {
		return nil, err
	}
	t := &energy.Table{Rules: f.Classes, OutputCaps: f.OutputCaps, Rates: map[energy.Class]energy.Rates{}}
	for _, class := range sortedKeys(f.Rates) {
		rates, err := parseRates(f.Rates[class])
		if err != nil {
			return nil, fmt.Errorf("rates.%s.%v", class, err)
		}
		t.Rates[class] = rates
	}
	for i, c := range f.Calibrations {
		rates, err := parseRates(c.Rates)
		if err != nil {
			return nil, fmt.Errorf("calibrations[%d].rates.%v", i, err)
		}
		t.Calibrations = append(t.Calibrations, energy.Calibration{Model: c.Model, ID: c.ID, Rates: rates})
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &Meter{Upstreams: f.Upstreams, Table: t}, nil
}

// parseRates reads per-token energies with units: {"input": "500mJ",
// "cached": "50mJ", "output": "3J"}. Its errors start with the key.
func parseRates(m map[string]string) (energy.Rates, error) {
	var r energy.Rates
	for _, k := range sortedKeys(m) {
		var dst *uint64
		switch k {
		case "input":
			dst = &r.InputUJ
		case "cached":
			dst = &r.CachedUJ
		case "output":
			dst = &r.OutputUJ
		default:
			return r, fmt.Errorf("%s: unknown rate (known: cached, input, output)", k)
		}
		uj, err := grant.ParseEnergy(m[k])
		if err != nil {
			return r, fmt.Errorf("%s: %v", k, err)
		}
		*dst = uj
	}
	return r, nil
}

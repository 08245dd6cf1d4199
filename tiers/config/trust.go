package config

import (
	"encoding/json"
	"slices"

	"github.com/joulehook/joule/core"
)

// TrustDigest is the digest of the settings of c that decide what the gate
// allows or how its history is kept: the costs it debits, what joule exec
// does without Landlock, the witness, and a team's administrators. A home's signed chain records it
// (core/trust), and a decision is refused while config.json says otherwise
// ("config-unsigned"): an edit that lowers a cost, lets commands run
// unconfined or drops a witness takes a receipt. The store's location is
// bound by the witness instead, and the tiers section decides nothing the
// gate allows. lock_timeout is in it: raised, a decision waits that long
// behind a held lock, past a host's hook timeout (which some hosts treat
// as an allow), so it takes a receipt too; unset, it leaves the digest a
// home had before it was covered.
func (c *Config) TrustDigest() core.ID {
	type cosigner struct {
		Name string `json:"name"`
		URL  string `json:"url"`
		VKey string `json:"vkey"`
	}
	view := struct {
		Costs        map[string]uint64 `json:"costs"`
		ExecFallback string            `json:"exec_fallback"`
		Files        []string          `json:"witness_files"`
		Command      []string          `json:"witness_command"`
		TimeoutNS    int64             `json:"witness_timeout_ns"`
		Sync         bool              `json:"witness_sync"`
		Witnesses    []cosigner        `json:"witnesses"`
		Quorum       int               `json:"witness_quorum"`
		TeamAdmins   []string          `json:"team_admins,omitempty"`
		LockTimeout  int64             `json:"lock_timeout_ns,omitempty"`
	}{LockTimeout: int64(c.LockTimeout), TeamAdmins: sortedCopy(c.TeamAdminLines), Costs: map[string]uint64(c.Costs), ExecFallback: c.ExecFallback, Files: c.Witness.Files, Command: c.Witness.Command,
		TimeoutNS: int64(c.Witness.Timeout), Sync: c.Witness.Sync, Quorum: c.Witness.Quorum, Witnesses: []cosigner{}}
	if len(view.Files) == 0 {
		view.Files = nil
	}
	if len(view.Command) == 0 {
		view.Command = nil
	}
	if view.Costs == nil {
		view.Costs = map[string]uint64{}
	}
	if view.ExecFallback == "refuse" {
		view.ExecFallback = "" // the default, spelled out
	}
	for _, w := range c.Witness.Witnesses {
		view.Witnesses = append(view.Witnesses, cosigner{w.Name, w.URL, w.VKey})
	}
	// json.Marshal sorts map keys: the same settings give the same bytes.
	b, _ := json.Marshal(view)
	return core.Sum(append([]byte("joule-config/1\n"), b...))
}

func sortedCopy(lines []string) []string {
	if len(lines) == 0 {
		return nil
	}
	out := slices.Clone(lines)
	slices.Sort(out)
	return slices.Compact(out)
}

// DefaultTrustDigest is the TrustDigest of a home without config.json.
func DefaultTrustDigest() core.ID { return (&Config{}).TrustDigest() }

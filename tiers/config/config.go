// Package config reads joule's configuration files in $JOULE_HOME:
// config.json, with the gate's costs and what joule exec does without
// Landlock (docs/gate.md), where the store is and how long a decision waits
// for its lock (docs/team.md), the witness (docs/receipts.md) and the
// "tiers" section, kept raw for tiers/tierconfig (docs/models.md);
// meter.json, the meter's upstreams, model classes and energy rates
// (docs/meter.md); and serve.json, joule serve's address and bearer token
// (docs/hosts.md), which a resident install also writes.
//
// A file that is absent is the defaults (serve.json excepted: without its
// token joule serve cannot run). A file that is there must parse
// whole, or nothing runs on it: a syntax error, an unknown key (matched
// exactly, case included), a value of the wrong type or out of range fails
// with an error that names the file and the key's dotted path.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/grant"
	jhome "github.com/joulehook/joule/core/home"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/witness"
)

// File is joule's configuration in $JOULE_HOME.
const File = "config.json"

// Config is config.json, parsed.
type Config struct {
	Costs       gate.Costs
	LockTimeout time.Duration // how long a decision waits for the store's write lock; 0: the store's default

	// Tiers is the "tiers" section, which tiers/tierconfig parses for the
	// commands that run the cascade.
	Tiers json.RawMessage
	Store string // where the ledger and receipts live: a path or a postgres:// URL (see StoreLocation)

	// ExecFallback is what joule exec does where the kernel has no
	// Landlock: "refuse" (the default) or "unconfined" (run the program,
	// analysis alone having judged it).
	ExecFallback string
	// Witness lists further places the log's checkpoints are kept.
	Witness Witness
	// TeamAdmins, config.json's "team": {"admins": [...]}, are the
	// verifier keys (NAME+HASH+KEY) of a team's administrators: when set,
	// only they issue, revoke and activate grants, so the trust chain and
	// every grant a decision relies on must be signed by one of them, and
	// this machine's own key counts only if it is listed
	// (docs/team.md, "Who may write what").
	TeamAdmins grant.Trust
	// TeamAdminLines are those keys as written.
	TeamAdminLines []string
}

// Witness is config.json's "witness": further witness files, a witness
// command, and witnesses elsewhere that cosign the log's checkpoints
// (c2sp.org/tlog-witness), for the home's configured store
// (docs/receipts.md, "The witness").
type Witness struct {
	Files   []string // absolute and clean; a relative path in the file is taken in $JOULE_HOME
	Command []string
	Timeout time.Duration // for the command, and for each request to a witness elsewhere
	Sync    bool          // fsync each witness file before its rename
	// Witnesses cosign each checkpoint; Quorum of them must have cosigned
	// the log before an action is allowed (0: none is required, and a
	// failure is reported only).
	Witnesses []Cosigner
	Quorum    int
}

// Cosigner is one witness elsewhere: its name, where it takes
// add-checkpoint requests, and the verifier key of its cosignatures.
type Cosigner struct {
	Name string
	URL  string
	VKey string
}

// file is config.json's JSON shape: energies as strings with units ("50mJ").
type file struct {
	Costs        map[string]string `json:"costs"`
	LockTimeout  string            `json:"lock_timeout"`
	Tiers        json.RawMessage   `json:"tiers,omitempty"`
	Store        string            `json:"store,omitempty"`
	ExecFallback string            `json:"exec_fallback,omitempty"`
	Witness      *witnessFile      `json:"witness,omitempty"`
	Team         *teamFile         `json:"team,omitempty"`
}

type teamFile struct {
	Admins []string `json:"admins"`
}

type witnessFile struct {
	Files     []string       `json:"files"`
	Command   []string       `json:"command"`
	Timeout   string         `json:"timeout"`
	Sync      bool           `json:"sync"`
	Witnesses []cosignerFile `json:"witnesses"`
	Quorum    int            `json:"quorum"`
}

type cosignerFile struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	VKey string `json:"vkey"`
}

// Load reads home's config.json; a missing file is the defaults.
func Load(home string) (*Config, error) {
	path := filepath.Join(home, File)
	b, err := jhome.ReadFile(path, 1<<20)
	if errors.Is(err, os.ErrNotExist) {
		return &Config{}, nil
	}
	if err != nil {
		return nil, err
	}
	c, err := Parse(b, home)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse reads the text of a config.json in home (where its relative paths
// are taken).
func Parse(data []byte, home string) (*Config, error) {
	var f file
	if err := decode(data, &f); err != nil {
		return nil, err
	}
	c := &Config{Costs: gate.Costs{}, Tiers: f.Tiers, Store: f.Store, ExecFallback: f.ExecFallback}
	switch f.ExecFallback {
	case "", "refuse", "unconfined":
	default:
		return nil, fmt.Errorf("exec_fallback %q: want \"refuse\" or \"unconfined\"", f.ExecFallback)
	}
	if f.Witness != nil {
		w, err := f.Witness.parse(home)
		if err != nil {
			return nil, fmt.Errorf("witness.%w", err)
		}
		c.Witness = w
	}
	if f.Team != nil {
		if len(f.Team.Admins) == 0 {
			return nil, errors.New("team.admins: want the verifier key of at least one administrator")
		}
		c.TeamAdmins = grant.Trust{}
		for i, line := range f.Team.Admins {
			key, name, err := identity.ParsePublicKey(line)
			if err != nil || name == "" {
				return nil, fmt.Errorf("team.admins[%d]: want a signed-note verifier key NAME+HASH+KEY", i)
			}
			c.TeamAdmins[name] = key
			c.TeamAdminLines = append(c.TeamAdminLines, strings.TrimSpace(line))
		}
	}
	if f.LockTimeout != "" {
		d, err := time.ParseDuration(f.LockTimeout)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("lock_timeout %q: want a positive duration such as 2s", f.LockTimeout)
		}
		c.LockTimeout = d
	}
	for _, tool := range sortedKeys(f.Costs) {
		uj, err := grant.ParseEnergy(f.Costs[tool])
		if err != nil {
			return nil, fmt.Errorf("costs.%s: %v", tool, err)
		}
		c.Costs[tool] = uj
	}
	return c, nil
}

// parse checks the witness section; its errors start with the key.
func (f *witnessFile) parse(home string) (Witness, error) {
	w := Witness{Command: f.Command, Sync: f.Sync}
	for i, p := range f.Files {
		if p == "" {
			return w, fmt.Errorf("files[%d]: an empty path", i)
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(home, p)
		}
		w.Files = append(w.Files, filepath.Clean(p))
	}
	if len(f.Command) > 0 && f.Command[0] == "" {
		return w, errors.New("command[0]: an empty program name")
	}
	if f.Timeout != "" {
		d, err := time.ParseDuration(f.Timeout)
		if err != nil || d <= 0 {
			return w, fmt.Errorf("timeout %q: want a positive duration such as 5s", f.Timeout)
		}
		w.Timeout = d
	}
	seen := map[string]bool{}
	for i, c := range f.Witnesses {
		cl, err := witness.NewClient(c.URL, c.VKey, 0)
		if err != nil {
			return w, fmt.Errorf("witnesses[%d]: %v", i, err)
		}
		name := cl.Key.Name()
		if c.Name != "" && c.Name != name {
			return w, fmt.Errorf("witnesses[%d].name %q: its vkey names it %q", i, c.Name, name)
		}
		if seen[name] {
			return w, fmt.Errorf("witnesses[%d]: %s is listed twice", i, name)
		}
		seen[name] = true
		w.Witnesses = append(w.Witnesses, Cosigner{Name: name, URL: c.URL, VKey: c.VKey})
	}
	if f.Quorum < 0 || f.Quorum > len(f.Witnesses) {
		return w, fmt.Errorf("quorum %d: want 0 to %d, the number of witnesses", f.Quorum, len(f.Witnesses))
	}
	w.Quorum = f.Quorum
	return w, nil
}

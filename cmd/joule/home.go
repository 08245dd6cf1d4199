package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/grant"
	jhome "github.com/joulehook/joule/core/home"
	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/core/trust"
	"github.com/joulehook/joule/plugins/hosts"
	"github.com/joulehook/joule/tiers/config"
)

// StoreFile is the store's file name inside $JOULE_HOME.
const StoreFile = store.DefaultFile

// IssuersFile lists further trusted grant issuers, one signed-note
// verifier key per line.
const IssuersFile = "issuers"

// endpoint is an opened $JOULE_HOME: identity, store and trust.
type endpoint struct {
	home  string
	id    *identity.Identity
	store *store.Store
	trust grant.Trust
	// files is what the issuers file and config.json say, which a
	// decision compares with what the home's signed chain records.
	files trust.Files
	// issuers are the issuers file's keys, as read.
	issuers []string
	// cfg is config.json as read once, with files: a decision uses the
	// settings it checked, never a second read.
	cfg *config.Config
	loc string // the store's location
}

func (ep *endpoint) Close() error { return ep.store.Close() }

// One-shot hook processes (gate, hook, statusline) exit without closing
// the store, on purpose. Closing the last connection makes SQLite checkpoint
// the write-ahead log into the database and delete it: two more fsyncs and a
// directory fsync on every decision, and the next process recreates the log.
// Every decision was committed and synced before it was printed, and a WAL
// database is made to be left by a process that exits: the next opener reads
// the log as it is.
//
// openEndpoint opens $JOULE_HOME; it needs a key (joule init or keygen).
func openEndpoint() (*endpoint, error) { return openHome(false) }

// openReader opens $JOULE_HOME for a command that only reads: where the
// store cannot be opened for writing (a read-only home, a file it may not
// write) it is opened read-only instead of refused.
func openReader() (*endpoint, error) {
	ep, err := openHome(false)
	if err != nil && errors.Is(err, errStoreOpen) {
		if ro, rerr := openHome(true); rerr == nil {
			return ro, nil
		}
	}
	return ep, err
}

// errStoreOpen marks a failure to open the store itself.
var errStoreOpen = errors.New("cannot open the store")

type storeOpenError struct{ err error }

func (e *storeOpenError) Error() string   { return e.err.Error() }
func (e *storeOpenError) Unwrap() []error { return []error{e.err, errStoreOpen} }

func openHome(readOnly bool) (*endpoint, error) {
	home, err := identity.Home()
	if err != nil {
		return nil, err
	}
	id, err := identity.Load(home)
	if errors.Is(err, identity.ErrNoKey) {
		return nil, withHint(fmt.Errorf("no endpoint key in %s (%w)", home, identity.ErrNoKey), "run 'joule init' in your workspace (or 'joule keygen')")
	}
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(home)
	if err != nil {
		return nil, err
	}
	var opts []store.Option
	if cfg.LockTimeout > 0 {
		opts = append(opts, store.WithLockTimeout(cfg.LockTimeout))
	}
	loc, err := config.StoreLocation(home, cfg)
	if err != nil {
		return nil, err
	}
	if readOnly {
		opts = append(opts, store.ReadOnly())
	}
	st, err := store.Open(loc, opts...)
	if err != nil {
		return nil, &storeOpenError{err}
	}
	w, err := witnessFor(home, loc, true, cfg, id.NoteSigner, id.VerifierKey)
	if err == nil {
		err = st.SetWitness(w)
	}
	if err != nil {
		st.Close()
		return nil, err
	}
	tr, lines, err := loadTrust(home, id)
	if err != nil {
		st.Close()
		return nil, err
	}
	return &endpoint{home: home, id: id, store: st, trust: tr, files: homeFiles(id, lines, cfg), issuers: lines, cfg: cfg, loc: loc}, nil
}

// homeFiles is what the home of id says in its files: the issuers file's
// keys (lines) and config.json (cfg), as the digests its chain signs.
func homeFiles(id *identity.Identity, lines []string, cfg *config.Config) trust.Files {
	return trust.Files{Home: trust.HomeSession(id.VerifierKey), Steward: id.Steward, Key: id.Public(),
		Issuers: trust.IssuersDigest(lines), Config: cfg.TrustDigest(), DefaultConfig: config.DefaultTrustDigest()}
}

// loadTrust trusts the endpoint's own key and every key in IssuersFile,
// and returns those keys' lines as read. A line that names the endpoint's
// own steward is refused: it would replace the endpoint's key.
func loadTrust(home string, id *identity.Identity) (grant.Trust, []string, error) {
	tr := grant.Trust{id.Steward: id.Public()}
	b, err := jhome.ReadFile(filepath.Join(home, IssuersFile), 1<<20)
	if errors.Is(err, os.ErrNotExist) {
		return tr, nil, nil
	}
	if errors.Is(err, jhome.ErrNotRegular) {
		return nil, nil, fmt.Errorf("%w: %v", errIssuersFile, err)
	}
	if err != nil {
		return nil, nil, err
	}
	lines, err := parseIssuers(filepath.Join(home, IssuersFile), b, id.Steward)
	if err != nil {
		return nil, nil, err
	}
	for _, line := range lines {
		key, name, _ := identity.ParsePublicKey(line)
		tr[name] = key
	}
	return tr, lines, nil
}

// errIssuersFile marks an issuers file that cannot be read as one: every
// decision is refused (issuers-unsigned) until it is fixed.
var errIssuersFile = errors.New("issuers file refused")

// parseIssuers reads an issuers file's text: its verifier keys, each
// checked, in order; blank lines and # comments are skipped.
func parseIssuers(path string, b []byte, own string) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		_, name, err := identity.ParsePublicKey(line)
		if err != nil || name == "" {
			return nil, fmt.Errorf("%w: %s line %d: want a signed-note verifier key NAME+HASH+KEY", errIssuersFile, path, n)
		}
		if name == own {
			return nil, fmt.Errorf("%w: %s line %d: names %s, this endpoint's own steward, whose key is steward.pub's: remove the line", errIssuersFile, path, n, own)
		}
		out = append(out, line)
	}
	return out, sc.Err()
}

func (ep *endpoint) gate() (*gate.Gate, error) {
	sealer, err := ep.id.Sealer()
	if err != nil {
		return nil, err
	}
	cfg := ep.cfg
	home, _ := os.UserHomeDir()
	// A hook runs in its host's environment and working directory: the
	// hosts' configuration is where they would find it ($CODEX_HOME, …).
	cwd, _ := os.Getwd()
	return &gate.Gate{Store: ep.store, Sealer: sealer, Trust: ep.trust, Admins: cfg.TeamAdmins, JouleHome: ep.home, Home: home, Costs: gate.DefaultCosts.Merge(cfg.Costs),
		Hosts: hosts.Config(os.Getenv, cwd), Files: &ep.files, TeamWitness: teamWitness(ep.store, ep.id, ep.issuers, cfg)}, nil
}

// keys verifies receipts sealed by this endpoint or by any trusted issuer:
// on a team's shared store, other machines seal into the same log.
func (ep *endpoint) keys() (receipts.Keys, error) { return receipts.NewKeys(ep.trust) }

func (ep *endpoint) verifier() (*core.Verifier, error) {
	pub := ep.id.Public()
	return core.NewVerifier(ep.id.Steward, pub[:])
}

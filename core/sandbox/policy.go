package sandbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/joulehook/joule/core/rule"
)

// Policy is what the gate decided a contained command may do, in the form
// the gate hands it to joule-exec: the rules of each link of the active
// grant (root first), the leaf's workspace roots, the home directory, the
// protected and private paths, and when the grant expires. The gate writes
// it under $JOULE_HOME/policy, named by the SHA-256 of its bytes, and the
// rewritten line names that file; joule-exec reads it, checks the name
// against the content and builds the Spec from it when the command
// starts, so deny globs are expanded over the files that exist then.
//
// Why that is enough: $JOULE_HOME is unreadable and unwritable inside the
// sandbox, so a contained command can neither change a policy nor plant
// one; and Landlock (and seccomp) only ever add restrictions, so a
// joule-exec the contained command runs itself, with any policy file,
// can narrow what it may do but never widen it.
type Policy struct {
	Links     []PolicyLink `json:"links"`
	Roots     []string     `json:"roots"`
	Home      string       `json:"home"`
	Protected []string     `json:"protected"`
	Private   []string     `json:"private"`
	NotAfter  int64        `json:"not_after,omitempty"` // Unix seconds; 0: no expiry
	// Limits bound each process of the command; a 0 (or no limits) is
	// DefaultLimits'.
	Limits *Limits `json:"limits,omitempty"`
	// Layer is the directory of the session's private layers over the
	// toolchains' caches (Spec.LayerDir: LayerDir($JOULE_HOME, session)).
	// Without one the caches are read-only in the namespace construction.
	Layer string `json:"layer,omitempty"`
	// Connect are the TCP ports the command may connect to with the
	// network off (Spec.Connect).
	Connect []uint16 `json:"connect,omitempty"`
	// Listen are the TCP ports the command may bind and connect to with
	// the network off (Spec.Listen).
	Listen []uint16 `json:"listen,omitempty"`
}

// PolicyLink is the rules of one link of the grant, as the grant writes them.
type PolicyLink struct {
	Allow []string `json:"allow,omitempty"`
	Ask   []string `json:"ask,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// PolicyDir is where the gate writes policies, below $JOULE_HOME.
const PolicyDir = "policy"

// LayersDir is where the sessions' private layers over the toolchains'
// caches live, below $JOULE_HOME (layers.go).
const LayersDir = "layers"

// LayerDir is the directory of session's private layers below jouleHome:
// named by a hash of the session's id, which may hold anything.
func LayerDir(jouleHome, session string) string {
	sum := sha256.Sum256([]byte("joule layer\x00" + session))
	return filepath.Join(jouleHome, LayersDir, hex.EncodeToString(sum[:16]))
}

// maxPolicy bounds a policy file joule-exec reads.
const maxPolicy = 4 << 20

// Encode returns the policy's bytes and their SHA-256 in hex, the file name.
func (p Policy) Encode() ([]byte, string, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, "", err
	}
	return b, hashHex(b), nil
}

// Write stores the policy in dir (created 0700) as <sha256>.json, mode
// 0600, unless a file of that name is there already, and returns its path.
func (p Policy) Write(dir string) (string, error) { return p.write(dir, 0o600) }

// WriteShared is Write for a system gate (docs/receipts.md, "System
// mode"), whose policies the people it decides for run joule-exec with: in
// dir, which the gate's user made and alone may add entries to (0711: no
// listing), mode 0644. ReadPolicy takes such a file as it takes a 0600 one
// of its own user's.
func (p Policy) WriteShared(dir string) (string, error) { return p.write(dir, 0o644) }

func (p Policy) write(dir string, perm os.FileMode) (string, error) {
	b, name, err := p.Encode()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+".json")
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len(b)) {
		return path, nil // content-addressed: the same name is the same bytes (ReadPolicy checks)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return "", err
	}
	return path, nil
}

// ReadPolicy reads the policy at path and checks it is the one its name
// says: a regular file (not a link), owned by this user and not readable
// or writable by anyone else, named <sha256 of its bytes>.json. A policy
// a system gate wrote (WriteShared) is owned by the gate's user instead:
// it is taken when neither it nor its directory, that user's too, can be
// written by anyone else.
func ReadPolicy(path string) (Policy, error) {
	name := filepath.Base(path)
	want, ok := strings.CutSuffix(name, ".json")
	if !ok || len(want) != 64 || strings.ToLower(want) != want {
		return Policy{}, fmt.Errorf("policy %s: the name is not <sha256>.json", path)
	}
	if _, err := hex.DecodeString(want); err != nil {
		return Policy{}, fmt.Errorf("policy %s: the name is not <sha256>.json", path)
	}
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if err != nil {
		return Policy{}, fmt.Errorf("policy %s: %w", path, err)
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return Policy{}, fmt.Errorf("policy %s: %w", path, err)
	}
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFREG:
		return Policy{}, fmt.Errorf("policy %s: not a regular file", path)
	case int(st.Uid) != os.Geteuid():
		if err := sharedPolicy(path, st); err != nil {
			return Policy{}, err
		}
	case st.Mode&0o077 != 0:
		return Policy{}, fmt.Errorf("policy %s: mode %04o, want 0600: others could read or change it", path, st.Mode&0o7777)
	}
	if st.Size > maxPolicy {
		return Policy{}, fmt.Errorf("policy %s: larger than %d bytes", path, maxPolicy)
	}
	b, err := readFD(fd, int(st.Size))
	if err != nil {
		return Policy{}, fmt.Errorf("policy %s: %w", path, err)
	}
	if hashHex(b) != want {
		return Policy{}, fmt.Errorf("policy %s: its content does not hash to its name: it was changed after the gate wrote it", path)
	}
	var p Policy
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Policy{}, fmt.Errorf("policy %s: %w", path, err)
	}
	return p, nil
}

// sharedPolicy checks a policy of another user's, st its status: a system
// gate's, which nobody but that user (and root) can have changed.
func sharedPolicy(path string, st syscall.Stat_t) error {
	if st.Mode&0o022 != 0 {
		return fmt.Errorf("policy %s: mode %04o: others could change it", path, st.Mode&0o7777)
	}
	var dir syscall.Stat_t
	if err := syscall.Lstat(filepath.Dir(path), &dir); err != nil {
		return fmt.Errorf("policy %s: %w", path, err)
	}
	if dir.Mode&syscall.S_IFMT != syscall.S_IFDIR || dir.Uid != st.Uid || dir.Mode&0o022 != 0 {
		return fmt.Errorf("policy %s: owned by uid %d, not by this user, and not in a directory only that user can write", path, st.Uid)
	}
	return nil
}

// readFD reads the size bytes of the file at fd with plain read calls:
// wrapping fd in an os.File would register it with the runtime's poller
// (it is open non-blocking, so that a FIFO put in the policy's place
// cannot hang the open), which costs more than the rest of ReadPolicy. A
// file that is not size bytes long when read is refused.
func readFD(fd, size int) ([]byte, error) {
	b := make([]byte, size+1) // one more, to see the end
	n, err := readFull(fd, b)
	if err != nil {
		return nil, err
	}
	if n != size {
		return nil, errors.New("it changed size while it was read")
	}
	return b[:n], nil
}

// readFull reads fd with plain read calls until b is full or the end,
// again after a signal, and returns how much it read.
func readFull(fd int, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := syscall.Read(fd, b[n:])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || m == 0 {
			return n, err
		}
		n += m
	}
	return n, nil
}

// Check reports an expired policy.
func (p Policy) Check(now time.Time) error {
	if p.NotAfter != 0 && now.Unix() >= p.NotAfter {
		return fmt.Errorf("the grant this policy was decided under expired at %s", time.Unix(p.NotAfter, 0).UTC().Format(time.RFC3339))
	}
	return nil
}

// Spec builds the Spec the kernel enforces for p now: globs of deny and
// ask rules expanded over the files that exist, the temp dir and the
// toolchains' caches from getenv writable (ToolTrees), TCP only with net.
func (p Policy) Spec(net bool, getenv func(string) string) (Spec, error) {
	if len(p.Links) == 0 {
		return Spec{}, errors.New("the policy has no links")
	}
	// One resolver for the toolchains' trees and the rules: they share
	// the home directory and the workspace's parents.
	res := &resolver{}
	temp, caches := toolTrees(res, p.Home, getenv)
	in := Inputs{Roots: p.Roots, Home: p.Home, Protected: p.Protected, Private: p.Private,
		Extra: temp, Caches: caches, Net: net, Getenv: getenv}
	if p.Layer != "" {
		if !filepath.IsAbs(p.Layer) || filepath.Clean(p.Layer) != p.Layer {
			return Spec{}, fmt.Errorf("the policy's layer %q is not a clean absolute path", p.Layer)
		}
		in.LayerDir = p.Layer
	}
	if p.Limits != nil {
		in.Limits = *p.Limits
	}
	for i, l := range p.Links {
		set, err := rule.ParseSet(l.Allow, l.Ask, l.Deny)
		if err != nil {
			return Spec{}, fmt.Errorf("link %d: %w", i, err)
		}
		in.Sets = append(in.Sets, set)
	}
	spec, err := build(res, in)
	if err != nil {
		return Spec{}, err
	}
	if !net {
		for _, port := range p.Connect {
			if port == 0 {
				return Spec{}, errors.New("the policy allows connecting to port 0")
			}
		}
		for _, port := range p.Listen {
			if port == 0 {
				// Landlock's port 0 rule is binding to a port the kernel
				// picks: any port, which the command could then accept on.
				return Spec{}, errors.New("the policy allows listening on port 0")
			}
		}
		spec.Connect, spec.Listen = slices.Clone(p.Connect), slices.Clone(p.Listen)
	}
	return spec, nil
}

// hashHex names a policy file. SHA-256, not the BLAKE3 the store uses:
// joule-exec checks the name on every contained command, and the standard
// library's SHA-256 costs it nothing at start, where linking BLAKE3 brings
// its CPU-feature detection into the start of every command.
func hashHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

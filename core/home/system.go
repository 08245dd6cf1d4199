//go:build unix

package home

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// SystemConfig is where joule install --system records the machine's system
// mode. Only root writes it; every reader checks that (TrustedPath). It is
// lines of "key value" (Format), not JSON: the thin client that reads it
// links no JSON decoder.
const SystemConfig = "/etc/joule/system.conf"

// System is a managed machine's system mode (docs/receipts.md, "System
// mode"): a dedicated user owns the key, the store and the witness state
// in Home and runs the resident gate, whose socket is in Run, a directory
// only that user can add entries to. The thin client and the CLI check that
// the gate's peer is that user; grants change only at the request of root
// or of a member of AdminGroup.
type System struct {
	User       string
	UID        int
	GID        int
	AdminGroup string
	AdminGID   int
	// Home is the user's $JOULE_HOME (0700, the user's own).
	Home string
	// Run is the gate's socket directory (0755, the user's own).
	Run string
	// Bin is the root-owned directory of joule, joule-hook and joule-exec
	// that the hooks and the services run.
	Bin string
	// Proxy is the loopback address of the system proxy ("" for none).
	Proxy string
	// Path is the file this was read from.
	Path string
}

// Format is s as its configuration file holds it.
func (s *System) Format() []byte {
	var b strings.Builder
	b.WriteString("# joule system mode, written by 'joule install --system' (docs/receipts.md, System mode)\n")
	for _, f := range s.fields() {
		if f.str != nil && *f.str == "" && f.key == "proxy" {
			continue
		}
		b.WriteString(f.key + " ")
		if f.str != nil {
			b.WriteString(*f.str)
		} else {
			b.WriteString(strconv.Itoa(*f.num))
		}
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

type systemField struct {
	key string
	str *string
	num *int
}

func (s *System) fields() []systemField {
	return []systemField{{"user", &s.User, nil}, {"uid", nil, &s.UID}, {"gid", nil, &s.GID},
		{"admin_group", &s.AdminGroup, nil}, {"admin_gid", nil, &s.AdminGID},
		{"home", &s.Home, nil}, {"run", &s.Run, nil}, {"bin", &s.Bin, nil}, {"proxy", &s.Proxy, nil}}
}

// parse reads Format's lines into s: every key once, none unknown.
func (s *System) parse(text string) error {
	seen := map[string]bool{}
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		key, value, _ := strings.Cut(line, " ")
		var f *systemField
		for _, c := range s.fields() {
			if c.key == key {
				f = &c
			}
		}
		switch {
		case f == nil:
			return fmt.Errorf("line %d: unknown key %q", n+1, key)
		case seen[key]:
			return fmt.Errorf("line %d: %s given twice", n+1, key)
		}
		seen[key] = true
		if f.str != nil {
			*f.str = value
			continue
		}
		v, err := strconv.Atoi(value)
		if err != nil {
			return fmt.Errorf("line %d: %s %q is not a number", n+1, key, value)
		}
		*f.num = v
	}
	return nil
}

// Socket is the system gate's socket.
func (s *System) Socket() string { return filepath.Join(s.Run, "gate.sock") }

// ErrNoSystem is LoadSystem's error when the machine has no system mode.
var ErrNoSystem = errors.New("no system mode on this machine")

// ErrUntrusted is a system configuration, directory or socket someone
// other than root (or the system user, where it owns it) could have made
// or changed: it is never used.
var ErrUntrusted = errors.New("untrusted system-mode path")

// LoadSystem reads the system configuration at path (SystemConfig when
// empty), refusing a file that anyone but root could have written
// (TrustedPath) or that names no usable user and directories.
func LoadSystem(path string) (*System, error) {
	if path == "" {
		path = SystemConfig
	}
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("system configuration %s: not an absolute path", path)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w (%s is missing; an administrator runs 'sudo joule install --system')", ErrNoSystem, path)
	}
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%w: %s is a symbolic link", ErrUntrusted, path)
	}
	if err != nil {
		return nil, fmt.Errorf("system configuration: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrUntrusted, path)
	}
	if err := checkOwned(path, st, 0); err != nil {
		return nil, err
	}
	if err := TrustedPath(filepath.Dir(path), 0); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return nil, err
	}
	var s System
	if err := s.parse(string(b)); err != nil {
		return nil, fmt.Errorf("system configuration %s: %w", path, err)
	}
	s.Path = path
	if err := s.Valid(); err != nil {
		return nil, fmt.Errorf("system configuration %s: %w", path, err)
	}
	return &s, nil
}

// Valid checks that s names a user other than root and absolute, clean
// directories.
func (s *System) Valid() error {
	switch {
	case s.User == "" || s.UID <= 0:
		return errors.New("it names no system user other than root")
	case s.AdminGroup == "" || s.AdminGID <= 0:
		return errors.New("it names no admin group other than root's")
	}
	for _, d := range []string{s.Home, s.Run, s.Bin} {
		if !filepath.IsAbs(d) || filepath.Clean(d) != d {
			return fmt.Errorf("%q is not a clean absolute path", d)
		}
	}
	return nil
}

// TrustedPath checks that nobody but root and owner can change what path
// names: path and every directory above it are real directories (no
// symbolic link on the way), owned by root or by owner, and writable by
// nobody else, except a directory with the sticky bit (/tmp), where others
// may add entries but not rename or remove the ones below it that are
// root's or owner's.
func TrustedPath(path string, owner int) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("%w: %s is not absolute", ErrUntrusted, path)
	}
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if st.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%w: %s is a symbolic link", ErrUntrusted, p)
		}
		if !st.IsDir() {
			return fmt.Errorf("%w: %s is not a directory", ErrUntrusted, p)
		}
		sticky := st.Mode()&os.ModeSticky != 0 && p != filepath.Clean(path)
		if err := checkOwned(p, st, owner); err != nil && !(sticky && ownerOf(st) == 0) {
			return err
		}
		if filepath.Dir(p) == p {
			return nil
		}
	}
}

// checkOwned refuses a file or directory owned by anyone but root and
// owner, or that group or others may write.
func checkOwned(p string, st os.FileInfo, owner int) error {
	uid := ownerOf(st)
	if uid != 0 && uid != owner {
		return fmt.Errorf("%w: %s belongs to uid %d, not to root", ErrUntrusted, p, uid)
	}
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%w: %s has mode %04o: group or others may change it", ErrUntrusted, p, st.Mode().Perm())
	}
	return nil
}

func ownerOf(st os.FileInfo) int {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(sys.Uid)
	}
	return -1
}

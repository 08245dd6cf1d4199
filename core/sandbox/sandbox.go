// Package sandbox confines a process tree with Landlock to what a grant
// allows, so that a shell command the gate allowed cannot do more than the
// grant says even where static analysis of the line was wrong: `joule exec`
// and joule-exec build a Spec from the grant and call Exec, which runs the
// program confined; its children inherit the confinement.
//
// Exec has two constructions. Where unprivileged user namespaces work, the
// program runs in a new user, mount and PID namespace (plan.go): the whole
// file system is read-only but the writable trees, mounts hide the refused
// read paths and freeze the protected ones, Landlock needs only a handful
// of rules, and every process of the command ends with it. Elsewhere
// (NamespacesAvailable false, or Spec.LandlockOnly), Landlock alone
// enforces the paths, with the carve described below, and what it leaves
// open is LandlockOnlyGaps, which the caller reports (Mode says it).
//
// # What the kernel enforces
//
// Landlock only grants: a rule gives a set of rights on a file hierarchy,
// inherited by everything below it. A path that must stay closed inside an
// open tree is therefore carved out: the directories on the way to it get
// only the rights that are harmless when inherited (listing, for reads;
// none, for writes), and each of their other entries is granted the full
// rights on its own. For a refused path P inside an open tree this gives:
//
//   - reads (Spec.ReadDeny, $JOULE_HOME and Read deny rules): no file below P
//     can be opened for reading, executed or mapped; the names in P and in
//     the directories above it can still be listed.
//   - writes (Spec.WriteDeny: the protected hook configurations and Write
//     deny rules): P cannot be written, truncated, created, removed,
//     renamed, replaced by a rename or hard link, and neither can any
//     directory on the way to it. Since MAKE_REG, REMOVE_FILE, REFER and the
//     other directory rights are inherited, this means: in each directory on
//     the way from a writable root to a protected path (the workspace root
//     itself, for .mcp.json or .claude/settings.json) no entry can be
//     created, removed or renamed; the files already there can be written in
//     place, and every subdirectory not on the way is fully writable.
//   - entries that appear in a carved directory after Confine get no rule,
//     so they are neither readable (below a read carve) nor writable.
//   - symbolic links are never granted (a rule on a link would grant its
//     target); what a link points to is judged as its target.
//
// Metadata. Landlock has no right for chmod, chown, utimes or extended
// attributes. The namespace construction makes every mount read-only
// (mount_setattr, recursive) and binds each writable tree back writable,
// as bubblewrap's --ro-bind / / does, and the protected paths inside them
// are read-only binds: changing a mode, an owner or a time outside the
// writable trees, or of a protected path, fails (EROFS). With Landlock
// alone it succeeds wherever the user may do it.
//
// Resources (Spec.Limits, DefaultLimits unless the policy narrows them):
// each process of the command has RLIMIT_DATA, RLIMIT_CPU and RLIMIT_FSIZE
// lowered to the limits, and in the namespace construction RLIMIT_NPROC,
// which the kernel counts per user namespace, so that it bounds the
// command's own tasks (a fork bomb is held at it); it is not applied to
// uid 0, and outside a user namespace it would count every process of the
// user, so Landlock alone does not set it. The limits are per process;
// where joule-exec may make one (cgroup_linux.go: as root, or in a cgroup
// v2 subtree systemd delegates to the user), the namespace construction
// also puts the command in a control group of its own whose pids.max and
// memory.max bound its tasks (for uid 0 too) and memory together.
// Elsewhere memory spread over many processes is bounded only by their
// product, and Mode says so.
//
// Processes. In the namespace construction the program is forked by the
// init of a new PID namespace, a loop of system calls in joule-exec's
// clone that reaps it, then kills and reaps every other process of the
// namespace before joule-exec returns the program's status: nothing the
// command started in the background outlives the call (to swap a file for
// a link between the gate's decision and the host's own file tools, say).
// If joule-exec dies first, the init gets SIGKILL (PDEATHSIG) and the
// kernel kills the rest. Inside, getpid and $$ are the namespace's numbers
// while /proc is still the host's.
//
// Symbolic links are not refused (LANDLOCK_ACCESS_FS_MAKE_SYM stays granted
// in the writable trees): git checks out repositories that hold links, npm
// install links node_modules/.bin, python -m venv links lib64, and a link is
// no way out of the sandbox, which judges what a link points to as its
// target. A link the command leaves in the workspace is the gate's to judge
// when a host tool later opens the path; the PID namespace makes sure no
// process of a foreground command can plant one after the call returned.
// A command the host runs in the background (Spec.Background) keeps
// running while the host's own tools act: it gets neither MAKE_SYM nor
// REMOVE_DIR, so it can neither make a link, move one into place, nor move
// a directory holding one into a path's place.
//
// What runs later. In the namespace construction, what programs run later
// outside the sandbox read as configuration or code inside the writable
// trees (git's metadata of the repositories found there, the home's dot
// entries where the home is writable, shell start-up files, PATH
// directories) is read-only (persist.go), and the toolchains' shared caches
// are overlays whose upper layer is the session's own (layers.go), and so
// are the workspace's git-ignored directories of dependencies and tools'
// configuration (ignored.go; its ignored code files are read-only), so that
// nothing the command writes runs, or is followed, unconfined afterwards.
// A repository the command makes, or one the discovery did not find, is
// swept once every process of the command has ended: its hooks and every
// configuration variable but an allow-list are moved to a quarantine
// (sweep_linux.go), and so is the ignored code it wrote where nothing
// covered it. Landlock alone can do none of it (LandlockOnlyGaps).
//
// The network (Landlock ABI 4): TCP connect and bind are refused unless
// Spec.Net. With the network off a seccomp filter refuses every other
// socket: socket() succeeds only for AF_INET or AF_INET6, SOCK_STREAM,
// TCP, so UDP (bash's /dev/udp, DNS), SCTP, MPTCP, raw, packet and netlink
// sockets are refused, and so are unix sockets, through which the command
// could reach a server outside by its path (Landlock scopes named unix
// sockets only from ABI 9); socketpair stays, for the command's own
// pipes. Spec.Connect opens TCP connect to a few ports only, on any
// address (Landlock's network rules name ports). With ABI 6, abstract unix sockets and signals are scoped: the
// process tree cannot reach abstract sockets or signal processes outside it.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/joulehook/joule/core/rule"
)

// Spec is what one confinement allows. Paths are absolute, clean and
// symlink-resolved. Each Layer is enforced as its own Landlock ruleset, so
// an access must pass every layer (one per link of a delegated grant).
type Spec struct {
	Layers []Layer
	Net    bool // TCP connect and bind are allowed
	// Connect are the TCP ports a command without Net may still connect
	// to (Landlock ABI 4 rules name a port, not an address): joule acp's
	// remote agent reaches the joule proxy on loopback this way and
	// nothing else. Bind stays refused but for Listen.
	Connect []uint16
	// Listen are the TCP ports a command without Net may bind and connect
	// to: a server of its own it talks to (OpenCode's ACP mode serves its
	// HTTP API on a loopback port and calls it). Landlock names the port,
	// not the address: what binds it chooses loopback or not.
	Listen []uint16
	// LandlockOnly confines with Landlock alone (the carve of Layer.Rules)
	// even where the namespace construction is available.
	LandlockOnly bool
	// Limits bound each process of the command (DefaultLimits unless the
	// policy says others).
	Limits Limits
	// Caches are the toolchains' shared caches among the writable trees
	// (ToolTrees). The namespace construction mounts each as an overlay
	// whose lower layer is the real cache and whose upper layer is the
	// session's own, below LayerDir (layers.go): what the command writes
	// there never reaches the real cache, which programs run later outside
	// the sandbox read. Without a LayerDir, or where the layer cannot be
	// made, they are read-only. Landlock alone leaves them writable in
	// place (LandlockOnlyGaps).
	Caches   []string
	LayerDir string
	// Background is a command the host runs in the background, which can
	// still run while the host's own file tools act on the workspace: no
	// symbolic link may be made (or moved into place) and no directory
	// removed or renamed in the writable trees, so that it cannot swap a
	// path the host is about to write or read for one that leads outside
	// (see Spec.writeAccess).
	Background bool
	// stats is what Build learnt of the paths it resolved, for Plan.
	stats stats
	// persist is what the discovery of guards reads (persist.go).
	persist persistIn
	// overlays are the caches' overlays Exec prepared, and guarded what it
	// found of persist.go's paths (their placeholders made), for Plan.
	overlays []Overlay
	guarded  []guard
	// known are the git directories the discovery followed (their
	// configuration and hooks read-only for the run): the sweep after the
	// command leaves them alone.
	known map[string]bool
	// views is git's view of each repository the discovery followed
	// that has a work tree, as the command starts (visible.go).
	views []gitView
	// ignoredDirs are the workspace's git-ignored directories of
	// dependencies and configuration the discovery found (ignored.go):
	// each is mounted as an overlay with the session's private layer.
	ignoredDirs []string
	// ignoredStopped are the trees whose walk for ignored paths stopped
	// at a bound (ignored.go): joule-exec says so.
	ignoredStopped []string
	// ignoreFiles are the .gitignore files that walk found, for the sweep.
	ignoreFiles map[string]bool
	// started is when the command started, for the sweep: ignored code
	// changed since is the command's (ignored.go), and so is what hides a
	// change from git (visible.go).
	started time.Time
	// slot is the session's layer directory this command holds (layers.go),
	// where the sweep moves a new directory of dependencies; "" if none.
	slot string
	// standIns are the stand-ins Exec holds for the command's run
	// (standin_linux.go), for Plan: each is bound read-only.
	standIns map[string]bool
}

// backgroundWithheld are the rights a background command does not get on
// the writable trees: making a symbolic link (or moving or linking one
// into a directory: Landlock asks for the right to make the entry's type
// at the destination), and removing or renaming a directory, which would
// move a directory holding a link made earlier into a path's place.
const backgroundWithheld = fsMakeSym | fsRemoveDir

// writeAccess is the rights each writable tree is granted.
func (spec Spec) writeAccess() uint64 {
	if spec.Background {
		return writeRights &^ backgroundWithheld
	}
	return writeRights
}

// layered reports whether p lies in one of the caches, which are not
// writable in place in the namespace construction.
func (spec Spec) layered(p string) bool {
	for _, c := range spec.Caches {
		if within(p, c) {
			return true
		}
	}
	return false
}

// Layer is one ruleset: everything is readable except ReadDeny, and the
// trees in Write are writable except WriteDeny (and ReadDeny).
type Layer struct {
	Write     []string
	ReadDeny  []string
	WriteDeny []string
	// Frozen are the paths of WriteDeny that are the gate's protected
	// paths (hook and MCP configurations): where one is absent, the
	// namespace construction makes the directory it would be created in
	// read-only as a whole, rather than carving every directory on the way
	// to it (see Plan).
	Frozen []string
}

// kernelProtected is the protected paths the kernel refuses writes to as
// the hosts' configuration: all but those inside a .git directory
// (.git/config, .git/hooks), since carving them out with Landlock means no
// entry can be created in .git itself, where git writes its index lock on
// every commit. The namespace construction makes them read-only with the
// rest of git's metadata it finds (guards, persist.go); the gate's
// analysis refuses writes there by any tool.
func kernelProtected(protected []string) []string {
	var out []string
	for _, p := range protected {
		if !strings.Contains(p+"/", "/.git/") {
			out = append(out, p)
		}
	}
	return out
}

// Inputs is what a Spec is built from: the parsed rules of each link of the
// grant (root first), the workspace roots of the leaf, the home directory,
// the gate's protected (never writable) and private (never readable) paths,
// and the extra trees that stay writable for ordinary work (temp dir and
// the toolchains' caches; see ToolTrees).
type Inputs struct {
	Sets      []rule.Set
	Roots     []string
	Home      string
	Protected []string
	Private   []string
	Extra     []string // the temp dirs
	Caches    []string // the toolchains' caches (Spec.Caches)
	LayerDir  string   // Spec.LayerDir
	Net       bool
	Limits    Limits // 0s are DefaultLimits'
	// Getenv is the environment the command runs with, for the discovery
	// of what programs run later read in the writable trees (PATH, GIT_DIR,
	// ZDOTDIR, ...: persist.go); nil reads none.
	Getenv func(string) string
}

// HomeSecrets are the places below the home directory where credentials
// live. The kernel refuses reading them even though the grant's Read rules
// say nothing about them (a bare Read covers the workspace only, and the
// sandbox cannot refuse the rest of the disk without breaking the
// toolchains), unless a Read allow rule names something inside one.
var HomeSecrets = []string{
	".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".docker/config.json",
	".netrc", ".git-credentials", ".config/git/credentials", ".npmrc", ".pypirc", ".cargo/credentials",
	".cargo/credentials.toml", ".config/gh/hosts.yml", ".password-store", ".local/share/keyrings",
	".claude/.credentials.json", ".codex/auth.json", ".gemini/oauth_creds.json", ".config/anthropic",
}

// readAllowedBelow reports whether some Read allow rule of set is scoped at
// or below p, under one of the roots.
func readAllowedBelow(res *resolver, set rule.Set, roots []string, home, p string) bool {
	for _, root := range roots {
		for _, r := range set.Allow {
			if s, ok := r.Scope(rule.Roots{Workspace: root, Home: home}); ok && s.Access == rule.Read && within(res.resolve(s.Base), p) {
				return true
			}
		}
	}
	return false
}

// maxWalk bounds the entries a deny glob may be expanded over, and maxRules
// the rules of one layer: a policy beyond them is refused, not weakened.
const (
	maxWalk  = 20000
	maxRules = 20000
)

// Build turns the grant's rules into a Spec. Allow rules for writes become
// the trees they name (a glob's leading literal directories: a wider grant
// than the rule, which the gate's analysis still narrows); ask and deny
// rules for reads and writes become refused paths, globs expanded over the
// files that exist now. An error means the grant cannot be enforced by the
// kernel as written; the caller must not run the program unconfined.
func Build(in Inputs) (Spec, error) {
	return build(&resolver{}, in)
}

func build(res *resolver, in Inputs) (Spec, error) {
	spec := Spec{Net: in.Net, Limits: in.Limits.merged(DefaultLimits()), LayerDir: in.LayerDir,
		persist: persistIn{home: in.Home, getenv: in.Getenv}}
	if len(in.Roots) == 0 {
		return Spec{}, errors.New("the grant names no workspace root")
	}
	for i, set := range in.Sets {
		l := Layer{ReadDeny: slices.Clone(in.Private), WriteDeny: kernelProtected(in.Protected)}
		l.Frozen = slices.Clone(l.WriteDeny)
		for _, root := range in.Roots {
			roots := rule.Roots{Workspace: root, Home: in.Home}
			for _, r := range set.Allow {
				if s, ok := r.Scope(roots); ok && s.Access == rule.Write {
					if _, err := os.Lstat(s.Base); err == nil {
						l.Write = append(l.Write, res.resolve(s.Base))
						spec.persist.grant = append(spec.persist.grant, res.resolve(s.Base))
					}
				}
			}
			var globs []globRule
			for _, list := range [][]rule.Rule{set.Deny, set.Ask} {
				for _, r := range list {
					s, ok := r.Scope(roots)
					if !ok {
						continue
					}
					if s.Tree {
						if s.Access == rule.Read {
							l.ReadDeny = append(l.ReadDeny, res.resolve(s.Base))
						} else {
							l.WriteDeny = append(l.WriteDeny, res.resolve(s.Base))
						}
						continue
					}
					globs = append(globs, globRule{r, s})
				}
			}
			reads, writes, err := expand(res, globs, roots)
			if err != nil {
				return Spec{}, fmt.Errorf("link %d: %w", i, err)
			}
			l.ReadDeny = append(l.ReadDeny, reads...)
			l.WriteDeny = append(l.WriteDeny, writes...)
		}
		if in.Home != "" {
			for _, rel := range HomeSecrets {
				p := res.resolve(filepath.Join(in.Home, rel))
				if !readAllowedBelow(res, set, in.Roots, in.Home, p) {
					l.ReadDeny = append(l.ReadDeny, p)
				}
			}
		}
		l.Write = append(l.Write, in.Extra...)
		l.Write = append(l.Write, in.Caches...)
		l.Write, l.ReadDeny, l.WriteDeny, l.Frozen = compact(l.Write), compact(l.ReadDeny), compact(l.WriteDeny), compact(l.Frozen)
		spec.Layers = append(spec.Layers, l)
	}
	if len(spec.Layers) == 0 {
		return Spec{}, errors.New("the grant has no links")
	}
	spec.persist.grant = compact(spec.persist.grant)
	spec.Caches = layeredCaches(in.Caches, append(slices.Clone(spec.persist.grant), in.Extra...))
	spec.stats = res.stats
	return spec, nil
}

// layeredCaches are the caches that get a private layer: each once, the
// outermost of those that hold others. A cache that holds (or is) one of
// the other writable trees is not one: an overlay there would keep the
// workspace's own writes from the workspace; it stays writable in place.
func layeredCaches(caches, others []string) []string {
	var out []string
	for _, c := range compact(slices.Clone(caches)) {
		if slices.ContainsFunc(others, func(o string) bool { return within(o, c) }) {
			continue
		}
		if slices.ContainsFunc(out, func(o string) bool { return within(c, o) }) {
			continue
		}
		out = slices.DeleteFunc(out, func(o string) bool { return within(o, c) })
		out = append(out, c)
	}
	return out
}

// globRule is a deny or ask rule whose pattern does not cover its whole
// tree: the entries it refuses are found by walking below its base.
type globRule struct {
	r rule.Rule
	s rule.PathScope
}

// expand lists the paths the glob rules refuse, for reads and for writes:
// every existing entry below a rule's base that the rule matches. Rules
// with the same base share one walk; the walk does not descend below a
// directory a Read rule refused (refusing reads refuses writes too), nor
// below one every rule of the walk refused. The walk starts from the
// resolved base and does not follow links, so the paths it yields are
// resolved already; a link that matches is refused as its target.
func expand(res *resolver, globs []globRule, roots rule.Roots) (reads, writes []string, err error) {
	byBase := map[string][]globRule{}
	var bases []string
	for _, g := range globs {
		if _, ok := byBase[g.s.Base]; !ok {
			bases = append(bases, g.s.Base)
		}
		byBase[g.s.Base] = append(byBase[g.s.Base], g)
	}
	for _, base := range bases {
		group := byBase[base]
		start := res.resolve(base)
		n := 0
		err := filepath.WalkDir(start, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				if p == start && errors.Is(err, os.ErrNotExist) {
					return filepath.SkipAll
				}
				return nil // unreadable here means unreadable in the sandbox too
			}
			if n++; n > maxWalk {
				return fmt.Errorf("rule %s: more than %d entries below %s to match it against; the kernel sandbox needs a narrower rule (a literal directory, or dir/**)", group[0].r, maxWalk, base)
			}
			abs, link := p, d.Type()&os.ModeSymlink != 0
			if link {
				abs = res.resolve(p)
			}
			matched, readMatched := 0, false
			for _, g := range group {
				var hit bool
				if link {
					hit = g.r.MatchPath(g.s.Access, abs, roots, rule.Deny)
				} else {
					hit = g.r.MatchBelow(g.s.Access, abs, start, rule.Deny)
				}
				if !hit {
					continue
				}
				matched++
				if g.s.Access == rule.Read {
					reads = append(reads, abs)
					readMatched = true
				} else {
					writes = append(writes, abs)
				}
			}
			if d.IsDir() && (readMatched || matched == len(group)) {
				return filepath.SkipDir
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return reads, writes, nil
}

func compact(ps []string) []string {
	out := ps[:0]
	for _, p := range ps {
		if p != "" && filepath.IsAbs(p) {
			out = append(out, filepath.Clean(p))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ToolTrees are the directories ordinary work writes outside the workspace:
// the temp dirs (the temp dir, /var/tmp, /dev/shm), and the toolchains'
// shared caches: the user's cache directory (which holds Go's build cache
// by default), Go's GOCACHE, GOMODCACHE and GOPATH/pkg when set elsewhere,
// and npm's cache. It reads the environment and Go's own env file (go env
// -w), never runs go: that would cost more than the whole confinement.
func ToolTrees(home string, getenv func(string) string) (temp, caches []string) {
	return toolTrees(&resolver{}, home, getenv)
}

func toolTrees(res *resolver, home string, getenv func(string) string) (temp, caches []string) {
	add := func(out *[]string, p string) {
		if p != "" && filepath.IsAbs(p) {
			*out = append(*out, res.resolve(p))
		}
	}
	tmp := getenv("TMPDIR")
	if tmp == "" {
		tmp = "/tmp"
	}
	add(&temp, tmp)
	add(&temp, "/var/tmp")
	add(&temp, "/dev/shm")
	cache := getenv("XDG_CACHE_HOME")
	if cache == "" && home != "" {
		cache = filepath.Join(home, ".cache")
	}
	add(&caches, cache)
	goenv := goEnvFile(home, getenv)
	get := func(k string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return goenv[k]
	}
	add(&caches, get("GOCACHE"))
	add(&caches, get("GOMODCACHE"))
	if gp := get("GOPATH"); gp != "" {
		for _, p := range filepath.SplitList(gp) {
			add(&caches, filepath.Join(p, "pkg"))
		}
	} else if home != "" {
		add(&caches, filepath.Join(home, "go", "pkg"))
	}
	if c := getenv("npm_config_cache"); c != "" {
		add(&caches, c)
	} else if home != "" {
		add(&caches, filepath.Join(home, ".npm"))
	}
	return temp, caches
}

// goEnvFile reads the file `go env -w` writes ($XDG_CONFIG_HOME/go/env or
// ~/.config/go/env, or GOENV).
func goEnvFile(home string, getenv func(string) string) map[string]string {
	p := getenv("GOENV")
	if p == "off" {
		return nil
	}
	if p == "" {
		cfg := getenv("XDG_CONFIG_HOME")
		if cfg == "" {
			if home == "" {
				return nil
			}
			cfg = filepath.Join(home, ".config")
		}
		p = filepath.Join(cfg, "go", "env")
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			m[k] = v
		}
	}
	return m
}

// within reports whether p is root or below it; both must be clean and
// absolute (everything here is), so nothing is cleaned again.
func within(p, root string) bool {
	if root == "/" {
		return strings.HasPrefix(p, "/")
	}
	return strings.HasPrefix(p, root) && (len(p) == len(root) || p[len(root)] == '/')
}

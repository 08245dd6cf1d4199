package sandbox

import (
	"fmt"
)

// Access rights, as Landlock numbers them (linux/landlock.h).
const (
	fsExecute    = 1 << 0
	fsWriteFile  = 1 << 1
	fsReadFile   = 1 << 2
	fsReadDir    = 1 << 3
	fsRemoveDir  = 1 << 4
	fsRemoveFile = 1 << 5
	fsMakeChar   = 1 << 6
	fsMakeDir    = 1 << 7
	fsMakeReg    = 1 << 8
	fsMakeSock   = 1 << 9
	fsMakeFifo   = 1 << 10
	fsMakeBlock  = 1 << 11
	fsMakeSym    = 1 << 12
	fsRefer      = 1 << 13
	fsTruncate   = 1 << 14
	fsIoctlDev   = 1 << 15

	// readRights may be inherited by everything readable; listRights by the
	// directories on the way to a path whose contents are refused.
	readRights = fsExecute | fsReadFile | fsReadDir | fsIoctlDev
	listRights = fsReadDir
	// writeRights is everything, on a writable tree.
	writeRights = readRights | fsWriteFile | fsRemoveDir | fsRemoveFile | fsMakeChar | fsMakeDir | fsMakeReg |
		fsMakeSock | fsMakeFifo | fsMakeBlock | fsMakeSym | fsRefer | fsTruncate
	// fileRights are the rights Landlock accepts on a rule for a file that
	// is not a directory.
	fileRights = fsExecute | fsWriteFile | fsReadFile | fsTruncate | fsIoctlDev
)

// PathRule is one Landlock rule: Access on the hierarchy at Path.
type PathRule struct {
	Path   string
	Access uint64
	Dir    bool
}

// devFiles are the device files any program writes (the terminal, the
// bit buckets), granted writable on their own.
var devFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts"}

// Rules computes the rules of one layer: "/" readable and each tree of
// l.Write writable, each with its refused paths carved out.
func (l Layer) Rules() ([]PathRule, error) {
	return l.rules(stats{}, writeRights)
}

// rules is Rules with what is known of the paths already (Spec.stats),
// granting access (Spec.writeAccess) on the writable trees.
func (l Layer) rules(st stats, access uint64) ([]PathRule, error) {
	c := carver{st: st}
	c.carve("/", readRights, l.ReadDeny, listRights)
	writeDeny := append(append([]string(nil), l.WriteDeny...), l.ReadDeny...)
	for _, t := range l.Write {
		c.carve(t, access, writeDeny, 0)
	}
	for _, d := range devFiles {
		c.carve(d, access, writeDeny, 0)
	}
	if c.n > maxRules {
		return nil, fmt.Errorf("the sandbox needs more than %d rules to carve the refused paths out of the writable trees", maxRules)
	}
	return c.rules, c.err
}

type carver struct {
	st    stats // what Lstat and directory listings said of the paths
	rules []PathRule
	at    map[string]int // path → its rule: one rule per path, the rights of every carve ORed
	n     int
	err   error
}

// carve grants access on tree t except on the paths in deny (and all below
// them): where a denied path lies below t, t itself gets only chain, and its
// entries are carved in turn.
func (c *carver) carve(t string, access uint64, deny []string, chain uint64) {
	if c.err != nil {
		return
	}
	var inside []string
	for _, d := range deny {
		if within(t, d) {
			return // t is refused as a whole
		}
		if within(d, t) {
			inside = append(inside, d)
		}
	}
	st := c.st.lstat(t)
	if !st.exists || st.link {
		return // missing, or a link: never granted itself
	}
	if !st.dir {
		c.add(t, access&fileRights, false)
		return
	}
	if len(inside) == 0 {
		c.add(t, access, true)
		return
	}
	if chain != 0 {
		c.add(t, chain, true)
	}
	// Unreadable, it has no entries: nothing below it is granted.
	for _, e := range c.st.entries(t) {
		if c.n > maxRules {
			return
		}
		c.carve(e, access, inside, chain)
	}
}

func (c *carver) add(p string, access uint64, dir bool) {
	if access == 0 {
		return
	}
	if i, ok := c.at[p]; ok {
		c.rules[i].Access |= access
		return
	}
	if c.at == nil {
		c.at = map[string]int{}
	}
	c.at[p] = len(c.rules)
	c.n++
	c.rules = append(c.rules, PathRule{Path: p, Access: access, Dir: dir})
}

package gate

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/joulehook/joule/core/command"
	"github.com/joulehook/joule/core/rule"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// readers are programs the analysis does not model (core/command's
// models judge the rest, command.Modeled) whose operands name files they
// read and print (or hash, compare, unpack). Each operand, and each option
// value, is judged as a Read of that path: a word that is not a path (a
// pattern, a count) resolves inside the workspace and reads nothing there.
var readers = map[string]bool{
	"less": true, "more": true, "most": true, "sum": true, "b3sum": true, "column": true, "zgrep": true,
	"ag": true, "ack": true, "zstdcat": true, "zless": true, "zmore": true, "yq": true, "iconv": true, "look": true,
	"tsort": true, "ptx": true, "numfmt": true, "bat": true, "batcat": true, "view": true, "xmllint": true,
	"openssl": true, "gpg": true, "zip": true, "unzip": true, "zstd": true, "nm": true, "objdump": true,
	"readelf": true, "lsattr": true, "getfacl": true,
}

// isReader reports whether a command reads the files its operands name.
func isReader(c command.Command) bool {
	prog := c.Args[0].Text
	base := path.Base(prog)
	if strings.Contains(prog, "/") && !isSystemDir(path.Dir(prog)) {
		return false // someone's script, judged by its own rule
	}
	return readers[base]
}

func isSystemDir(d string) bool {
	switch d {
	case "/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin", "/opt/homebrew/bin":
		return true
	}
	return false
}

// below returns the first of paths inside dir.
func (j *judge) below(dir string, paths []string) (string, bool) {
	for _, p := range paths {
		if within(p, dir) {
			return p, true
		}
	}
	return "", false
}

// procView reports /proc paths that mean something else in each process:
// /proc/self/cwd is the gate's working directory when the gate resolves it
// and the command's when the command opens it.
func procView(p string) bool {
	rest, ok := strings.CutPrefix(path.Clean(p), "/proc/")
	if !ok {
		return false
	}
	parts := strings.Split(rest, "/")
	for i := 0; i < len(parts) && i < 4; i++ {
		switch parts[i] {
		case "cwd", "root", "fd", "map_files", "exe":
			return true
		}
	}
	return false
}

// isNetworkPath reports the paths bash opens as sockets in a redirection.
func isNetworkPath(p string) bool {
	return strings.HasPrefix(p, "/dev/tcp/") || strings.HasPrefix(p, "/dev/udp/")
}

// network judges a redirection bash turns into a connection
// (/dev/tcp/HOST/PORT): a fetch of tcp://HOST:PORT, so only a WebFetch rule
// for that host lets it through.
func (j *judge) network(p string, literal bool) Verdict {
	if !literal {
		return deny(CodeUnanalyzable, "the redirection %q opens a network connection to a host computed when the line runs", truncate(p))
	}
	proto, rest, _ := strings.Cut(strings.TrimPrefix(p, "/dev/"), "/")
	host, port, ok := strings.Cut(rest, "/")
	if !ok || host == "" || port == "" || strings.Contains(port, "/") {
		return deny(CodeUnanalyzable, "the redirection %q opens a network connection the gate cannot name", truncate(p))
	}
	u := &url.URL{Scheme: proto, Host: host + ":" + port}
	if strings.Contains(host, ":") {
		u.Host = "[" + host + "]:" + port
	}
	o := j.fold(func(s rule.Set) rule.Verdict { return s.CheckURL(u) })
	v := o.verdict("the redirection " + p + " (a " + proto + " connection to " + u.Host + ")")
	if v.Decision == Deny && v.Code == CodeNotGranted {
		v.Reason += "; bash opens /dev/" + proto + " paths as network connections"
	}
	return v
}

// readVerdict judges reading abs: the gate's private files never, others by
// the Read rules of every link. A directory counts as read whole, since
// grep -r, diff -r or tar read below it.
func (j *judge) readVerdict(what, abs string) Verdict {
	if slices.ContainsFunc(j.p.Private, func(p string) bool { return within(abs, p) }) {
		return deny(CodeSelfTamper, "%s reads %s: the gate's keys, grants and store are never readable by an agent", what, abs)
	}
	access := rule.Read
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		access = rule.ReadTree
		if p, ok := j.below(abs, j.p.Private); ok {
			return deny(CodeSelfTamper, "%s reads the directory %s, which holds %s: the gate's keys, grants and store are never readable by an agent", what, abs, p)
		}
	}
	o := j.fold(func(s rule.Set) rule.Verdict { return s.CheckPath(access, abs, j.rootsFor(abs)) })
	v := o.verdict(what + " reading " + abs)
	if v.Decision == Deny && v.Code == CodeNotGranted && !j.inRoots(abs) {
		v.Code = CodeOutside
	}
	return v
}

// commandDirs returns the directories, absolute and unresolved, a command
// may run in; nil when the line changed directory in a way that cannot be
// followed.
func (j *judge) commandDirs(c command.Command) []string {
	if c.DirUnknown {
		return nil
	}
	if len(c.Dirs) == 0 {
		return []string{j.cwd}
	}
	out := make([]string, 0, len(c.Dirs))
	for _, d := range c.Dirs {
		switch {
		case d == "":
			out = append(out, j.cwd)
		case d == "~" || strings.HasPrefix(d, "~/"):
			// cd ~/x: the gate knows the home directory
			if j.p.Home == "" {
				return nil
			}
			out = append(out, j.p.Home+d[1:])
		case strings.HasPrefix(d, "/"):
			out = append(out, d)
		default:
			out = append(out, j.cwd+"/"+d)
		}
	}
	return out
}

// expandPrefix is what a non-literal word is known to start with once the
// shell expands it: the literal text before its first expansion, with a
// leading ~, $HOME or $PWD replaced by its value. known is false when the
// word starts with a value the gate cannot see ($X, $(…)), so it may be
// any path. Quotes are dropped without honouring them, which can only make
// the prefix shorter: wildcards inside quotes count as wildcards.
func (j *judge) expandPrefix(text string, dir string) (prefix string, known bool) {
	prefix, _, known = j.expandPrefixNext(text, dir)
	return prefix, known
}

// expandPrefixNext is expandPrefix that also returns the character that
// ends the prefix (0 at the end of the word).
func (j *judge) expandPrefixNext(text string, dir string) (prefix string, next byte, known bool) {
	t := strings.NewReplacer(`"`, "", `'`, "").Replace(text)
	switch {
	case t == "~" || strings.HasPrefix(t, "~/"):
		if j.p.Home == "" {
			return "", 0, false
		}
		t = j.p.Home + t[1:]
	case strings.HasPrefix(t, "~"):
		return "/", '~', true // ~user: some user's home
	case hasVarPrefix(t, "HOME"):
		if j.p.Home == "" {
			return "", 0, false
		}
		t = j.p.Home + trimVar(t, "HOME")
	case hasVarPrefix(t, "JOULE_HOME") && len(j.p.Private) > 0:
		// the gate's own directory, by the name the person's shell gives it
		t = j.p.Private[0] + trimVar(t, "JOULE_HOME")
	case hasVarPrefix(t, "PWD"):
		if dir == "" || j.pwdSet {
			return "", 0, false
		}
		t = dir + trimVar(t, "PWD")
	case strings.HasPrefix(t, "$") || strings.HasPrefix(t, "`") || strings.HasPrefix(t, "{}"):
		return "", 0, false // a value, command output, or xargs' and find's {}
	case strings.HasPrefix(t, "<(") || strings.HasPrefix(t, ">("):
		return "/dev/fd/", '$', true // a pipe
	}
	if i := strings.IndexAny(t, "$`*?[{\\~<>("); i >= 0 {
		t, next = t[:i], t[i]
	}
	if !strings.HasPrefix(t, "/") {
		if dir == "" {
			return "", 0, false
		}
		t = dir + "/" + t
	}
	return t, next, true
}

// hasVarPrefix reports a word starting with $NAME or ${NAME} and nothing
// more of the name ($HOMEDIR is another variable).
func hasVarPrefix(t, name string) bool {
	if strings.HasPrefix(t, "${"+name+"}") {
		return true
	}
	rest, ok := strings.CutPrefix(t, "$"+name)
	if !ok {
		return false
	}
	if rest == "" {
		return true
	}
	c := rest[0]
	return !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z')
}

func trimVar(t, name string) string {
	if r, ok := strings.CutPrefix(t, "${"+name+"}"); ok {
		return r
	}
	return strings.TrimPrefix(t, "$"+name)
}

// cleanPrefix cleans the directory part of a path prefix, keeping a
// trailing partial name: /a/./b/../c/jo stays a prefix of /a/c/joule.
func cleanPrefix(p string) string {
	i := strings.LastIndexByte(p, '/')
	dir, name := path.Clean(p[:i+1]), p[i+1:]
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// reaches reports whether a word that starts with prefix may name target or
// a path below it. With dotless, a wildcard at the start of a name does not
// match a name starting with '.', as bash globs by default.
func reaches(prefix, target string, dotless bool) bool {
	if within(strings.TrimSuffix(prefix, "/"), target) && prefix != "/" {
		return true // the prefix is already inside target
	}
	if !strings.HasPrefix(target, prefix) {
		return false
	}
	if dotless && strings.HasSuffix(prefix, "/") && strings.HasPrefix(target[len(prefix):], ".") {
		return false
	}
	return true
}

// plainGlob returns the absolute pattern of a word, in dir, that is a path
// with the wildcards * and ? and nothing else the shell expands or that a
// shell option could widen (brackets, braces, **, extended globs, ..);
// plain is false for any other word, which is then judged by its prefix.
func plainGlob(text, dir string) (pattern string, plain bool) {
	t := strings.NewReplacer(`"`, "", `'`, "").Replace(text)
	if !strings.ContainsAny(t, "*?") || strings.ContainsAny(t, "$`[]{}\\~<>()^#!|@+") {
		return "", false
	}
	if !strings.HasPrefix(t, "/") {
		if dir == "" {
			return "", false
		}
		t = dir + "/" + t
	}
	if slices.Contains(strings.Split(t, "/"), "..") {
		return "", false
	}
	return path.Clean(t), true
}

// globReaches reports whether a plain glob pattern may name target or a
// path below it, as written or expanded. A wildcard expands only onto names that exist, name
// by name, so the pattern must match target's names as far as both go,
// and the path the wildcards expand onto must exist. With dotglob unset a
// name starting with '.' is matched by a literal dot only. A name that is
// ** (globstar) matches any number of names, none starting with '.' unless
// dotglob; elsewhere, and without globstar, ** is *.
func globReaches(pattern, target string, dotglob bool) bool {
	if within(pattern, target) {
		return true // where nothing matches, the word stays as written, inside target
	}
	pc := strings.Split(strings.TrimPrefix(pattern, "/"), "/")
	tc := strings.Split(strings.TrimPrefix(target, "/"), "/")
	// last is how many of target's names the wildcards must find on disk.
	var match func(i, j, last int) bool
	match = func(i, j, last int) bool {
		for ; i < len(pc) && j < len(tc); i, j = i+1, j+1 {
			if pc[i] == "**" {
				if match(i+1, j, last) {
					return true // no name
				}
				if !dotglob && strings.HasPrefix(tc[j], ".") {
					return false
				}
				return match(i, j+1, j+1) // one more name, and maybe others
			}
			if ok, err := path.Match(pc[i], tc[j]); err != nil || !ok {
				return false
			}
			if !dotglob && strings.HasPrefix(tc[j], ".") && !strings.HasPrefix(pc[i], ".") {
				return false
			}
			if strings.ContainsAny(pc[i], "*?") {
				last = j + 1
			}
		}
		if i < len(pc) {
			// The rest of the pattern expands inside target, which must
			// be a directory for that.
			if fi, err := os.Stat(target); err != nil || !fi.IsDir() {
				return false
			}
			last = len(tc)
		}
		if last == 0 {
			return true
		}
		_, err := os.Lstat(strings.Join(strings.Split(target, "/")[:last+1], "/"))
		return err == nil
	}
	return match(0, 0, 0)
}

// globsDotfiles reports a line that may make wildcards match names that
// start with '.'.
func globsDotfiles(line string) bool {
	return strings.Contains(line, "dotglob") || strings.Contains(line, "GLOBIGNORE") || strings.Contains(line, "globskipdots")
}

// reachesAny returns the first of paths that word, expanded in one of dirs,
// may name.
func (j *judge) reachesAny(w command.Word, dirs []string, paths []string) (string, bool) {
	if len(dirs) == 0 {
		dirs = []string{""}
	}
	for _, d := range dirs {
		prefix, next, known := j.expandPrefixNext(w.Text, d)
		if !known {
			continue
		}
		// Only a wildcard at the start of a name skips dotfiles; an
		// expansion there ($X, {.,}x) may begin with a dot.
		dotless := !j.dotglob && (next == '*' || next == '?' || next == '[')
		prefix = cleanPrefix(prefix)
		pattern, plain := plainGlob(w.Text, d)
		for _, p := range paths {
			if reaches(prefix, p, dotless) && (!plain || globReaches(pattern, p, j.dotglob)) {
				return p, true
			}
		}
	}
	return "", false
}

// readerArgs judges the operands of a program that reads the files they
// name (cat .env, head ~/.ssh/id_rsa, diff /dev/null steward.key).
func (j *judge) readerArgs(c command.Command) (Verdict, bool) {
	name := path.Base(c.Args[0].Text)
	dirs := j.commandDirs(c)
	skip := firstOperandIsCode(name, c.Args[1:])
	for i, w := range c.Args[1:] {
		if i == skip {
			continue // the pattern or script, not a file
		}
		text := w.Text
		if !w.Literal && strings.HasPrefix(text, "<(") && strings.HasSuffix(text, ")") {
			continue // a pipe from a command the line lists, which is judged
		}
		if w.Literal {
			if strings.HasPrefix(text, "-") {
				_, v, ok := strings.Cut(text, "=")
				if !ok || v == "" {
					continue
				}
				text = v
			}
			if text == "" || text == "-" || harmlessDevice(text) {
				continue
			}
			if isNetworkPath(text) {
				continue // an ordinary file name to the program: it does not exist
			}
			if dirs == nil && !strings.HasPrefix(text, "/") {
				return unknownPath("%s reads %q in a directory the line changed to in a way the gate cannot follow", name, truncate(text)), true
			}
			for _, d := range dirsOrUnknown(dirs) {
				abs, err := j.resolveIn(d, text)
				if err != nil {
					return deny(CodeMalformed, "%s reads %q: %v", name, truncate(text), err), true
				}
				if v := j.readVerdict(name, abs); v.Decision != Allow {
					return v, true
				}
			}
			continue
		}
		if v, bad := j.readExpanded(name, w, dirs); bad {
			return v, true
		}
	}
	return Verdict{}, false
}

// readExpanded judges a non-literal word a program or redirection reads: a
// word that can reach the gate's private files never; otherwise the
// directory its literal part names must be readable, and whatever it
// matches now is judged file by file, deny rules included. A word that
// starts with a value the gate cannot see is refused.
func (j *judge) readExpanded(name string, w command.Word, dirs []string) (Verdict, bool) {
	if p, ok := j.reachesAny(w, dirs, j.p.Private); ok {
		return deny(CodeSelfTamper, "%s reads %q, which can expand onto %s: the gate's keys, grants and store are never readable by an agent", name, truncate(w.Text), p), true
	}
	if dirs == nil && !strings.HasPrefix(w.Text, "~") && !strings.HasPrefix(w.Text, "$HOME") && !strings.HasPrefix(w.Text, "/") {
		return unknownPath("%s reads %q in a directory the line changed to in a way the gate cannot follow", name, truncate(w.Text)), true
	}
	for _, d := range dirsOrUnknown(dirs) {
		prefix, known := j.expandPrefix(w.Text, d)
		if !known {
			return unknownPath("%s reads %q, a path computed when the line runs", name, truncate(w.Text)), true
		}
		// Where the word can lead: the directory its literal part names
		// must be readable; what it matches now is judged file by file,
		// deny rules included.
		dir := cleanPrefix(prefix)
		dir = dir[:strings.LastIndexByte(dir, '/')+1]
		abs, err := j.resolve(path.Clean(dir))
		if err != nil {
			return deny(CodeMalformed, "%s reads %q: %v", name, truncate(w.Text), err), true
		}
		o := j.fold(func(s rule.Set) rule.Verdict { return s.CheckPath(rule.Read, abs, j.rootsFor(abs)) })
		if v := o.verdict(fmt.Sprintf("%s reading %q (files in %s)", name, truncate(w.Text), abs)); v.Decision != Allow {
			if v.Code == CodeNotGranted && !j.inRoots(abs) {
				v.Code = CodeOutside
			}
			return v, true
		}
		matches, ok := j.expandWord(w.Text, d)
		if !ok {
			return unknownPath("%s reads %q, a path computed when the line runs", name, truncate(w.Text)), true
		}
		for _, m := range matches {
			if strings.HasPrefix(m, "-") {
				return deny(CodeUnanalyzable, "%s reads %q, which expands to %q: the program takes that for an option", name, truncate(w.Text), truncate(m)), true
			}
			if !strings.HasPrefix(m, "/") {
				m = d + "/" + m
			}
			abs, err := j.resolve(m)
			if err != nil {
				return deny(CodeMalformed, "%s reads %q: %v", name, truncate(m), err), true
			}
			if v := j.readVerdict(name, abs); v.Decision != Allow {
				return v, true
			}
		}
	}
	return Verdict{}, false
}

func dirsOrUnknown(dirs []string) []string {
	if dirs == nil {
		return []string{""}
	}
	return dirs
}

// expandWord expands a word the way the shell will, as far as the gate
// can see: ~, $HOME and $PWD, braces and globs against the file system as
// it is now. It reports false for a word with any other expansion.
func (j *judge) expandWord(text, dir string) ([]string, bool) {
	f, err := syntax.NewParser().Parse(strings.NewReader("x "+text+"\n"), "")
	if err != nil || len(f.Stmts) != 1 {
		return nil, false
	}
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) != 2 || len(f.Stmts[0].Redirs) > 0 || len(call.Assigns) > 0 {
		return nil, false
	}
	w := call.Args[1]
	plain := true
	syntax.Walk(w, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst, *syntax.ArithmExp, *syntax.ProcSubst, *syntax.ExtGlob:
			plain = false
		case *syntax.ParamExp:
			// $HOME and $PWD alone; anything else is a value the gate cannot see.
			if n.Param == nil || n.Param.Value != "HOME" && n.Param.Value != "PWD" || n.Excl || n.Length ||
				n.Index != nil || n.Slice != nil || n.Repl != nil || n.Exp != nil {
				plain = false
			}
		}
		return plain
	})
	if !plain || j.pwdSet && strings.Contains(text, "PWD") {
		return nil, false
	}
	cfg := &expand.Config{
		Env: expand.ListEnviron("HOME="+j.p.Home, "PWD="+dir),
		ReadDir2: func(p string) ([]os.DirEntry, error) {
			if !path.IsAbs(p) {
				p = dir + "/" + p
			}
			return os.ReadDir(p)
		},
		DotGlob: j.dotglob,
	}
	fields, err := expand.Fields(cfg, w)
	if err != nil {
		return nil, false
	}
	return fields, true
}

// harmlessDevice reports devices that hold no one's data.
func harmlessDevice(p string) bool {
	switch p {
	case "/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty":
		return true
	}
	return false
}

// gitSweep reports a git command that deletes every untracked file below
// the directory it runs in (git stash -u or -a, git clean), which takes
// the hosts' untracked hook configuration with it, and the -C directories
// it names.
func gitSweep(c command.Command) (chdirs []string, sweeps bool) {
	sub, args, chdirs := gitSubcommand(c)
	switch sub {
	case "clean":
		for _, w := range args {
			t := w.Text
			if w.Literal && (t == "--dry-run" || len(t) > 1 && t[0] == '-' && t[1] != '-' && strings.ContainsRune(t, 'n')) {
				return chdirs, false // git clean -n only lists
			}
		}
		return chdirs, true
	case "stash":
	default:
		return nil, false
	}
	for _, w := range args {
		t := w.Text
		switch {
		case !w.Literal:
			return chdirs, true // may be -u
		case t == "--include-untracked" || t == "--all" || t == "--":
			return chdirs, t != "--"
		case strings.HasPrefix(t, "-") && !strings.HasPrefix(t, "--") && strings.ContainsAny(t[1:], "ua"):
			if !strings.HasPrefix(t, "-m") {
				return chdirs, true
			}
		}
	}
	return nil, false
}

// gitWorkDirs resolves where a git command works: each directory it may
// start in, moved by its -C options in order.
func (j *judge) gitWorkDirs(dirs, chdirs []string) ([]string, error) {
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		for _, cd := range chdirs {
			if strings.HasPrefix(cd, "/") {
				d = cd
			} else {
				d = d + "/" + cd
			}
		}
		abs, err := j.resolve(d)
		if err != nil {
			return nil, err
		}
		out = append(out, abs)
	}
	return out, nil
}

// sweepVerdict denies a git command that would delete a protected
// untracked file below where it runs.
func (j *judge) sweepVerdict(c command.Command) (Verdict, bool) {
	chdirs, sweeps := gitSweep(c)
	if !sweeps {
		return Verdict{}, false
	}
	dirs := j.commandDirs(c)
	if dirs == nil {
		return deny(CodeUnanalyzable, "%s deletes untracked files in a directory the gate cannot follow", quoteArgs(c.Args)), true
	}
	abss, err := j.gitWorkDirs(dirs, chdirs)
	if err != nil {
		return deny(CodeMalformed, "%s: %v", quoteArgs(c.Args), err), true
	}
	for _, abs := range abss {
		for _, p := range j.p.Protected {
			if within(p, abs) && p != abs {
				if _, err := os.Lstat(p); err == nil {
					return deny(CodeSelfTamper, "%s deletes the untracked files below %s, %s among them: the gate's own files", quoteArgs(c.Args), abs, p), true
				}
			}
		}
	}
	return Verdict{}, false
}

// glob judges the Glob tool: the listing reads everything below the
// directory the pattern's literal part names, and must not reach the
// gate's private files.
func (j *judge) glob(base, pattern string) Verdict {
	if !strings.HasPrefix(base, "/") {
		base = j.cwd + "/" + base
	}
	full := pattern
	switch {
	case strings.HasPrefix(pattern, "~"):
		return deny(CodeMalformed, "input.pattern %q starts with ~, which Glob does not expand", truncate(pattern))
	case !strings.HasPrefix(pattern, "/"):
		full = base + "/" + pattern
	}
	prefix := full
	if i := strings.IndexAny(full, "*?[{\\"); i >= 0 {
		prefix = full[:i]
		if rest := full[i:]; strings.Contains(rest, "..") {
			return deny(CodeUnanalyzable, "input.pattern %q climbs with .. after a wildcard or brace, so the gate cannot bound what it lists", truncate(pattern))
		}
	}
	prefix = cleanPrefix(prefix)
	for _, p := range j.p.Private {
		// Glob's own matcher (ripgrep or node-glob) may match dotfiles.
		if reaches(prefix, p, false) {
			return deny(CodeSelfTamper, "listing %q can reach %s: the gate's keys, grants and store are never readable by an agent", truncate(pattern), p)
		}
	}
	dir := prefix[:strings.LastIndexByte(prefix, '/')+1]
	abs, err := j.resolve(path.Clean(dir))
	if err != nil {
		return deny(CodeMalformed, "input.pattern %q: %v", truncate(pattern), err)
	}
	if slices.ContainsFunc(j.p.Private, func(p string) bool { return within(abs, p) }) {
		return deny(CodeSelfTamper, "listing %s: the gate's keys, grants and store are never readable by an agent", abs)
	}
	o := j.fold(func(s rule.Set) rule.Verdict { return s.CheckPath(rule.Read, abs, j.rootsFor(abs)) })
	v := o.verdict(fmt.Sprintf("listing %q (names below %s)", truncate(pattern), abs))
	if v.Decision == Deny && v.Code == CodeNotGranted && !j.inRoots(abs) {
		v.Code = CodeOutside
		v.Reason = fmt.Sprintf("listing %q reads names below %s, outside the workspace %s, and no rule grants it", truncate(pattern), abs, strings.Join(j.roots, ", "))
	}
	return v
}

// globListings judges the shell's own listing of a directory for a glob
// word (echo ~/.ssh/*, ls /etc/*.conf): like the Glob tool, it reads the
// names below the directory the word's literal part names.
func (j *judge) globListings(c command.Command) (Verdict, bool) {
	dirs := j.commandDirs(c)
	for _, w := range c.Args[1:] {
		if w.Literal || !strings.ContainsAny(w.Text, "*?[") {
			continue
		}
		for _, d := range dirsOrUnknown(dirs) {
			prefix, next, known := j.expandPrefixNext(w.Text, d)
			if !known || next != '*' && next != '?' && next != '[' {
				continue // a value first: what it lists is unknown, and judged where it is read
			}
			dir := cleanPrefix(prefix)
			dir = path.Clean(dir[:strings.LastIndexByte(dir, '/')+1])
			abs, err := j.resolve(dir)
			if err != nil {
				return deny(CodeMalformed, "the glob %q: %v", truncate(w.Text), err), true
			}
			if j.inRoots(abs) {
				continue
			}
			o := j.fold(func(s rule.Set) rule.Verdict { return s.CheckPath(rule.Read, abs, j.rootsFor(abs)) })
			if v := o.verdict(fmt.Sprintf("the glob %q, which lists the names in %s,", truncate(w.Text), abs)); v.Decision != Allow {
				if v.Code == CodeNotGranted {
					v.Code = CodeOutside
				}
				return v, true
			}
		}
	}
	return Verdict{}, false
}

// patternFirst are readers whose first operand is a pattern, filter or
// script unless an option gives it (zgrep -e, yq -f).
var patternFirst = map[string][]string{
	"zgrep": {"-e", "-f", "--regexp", "--file"}, "ag": {}, "ack": {}, "look": {}, "yq": {"-f", "--from-file"},
}

// firstOperandIsCode returns the index in args of the pattern or script
// operand of a pattern-first reader, or -1.
func firstOperandIsCode(name string, args []command.Word) int {
	given, ok := patternFirst[name]
	if !ok {
		return -1
	}
	for _, w := range args {
		for _, o := range given {
			if w.Text == o || strings.HasPrefix(w.Text, o+"=") || len(o) == 2 && strings.HasPrefix(w.Text, o) {
				return -1
			}
		}
	}
	for i, w := range args {
		if w.Text == "--" {
			if i+1 < len(args) {
				return i + 1
			}
			return -1
		}
		if !strings.HasPrefix(w.Text, "-") || w.Text == "-" {
			return i
		}
	}
	return -1
}

// treeWriters are git subcommands that rewrite tracked files in the work
// tree: checking out another commit, restoring, resetting, stashing the
// uncommitted changes or merging. A hook configuration the team commits
// (.claude/settings.json) is rewritten with everything else, to a version
// without the hook, or back from a hook installed but not yet committed.
var treeWriters = map[string]bool{
	"checkout": true, "switch": true, "restore": true, "reset": true, "stash": true, "merge": true,
	"rebase": true, "pull": true, "cherry-pick": true, "revert": true, "am": true, "read-tree": true,
	"checkout-index": true, "apply": true, "sparse-checkout": true,
}

// gitSubcommand returns a git command's subcommand and its arguments after
// the global options. The directories of -C are in the command's Dirs
// already; chdirs is always empty.
func gitSubcommand(c command.Command) (sub string, args []command.Word, chdirs []string) {
	if path.Base(c.Args[0].Text) != "git" {
		return "", nil, nil
	}
	rest := c.Args[1:]
	i := 0
	for ; i < len(rest) && strings.HasPrefix(rest[i].Text, "-"); i++ {
		switch rest[i].Text {
		case "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env":
			// the analysis lists git -C DIR as running in DIR (Command.Dirs)
			i++
		}
	}
	if i >= len(rest) {
		return "", nil, chdirs
	}
	return rest[i].Text, rest[i+1:], chdirs
}

// branchOnly reports a git checkout or switch that only creates (or
// resets) a branch at HEAD, or detaches there: no file changes. A start
// point other than HEAD, paths, --force, --merge, --patch and switch
// --orphan (which empties the work tree) all rewrite files.
func branchOnly(sub string, args []command.Word) bool {
	created := false
	var ops []string
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Literal {
			return false
		}
		t := w.Text
		valueNext := sub == "checkout" && (t == "-b" || t == "-B" || t == "--orphan") ||
			sub == "switch" && (t == "-c" || t == "-C" || t == "--create" || t == "--force-create")
		switch {
		case valueNext:
			if i+1 >= len(args) || !args[i+1].Literal {
				return false
			}
			created = true
			i++
		case sub == "checkout" && (strings.HasPrefix(t, "--orphan=") || len(t) > 2 && (strings.HasPrefix(t, "-b") || strings.HasPrefix(t, "-B"))),
			sub == "switch" && (strings.HasPrefix(t, "--create=") || strings.HasPrefix(t, "--force-create=") ||
				len(t) > 2 && (strings.HasPrefix(t, "-c") || strings.HasPrefix(t, "-C"))):
			created = true
		case t == "--detach" || sub == "switch" && t == "-d":
			created = true
		case t == "-q" || t == "--quiet" || t == "--progress" || t == "--no-progress" || t == "--guess" ||
			t == "--no-guess" || t == "--no-track" || t == "-t" || t == "--track" || strings.HasPrefix(t, "--track=") ||
			t == "--ignore-other-worktrees" || t == "--no-recurse-submodules":
		case strings.HasPrefix(t, "-"):
			return false
		default:
			ops = append(ops, t)
		}
	}
	return created && (len(ops) == 0 || len(ops) == 1 && (ops[0] == "HEAD" || ops[0] == "@"))
}

// stashReadOnly reports git stash subcommands that change no file.
func stashReadOnly(args []command.Word) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0].Text {
	case "list", "show":
		return true
	}
	return false
}

// trackedRewriteVerdict denies a git command that rewrites tracked files
// where a protected path is tracked in the repository's index. A line that
// runs contained is left to the kernel, which refuses writing every
// protected path whoever writes it (git checkout, stash, merge and restore
// then work, and fail only where they would change one).
func (j *judge) trackedRewriteVerdict(c command.Command) (Verdict, bool) {
	if j.p.Contained {
		return Verdict{}, false
	}
	sub, args, chdirs := gitSubcommand(c)
	if !treeWriters[sub] || branchOnly(sub, args) || sub == "stash" && stashReadOnly(args) {
		return Verdict{}, false
	}
	if sub == "reset" && !slices.ContainsFunc(args, func(w command.Word) bool {
		return w.Text == "--hard" || w.Text == "--merge" || w.Text == "--keep" || !w.Literal
	}) && !slices.ContainsFunc(args, func(w command.Word) bool { return w.Text == "--" }) {
		return Verdict{}, false // a mixed or soft reset moves HEAD and the index only
	}
	dirs := j.commandDirs(c)
	if dirs == nil {
		dirs = []string{j.cwd}
	}
	abss, err := j.gitWorkDirs(dirs, chdirs)
	if err != nil {
		return deny(CodeMalformed, "%s: %v", quoteArgs(c.Args), err), true
	}
	for _, abs := range abss {
		top, index := gitIndex(abs)
		if index == nil {
			continue
		}
		for _, p := range j.p.Protected {
			if !within(p, top) || p == top {
				continue
			}
			if bytes.Contains(index, []byte(p[len(top)+1:])) {
				return deny(CodeSelfTamper, "%s rewrites tracked files, and %s, the hooks' configuration, is tracked in %s", quoteArgs(c.Args), p, top), true
			}
		}
	}
	return Verdict{}, false
}

// gitIndex finds the work tree that holds dir and returns its top and the
// bytes of its index (nil when there is none). Paths in the index are
// stored whole, so a path's bytes in it say it may be tracked.
func gitIndex(dir string) (string, []byte) {
	for d := dir; ; d = path.Dir(d) {
		if fi, err := os.Stat(d + "/.git"); err == nil && fi.IsDir() {
			b, err := os.ReadFile(d + "/.git/index")
			if err != nil {
				return d, nil
			}
			return d, b
		}
		if d == "/" {
			return "", nil
		}
	}
}

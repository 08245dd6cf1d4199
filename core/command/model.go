package command

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// A model is what the analysis knows of one program's command line, from
// its documentation: every option it accepts, what each option's value and
// each operand is to it (a file it reads or writes, a program it runs, or
// no file at all), and what it reads when no operand names a file. It is an
// allow-list: an option outside the model makes the line unanalyzable
// (unknown-option), since the gate cannot tell what it does.
//
// The tables are data (models.go and the files beside it); model.apply is
// the one engine that reads them.
type model struct {
	// opts are the options, as getopt would parse them.
	opts *optSpec
	// values says what an option's value is to the program, by the
	// option's parsed name ("-o", "--output"). An option not listed takes
	// no file (a count, a pattern, a format).
	values map[string]effect
	// refuse lists options that make the line unanalyzable, with why.
	refuse map[string]string
	// pattern: the first operand is a pattern, script or mode, not a file,
	// unless one of given supplies it (grep -e, sed -e, chmod --reference).
	pattern bool
	given   []string
	// operands is what the remaining operands are to the program.
	operands effect
	// dest: with two operands or more, the last is written, and it may be
	// a directory that receives the others under their own names (cp,
	// mv, ln, install); -t DIR gives it instead.
	dest bool
	// bare is what the program reads when no operand names a file.
	bare bare
	// bareIf are options without which a bareCwdIf program reads standard
	// input (grep reads its working directory only with -r).
	bareIf []string
	// tree lists options that make the program's writes recursive (rm -r,
	// cp -r, chmod -R): it then writes below each path it writes too;
	// "*" makes them always recursive (mv moves a directory whole).
	tree []string
	// numbers accepts the historical -NUM options (head -5, tail -20).
	numbers bool
	// passUnknown lets unknown options through: their meaning belongs to
	// code the program runs (a test binary's own flags); see the model.
	passUnknown func(name string) bool
	// subs are the subcommands, selected by the first operand; a word
	// that is no subcommand is refused.
	subs map[string]*model
	// custom judges what the table cannot say (checksum lists, dd
	// operands); it runs after the table, on the parsed arguments.
	custom func(a *analyzer, name string, p *parsedArgs, fr frame)
	// handler judges the whole command line instead of the table, for
	// programs whose arguments are a language of their own (find's
	// expression, sed and awk scripts, tar's old options, git, go).
	handler func(a *analyzer, name string, words []word, fr frame) []word
	// danger caches whether an option of the model runs a program or is
	// refused, so that a computed word that may be an option is refused.
	dangerOnce sync.Once
	danger     string
}

// effect is what a program does with a path it is given.
type effect uint8

const (
	noFile      effect = iota // a pattern, a count, a name: no file
	readsFile                 // reads the file, or the directory whole
	writesFile                // writes, creates or removes the file
	touches                   // creates the file or changes its times, keeping its content
	readsList                 // reads the file and every file it names, known only at run time
	writesDir                 // writes files of names known only at run time into the directory
	readsPlace                // works in the directory, or lists it (make -C DIR)
	runsProgram               // runs the value as a program with its arguments (listed as a command)
	runsShell                 // runs the value as shell code with sh -c
)

// bare is what a program reads when no operand names a file.
type bare uint8

const (
	bareStdin  bare = iota // standard input, or nothing
	bareCwd                // every file below the directory it runs in (rg, grep -r)
	bareCwdIf              // every file below the directory it runs in, with one of bareIf (grep -r)
	bareList               // the names below the directory it runs in (ls, du, tree)
	bareNoFile             // operands are never files (echo-like)
)

// dangerous reports an option of m that runs a program or is refused:
// a word computed when the line runs that may be an option is then
// refused, since it may be that option.
func (m *model) dangerous() string {
	m.dangerOnce.Do(func() {
		var names []string
		for n, e := range m.values {
			if e == runsProgram || e == runsShell {
				names = append(names, n)
			}
		}
		for n := range m.refuse {
			names = append(names, n)
		}
		sort.Strings(names)
		if len(names) > 0 {
			m.danger = names[0]
		}
	})
	return m.danger
}

// optionEffect reports whether an option of m has one of effects.
func (m *model) optionEffect(effects ...effect) bool {
	for _, e := range m.values {
		for _, x := range effects {
			if e == x {
				return true
			}
		}
	}
	return false
}

// apply judges a modeled program's arguments and returns the words to list
// for it. name is the program's name as the reasons give it ("git
// commit").
func (a *analyzer) apply(name string, m *model, words []word, fr frame) {
	if m.handler != nil {
		m.handler(a, name, words, fr)
		return
	}
	p := m.opts.parseStrict(words, m.numbers, m.passUnknown)
	if p.unknown != "" {
		a.fail(CodeUnknownOption, "%s is given the option %s, which the gate does not model: it cannot tell what the program does with it", name, quote(p.unknown))
		return
	}
	if p.computed != "" {
		if d := m.dangerous(); d != "" {
			a.refuseOption(name, "is given %s, which is computed when the line runs and may be an option such as %s", quote(p.computed), d)
			return
		}
		if m.pattern {
			name += " (a computed pattern is safe after -e)"
		}
		// The word may be any option the model knows, or an operand:
		// every path the program may derive is known only at run time.
		if m.optionEffect(readsFile, readsList) {
			a.unknownRead(name+" is given "+quote(p.computed)+", which may be any of its options", fr)
		}
		if m.optionEffect(writesFile, writesDir, touches) {
			a.unknownWrite(name+" is given "+quote(p.computed)+", which may be any of its options", fr)
		}
	}
	given := false
	for _, o := range p.opts {
		if a.err != nil {
			return
		}
		if why, ok := m.refuse[o.name]; ok {
			a.refuseOption(name, "%s %s", o.name, why)
			return
		}
		for _, g := range m.given {
			given = given || g == o.name
		}
		if o.hasArg {
			a.effect(name, o.name, m.values[o.name], o.arg, fr)
		}
	}
	ops := p.operands
	if m.pattern && !given && len(ops) > 0 {
		if !ops[0].Literal && ops[0].mayBeOption() && m.dangerous() != "" {
			a.refuseOption(name, "is given %s, which is computed when the line runs and may be an option such as %s", quote(ops[0].Text), m.dangerous())
			return
		}
		ops = ops[1:]
	}
	tree := len(m.tree) > 0 && (m.tree[0] == "*" || p.has(m.tree...))
	if m.dest && len(ops) >= 2 && !p.has("-t", "--target-directory") {
		last := ops[len(ops)-1]
		ops = ops[:len(ops)-1]
		if !p.has("-T", "--no-target-directory") {
			a.intoDir(name, last, ops, tree, fr)
		}
		a.writeTree(last, false, tree, fr)
	} else if o := p.get("-t", "--target-directory"); m.dest && o != nil {
		a.intoDir(name, o.arg, ops, tree, fr)
	}
	for _, w := range ops {
		if w.Literal && w.Text == "-" && m.operands != writesFile {
			continue // standard input
		}
		switch m.operands {
		case writesFile:
			a.writeTree(w, false, tree, fr)
			continue
		case readsPlace:
			a.readPlace(w, fr)
			continue
		}
		a.effect(name, "", m.operands, w, fr)
	}
	switch {
	case len(ops) > 0:
	case m.bare == bareCwd || m.bare == bareCwdIf && p.has(m.bareIf...):
		a.read(literalWord("."), fr)
	case m.bare == bareList:
		a.readPlace(literalWord("."), fr)
	}
	if m.custom != nil && a.err == nil {
		m.custom(a, name, &p, fr)
	}
}

// effect applies what a program does with one path word. opt names the
// option that gave it ("" for an operand).
func (a *analyzer) effect(name, opt string, e effect, w word, fr frame) {
	switch e {
	case readsFile:
		a.read(w, fr)
	case readsPlace:
		a.readPlace(w, fr)
	case writesFile:
		a.write(w, false, fr)
	case touches:
		a.write(w, true, fr)
	case readsList:
		a.read(w, fr)
		a.unknownRead(fmt.Sprintf("%s reads the files listed in %s", name, quote(w.Text)), fr)
	case writesDir:
		a.write(w, false, fr)
		a.unknownWrite(fmt.Sprintf("%s writes files it names itself into %s", name, quote(w.Text)), fr)
	case runsProgram:
		if !w.Literal {
			a.refuseOption(name, "%s is given %s, which is computed when the line runs", opt, quote(w.Text))
			return
		}
		prog := strings.Fields(w.Text)
		if len(prog) == 0 {
			return
		}
		cmd := make([]word, 0, len(prog)+1)
		for _, f := range prog {
			cmd = append(cmd, literalWord(f))
		}
		cmd = append(cmd, inputWord("{}"))
		inner := fr.wrapped(strings.Fields(name)[0])
		inner.raw = true // its arguments are the program's choice
		a.exec(cmd, nil, inner, byProgram)
	case runsShell:
		a.shellString(w, fr.wrapped(strings.Fields(name)[0]), "sh")
	}
}

// intoDir records what cp, mv, ln and install write into a destination
// directory: each source under its own name.
func (a *analyzer) intoDir(name string, dir word, sources []word, tree bool, fr frame) {
	for _, s := range sources {
		if !dir.Literal || !s.Literal {
			a.unknownWrite(fmt.Sprintf("%s writes %s into %s under a name known only when the line runs", name, quote(s.Text), quote(dir.Text)), fr)
			continue
		}
		base := strings.TrimRight(s.Text, "/")
		if i := strings.LastIndexByte(base, '/'); i >= 0 {
			base = base[i+1:]
		}
		switch base {
		case "", ".", "..":
			// cp -r src/. dst copies the contents into dst itself
			a.writeTree(dir, false, true, fr)
		default:
			a.writeTree(literalWord(strings.TrimSuffix(dir.Text, "/")+"/"+base), false, tree, fr)
		}
	}
}

// unknownRead records that the command reads paths known only when the
// line runs; why says where they come from.
func (a *analyzer) unknownRead(why string, fr frame) {
	a.addRead(Read{Path: why, Unknown: true})
}

// unknownWrite records that the command writes paths known only when the
// line runs.
func (a *analyzer) unknownWrite(why string, fr frame) {
	a.addWrite(Write{Path: why, Unknown: true})
}

// mayBeOption reports whether w may expand to a word starting with '-',
// or to several words one of which may: a literal word that starts with
// '-', or a computed one that starts with an expansion, a dash, a brace
// or a wildcard, or that the shell splits on blanks. A glob such as
// src/*.go or a quoted "a$x" expands only to words starting with its
// literal lead.
func (w word) mayBeOption() bool {
	if w.Literal {
		return len(w.Text) > 1 && w.Text[0] == '-'
	}
	if w.ifs {
		return true
	}
	// A glob (*.go) expands to names of files that exist, which the gate
	// checks when it decides (a file named -rf is refused there); a brace
	// ({-r,x}) expands to any word it spells.
	switch w.lead {
	case 0, '-', '{':
		return true
	}
	return false
}

// parseStrict splits a modeled program's words (words[0] is the program)
// into options and operands as GNU getopt does. An unknown option is
// reported in unknown; a computed word that may be an option, or a value
// that may split into several words, in computed (the word is then taken
// as an operand). numbers accepts -NUM; pass lets the options it names
// through as operands of code the program runs.
func (s *optSpec) parseStrict(words []word, numbers bool, pass func(string) bool) parsedArgs {
	s.build()
	var p parsedArgs
	args := words[1:]
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Literal && !w.ifs && strings.HasPrefix(w.prefix, "--") && strings.Contains(w.prefix, "=") {
			// --name=$X: a known option with a computed value
			name, _, _ := strings.Cut(w.prefix[2:], "=")
			if full, kind, ok := s.lookupLong(name); ok && kind != noArg {
				p.opts = append(p.opts, parsedOpt{name: "--" + full, arg: w.after(len(name) + 3), hasArg: true})
				continue
			}
		}
		if !w.Literal {
			if w.mayBeOption() && p.computed == "" {
				p.computed = w.Text
			}
			p.operands = append(p.operands, w)
			if !s.permute {
				p.operands = append(p.operands, args[i+1:]...)
				return p
			}
			continue
		}
		t := w.Text
		switch {
		case t == "-" || !strings.HasPrefix(t, "-"):
			p.operands = append(p.operands, w)
			if !s.permute {
				p.operands = append(p.operands, args[i+1:]...)
				return p
			}
			continue
		case t == "--":
			p.operands = append(p.operands, args[i+1:]...)
			return p
		case numbers && isNumberOption(t[1:]):
			p.opts = append(p.opts, parsedOpt{name: "-NUM"})
			continue
		case pass != nil && pass(t):
			p.operands = append(p.operands, w)
			continue
		case strings.HasPrefix(t, "--"):
			name, value, hasValue := strings.Cut(t[2:], "=")
			full, kind, ok := s.lookupLong(name)
			if !ok {
				p.unknown = t
				return p
			}
			o := parsedOpt{name: "--" + full}
			switch {
			case hasValue && kind == noArg:
				p.unknown = t
				return p
			case hasValue:
				o.arg, o.hasArg = literalWord(value), true
			case kind == twoArgs:
				if i+2 >= len(args) {
					p.opts = append(p.opts, o)
					return p
				}
				i += 2
				o.arg, o.hasArg = args[i], true
			case kind == requiredArg:
				if i+1 >= len(args) {
					p.opts = append(p.opts, o)
					return p // the program fails: the option needs a value
				}
				i++
				o.arg, o.hasArg = args[i], true
				if args[i].ifs && p.computed == "" {
					p.computed = args[i].Text
				}
			}
			p.opts = append(p.opts, o)
		default:
			for j := 1; j < len(t); j++ {
				c := t[j]
				kind, ok := s.short[c]
				if !ok {
					p.unknown = "-" + string(c)
					if len(t) > 2 {
						p.unknown += " (in " + t + ")"
					}
					return p
				}
				o := parsedOpt{name: "-" + string(c)}
				rest := t[j+1:]
				switch kind {
				case requiredArg:
					switch {
					case rest != "":
						o.arg, o.hasArg = literalWord(rest), true
					case i+1 < len(args):
						i++
						o.arg, o.hasArg = args[i], true
						if args[i].ifs && p.computed == "" {
							p.computed = args[i].Text
						}
					}
					j = len(t)
				case optionalArg:
					if rest != "" {
						o.arg, o.hasArg = literalWord(rest), true
					}
					j = len(t)
				case digitsArg:
					k := 0
					for k < len(rest) && rest[k] >= '0' && rest[k] <= '9' {
						k++
					}
					j += k
				}
				p.opts = append(p.opts, o)
			}
		}
	}
	return p
}

// isNumberOption reports the historical -NUM option of head, tail and
// uniq, with the unit letters they accept after it.
func isNumberOption(s string) bool {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i > 0 && strings.Trim(s[i:], "bcklmqvzf") == ""
}

// modelFor returns the model of a program by its name without directory,
// or nil.
func modelFor(base string) *model {
	modelsOnce.Do(buildModels)
	return models[base]
}

var (
	modelsOnce sync.Once
	models     map[string]*model
)

// Modeled reports whether the analysis holds a model of the program named
// base (without directory): its reads and writes are then in the
// analysis, and nothing else needs to guess which of its words are files.
func Modeled(base string) bool { return modelFor(base) != nil }

// ModeledPrograms lists the programs the analysis models, sorted.
func ModeledPrograms() []string {
	modelsOnce.Do(buildModels)
	names := make([]string, 0, len(models))
	for n := range models {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// subcommand applies the model of a program with subcommands: the global
// options, then the subcommand's own. It returns the subcommand's name, or
// "" when the line names none.
func (a *analyzer) subcommand(name string, m *model, words []word, fr frame) {
	p := m.opts.parseStrict(words, false, nil)
	if p.unknown != "" {
		a.fail(CodeUnknownOption, "%s is given the option %s, which the gate does not model: it cannot tell what the program does with it", name, quote(p.unknown))
		return
	}
	for _, o := range p.opts {
		if why, ok := m.refuse[o.name]; ok {
			a.refuseOption(name, "%s %s", o.name, why)
			return
		}
		if o.hasArg {
			a.effect(name, o.name, m.values[o.name], o.arg, fr)
		}
	}
	if len(p.operands) == 0 {
		if m.custom != nil {
			m.custom(a, name, &p, fr)
		}
		return
	}
	sub := p.operands[0]
	if !sub.Literal {
		a.refuseOption(name, "is given the subcommand %s, which is computed when the line runs", quote(sub.Text))
		return
	}
	sm, ok := m.subs[sub.Text]
	if !ok {
		a.fail(CodeUnknownOption, "%s %s is not a subcommand the gate models: it cannot tell what it does", name, quote(sub.Text))
		return
	}
	a.apply(name+" "+sub.Text, sm, p.operands, fr)
}

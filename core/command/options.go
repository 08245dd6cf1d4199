package command

import (
	"fmt"
	"strings"
	"sync"
)

type argKind int

const (
	noArg       argKind = iota
	requiredArg         // the rest of the word, or the next word
	optionalArg         // the rest of the word only (getopt "::", --name=value)
	digitsArg           // the digits that follow in the same word (perl -l, -0)
	twoArgs             // the next two words (jq --arg NAME VALUE); the second is the value
)

// optSpec describes a program's options the way getopt does. The tables
// are built from the getopt strings on first use: a process that never
// parses a given program's options (most never parse any) does not pay for
// building them at start-up.
type optSpec struct {
	shortSpec string
	longSpec  []string
	stopNames []string
	once      sync.Once

	short map[byte]argKind
	long  map[string]argKind
	// stopAfter lists options after which option parsing ends (python -c).
	stopAfter map[string]bool
	// permute lets options follow operands, as GNU getopt does unless the
	// program asks it not to. Wrappers that take a command never permute.
	permute bool
}

// spec describes a program's options. short uses getopt letters: "k:" takes
// an argument, "d::" takes the rest of the word, "l#" takes following
// digits. Each long name ends in "=" when it takes an argument and "?" when
// it takes one only after "=".
func spec(short string, long ...string) *optSpec {
	return &optSpec{shortSpec: short, longSpec: long}
}

// build makes the tables; every method that reads them calls it first.
func (s *optSpec) build() {
	s.once.Do(func() {
		s.short = make(map[byte]argKind, len(s.shortSpec))
		s.long = make(map[string]argKind, len(s.longSpec))
		short := s.shortSpec
		for i := 0; i < len(short); i++ {
			c := short[i]
			kind := noArg
			switch {
			case strings.HasPrefix(short[i+1:], "::"):
				kind, i = optionalArg, i+2
			case strings.HasPrefix(short[i+1:], ":"):
				kind, i = requiredArg, i+1
			case strings.HasPrefix(short[i+1:], "#"):
				kind, i = digitsArg, i+1
			}
			s.short[c] = kind
		}
		for _, l := range s.longSpec {
			switch {
			case strings.HasSuffix(l, "=="):
				s.long[strings.TrimSuffix(l, "==")] = twoArgs
			case strings.HasSuffix(l, "="):
				s.long[strings.TrimSuffix(l, "=")] = requiredArg
			case strings.HasSuffix(l, "?"):
				s.long[strings.TrimSuffix(l, "?")] = optionalArg
			default:
				s.long[l] = noArg
			}
		}
		s.stopAfter = make(map[string]bool, len(s.stopNames))
		for _, n := range s.stopNames {
			s.stopAfter[n] = true
		}
	})
}

func (s *optSpec) stopping(names ...string) *optSpec {
	s.stopNames = names
	return s
}

func (s *optSpec) permuting() *optSpec {
	s.permute = true
	return s
}

// parsedOpt is one option as given: name is "-k" or the full "--kill-after".
type parsedOpt struct {
	name   string
	arg    word
	hasArg bool
}

// parsedArgs is the result of parsing a program's arguments.
type parsedArgs struct {
	opts     []parsedOpt
	operands []word
	// uncertain explains why the options could not be parsed with
	// certainty; operands are then incomplete.
	uncertain string
	// unknown is an option the program's model does not list (parseStrict).
	unknown string
	// computed is a word computed when the line runs that may be an
	// option, or a value that may split into several words (parseStrict).
	computed string
}

func (p *parsedArgs) has(names ...string) bool {
	return p.get(names...) != nil
}

// get returns the last occurrence of any of names.
func (p *parsedArgs) get(names ...string) *parsedOpt {
	var found *parsedOpt
	for i := range p.opts {
		for _, n := range names {
			if p.opts[i].name == n {
				found = &p.opts[i]
			}
		}
	}
	return found
}

// parse splits args into options and operands. Unknown options, computed
// words that may be options, and arguments that may split into several
// words make the result uncertain.
func (s *optSpec) parse(args []word) parsedArgs {
	s.build()
	var p parsedArgs
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Literal {
			if w.optionLike() {
				p.uncertain = fmt.Sprintf("cannot tell whether %s is an option", quote(w.Text))
				return p
			}
		}
		t := w.Text
		switch {
		case !w.Literal || t == "-" || !strings.HasPrefix(t, "-"):
			p.operands = append(p.operands, w)
			if !s.permute {
				p.operands = append(p.operands, args[i+1:]...)
				return p
			}
			continue
		case t == "--":
			p.operands = append(p.operands, args[i+1:]...)
			return p
		case strings.HasPrefix(t, "--"):
			name, value, hasValue := strings.Cut(t[2:], "=")
			full, kind, ok := s.lookupLong(name)
			if !ok {
				p.uncertain = fmt.Sprintf("unknown option %s", quote(t))
				return p
			}
			o := parsedOpt{name: "--" + full}
			switch {
			case hasValue && kind == noArg:
				p.uncertain = fmt.Sprintf("option %s takes no value", quote(t))
				return p
			case hasValue:
				o.arg, o.hasArg = literalWord(value), true
			case kind == requiredArg:
				if i+1 >= len(args) {
					p.uncertain = fmt.Sprintf("option %s needs a value", quote(t))
					return p
				}
				i++
				if args[i].split {
					p.uncertain = fmt.Sprintf("the value %s of %s may split into several words", quote(args[i].Text), quote(t))
					return p
				}
				o.arg, o.hasArg = args[i], true
			}
			p.opts = append(p.opts, o)
			if s.stopAfter[o.name] {
				p.operands = append(p.operands, args[i+1:]...)
				return p
			}
		default:
			for j := 1; j < len(t); j++ {
				c := t[j]
				kind, ok := s.short[c]
				if !ok {
					p.uncertain = fmt.Sprintf("unknown option -%c in %s", c, quote(t))
					return p
				}
				o := parsedOpt{name: "-" + string(c)}
				rest := t[j+1:]
				switch kind {
				case requiredArg:
					if rest != "" {
						o.arg, o.hasArg = literalWord(rest), true
					} else {
						if i+1 >= len(args) {
							p.uncertain = fmt.Sprintf("option -%c needs a value", c)
							return p
						}
						i++
						if args[i].split {
							p.uncertain = fmt.Sprintf("the value %s of -%c may split into several words", quote(args[i].Text), c)
							return p
						}
						o.arg, o.hasArg = args[i], true
					}
					j = len(t)
				case optionalArg:
					if rest != "" {
						o.arg, o.hasArg = literalWord(rest), true
					}
					j = len(t)
				case digitsArg:
					k := 0
					if rest != "" && rest[0]|0x20 == 'x' {
						for k = 1; k < len(rest) && isHex(rest[k]); k++ {
						}
					} else {
						for k < len(rest) && rest[k] >= '0' && rest[k] <= '7' {
							k++
						}
					}
					if k > 0 {
						o.arg, o.hasArg = literalWord(rest[:k]), true
					}
					j += k
				}
				p.opts = append(p.opts, o)
				if s.stopAfter[o.name] {
					p.operands = append(p.operands, args[i+1:]...)
					return p
				}
			}
		}
	}
	return p
}

// lookupLong resolves a long option name, accepting an unambiguous prefix
// as getopt_long does.
func (s *optSpec) lookupLong(name string) (string, argKind, bool) {
	if k, ok := s.long[name]; ok {
		return name, k, true
	}
	found, kind, n := "", noArg, 0
	for full, k := range s.long {
		if strings.HasPrefix(full, name) && name != "" {
			found, kind, n = full, k, n+1
		}
	}
	return found, kind, n == 1
}

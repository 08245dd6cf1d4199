package hook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/tailscale/hujson"
)

// Host configuration files are JSON that people write: many hosts read them
// as JSONC (comments, trailing commas) and users lay them out their own way.
// An edit therefore changes the syntax tree hujson parsed, member by member:
// what joule does not change keeps its bytes (comments, indentation, key
// order, line endings), and what it adds is laid out as the file's siblings
// are.

// layout is how a file writes its JSON: its line ending and one level of
// indentation.
type layout struct{ nl, unit string }

// detectLayout reads b's line ending and indentation unit (the smallest
// indentation of a line that starts a member or element), two spaces when
// it has none.
func detectLayout(b []byte) layout {
	l := layout{nl: "\n", unit: "  "}
	if bytes.Contains(b, []byte("\r\n")) {
		l.nl = "\r\n"
	}
	best := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSuffix(line, "\r")
		t := strings.TrimLeft(line, " \t")
		if t == "" || len(t) == len(line) || strings.HasPrefix(t, "//") || strings.HasPrefix(t, "/*") || strings.HasPrefix(t, "*") {
			continue
		}
		if ind := line[:len(line)-len(t)]; best == "" || len(ind) < len(best) {
			best = ind
		}
	}
	if best != "" {
		l.unit = best
	}
	return l
}

// valueOf decodes a parsed value as encoding/json would with UseNumber (a
// repeated name: the last one wins).
func valueOf(v *hujson.Value) (any, error) {
	switch t := v.Value.(type) {
	case hujson.Literal:
		dec := json.NewDecoder(bytes.NewReader(t))
		dec.UseNumber()
		var x any
		err := dec.Decode(&x)
		return x, err
	case *hujson.Object:
		m := make(map[string]any, len(t.Members))
		for i := range t.Members {
			name, err := memberName(&t.Members[i])
			if err != nil {
				return nil, err
			}
			if m[name], err = valueOf(&t.Members[i].Value); err != nil {
				return nil, err
			}
		}
		return m, nil
	case *hujson.Array:
		a := make([]any, len(t.Elements))
		for i := range t.Elements {
			var err error
			if a[i], err = valueOf(&t.Elements[i]); err != nil {
				return nil, err
			}
		}
		return a, nil
	}
	return nil, fmt.Errorf("unexpected JSON value %T", v.Value)
}

func memberName(m *hujson.ObjectMember) (string, error) {
	lit, ok := m.Name.Value.(hujson.Literal)
	if !ok || lit.Kind() != '"' {
		return "", fmt.Errorf("object member name %s is not a string", m.Name.Value)
	}
	return lit.String(), nil
}

// normalize is v as valueOf would decode it once encoded: the numbers a Go
// map holds become json.Number, so that an unchanged value compares equal.
func normalize(v any) (any, error) {
	b, err := marshal(v, "", "")
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var x any
	return x, dec.Decode(&x)
}

func marshal(v any, prefix, indent string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, indent)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// render is want laid out as a value whose line starts with indent;
// inline puts it on one line.
func (l layout) render(want any, indent string, inline bool) (hujson.ValueTrimmed, error) {
	var b []byte
	var err error
	if inline {
		b, err = marshal(want, "", "")
	} else {
		b, err = marshal(want, indent, l.unit)
	}
	if err != nil {
		return nil, err
	}
	if l.nl != "\n" {
		b = bytes.ReplaceAll(b, []byte("\n"), []byte(l.nl))
	}
	v, err := hujson.Parse(b)
	if err != nil {
		return nil, err
	}
	return v.Value, nil
}

// edit changes v, on a line that starts with indent, into want
// (normalized), keeping the bytes of every member and element that stays
// the same.
func (l layout) edit(v *hujson.Value, want any, indent string) error {
	cur, err := valueOf(v)
	if err != nil {
		return err
	}
	if reflect.DeepEqual(cur, want) {
		return nil
	}
	switch w := want.(type) {
	case map[string]any:
		if obj, ok := v.Value.(*hujson.Object); ok {
			return l.editObject(obj, w, indent)
		}
	case []any:
		if arr, ok := v.Value.(*hujson.Array); ok {
			return l.editArray(arr, w, cur.([]any), indent)
		}
	}
	r, err := l.render(want, indent, !multiline(v))
	if err != nil {
		return err
	}
	v.Value = r
	return nil
}

// multiline reports whether a composite value is written over several
// lines (a literal counts as one that may be).
func multiline(v *hujson.Value) bool {
	switch v.Value.(type) {
	case *hujson.Object, *hujson.Array:
		c := v.Clone()
		c.BeforeExtra, c.AfterExtra = nil, nil
		return bytes.Contains(c.Pack(), []byte("\n"))
	}
	return true
}

func (l layout) editObject(obj *hujson.Object, want map[string]any, indent string) error {
	s := objectSeq{obj}
	have := map[string]bool{}
	for i := len(obj.Members) - 1; i >= 0; i-- {
		name, err := memberName(&obj.Members[i])
		if err != nil {
			return err
		}
		have[name] = true
		if _, ok := want[name]; !ok {
			removeItem(s, i)
		}
	}
	last := map[string]int{}
	for i := range obj.Members {
		name, _ := memberName(&obj.Members[i])
		last[name] = i
	}
	for name, i := range last {
		// An earlier duplicate stays as it is: the last one is the value.
		if err := l.edit(&obj.Members[i].Value, want[name], lineIndent(*s.lead(i), indent+l.unit)); err != nil {
			return err
		}
	}
	var added []string
	for name := range want {
		if !have[name] {
			added = append(added, name)
		}
	}
	sort.Strings(added)
	for _, name := range added {
		if err := l.insert(s, len(obj.Members), name, want[name], indent); err != nil {
			return err
		}
	}
	return nil
}

// lineIndent is the indentation of the line an item starts when its lead
// breaks the line, else def.
func lineIndent(lead hujson.Extra, def string) string {
	if _, brk := splitBreak(lead); brk != nil {
		return strings.TrimLeft(string(brk), "\r\n")
	}
	return def
}

func (l layout) editArray(arr *hujson.Array, want, cur []any, indent string) error {
	s := arraySeq{arr}
	// Keep the longest run of equal elements in order; between two kept
	// ones, pair the old and new elements one to one and edit them in
	// place (a hook group that lost or gained a handler keeps its layout),
	// remove the rest of the old and insert the rest of the new.
	n, m := len(cur), len(want)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if reflect.DeepEqual(cur[i], want[j]) {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type gap struct{ i0, i1, j0, j1 int }
	var gaps []gap
	i, j := 0, 0
	g := gap{}
	for i < n || j < m {
		switch {
		case i < n && j < m && reflect.DeepEqual(cur[i], want[j]):
			if g.i1 > g.i0 || g.j1 > g.j0 {
				gaps = append(gaps, g)
			}
			i, j = i+1, j+1
			g = gap{i, i, j, j}
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			j++
			g.j1 = j
		default:
			i++
			g.i1 = i
		}
	}
	if g.i1 > g.i0 || g.j1 > g.j0 {
		gaps = append(gaps, g)
	}
	for k := len(gaps) - 1; k >= 0; k-- {
		g := gaps[k]
		paired := min(g.i1-g.i0, g.j1-g.j0)
		for p := g.i1 - 1; p >= g.i0+paired; p-- {
			removeItem(s, p)
		}
		for p := range paired {
			if err := l.edit(&arr.Elements[g.i0+p], want[g.j0+p], lineIndent(*s.lead(g.i0 + p), indent+l.unit)); err != nil {
				return err
			}
		}
		for q := g.j0 + paired; q < g.j1; q++ {
			if err := l.insert(s, g.i0+q-g.j0, "", want[q], indent); err != nil {
				return err
			}
		}
	}
	return nil
}

// seq is what removing and inserting needs of an object's members or an
// array's elements.
type seq interface {
	len() int
	lead(i int) *hujson.Extra // before item i: after the bracket or comma
	tail(i int) *hujson.Extra // after item i's value, before its comma (nil: none)
	end() *hujson.Extra       // before the closing bracket
	remove(i int)
	insert(i int, lead hujson.Extra, name string, v hujson.ValueTrimmed, like int)
}

type objectSeq struct{ o *hujson.Object }

func (s objectSeq) len() int                 { return len(s.o.Members) }
func (s objectSeq) lead(i int) *hujson.Extra { return &s.o.Members[i].Name.BeforeExtra }
func (s objectSeq) tail(i int) *hujson.Extra { return &s.o.Members[i].Value.AfterExtra }
func (s objectSeq) end() *hujson.Extra       { return &s.o.AfterExtra }
func (s objectSeq) remove(i int)             { s.o.Members = slices.Delete(s.o.Members, i, i+1) }
func (s objectSeq) insert(i int, lead hujson.Extra, name string, v hujson.ValueTrimmed, like int) {
	m := hujson.ObjectMember{
		Name:  hujson.Value{BeforeExtra: lead, Value: hujson.String(name)},
		Value: hujson.Value{BeforeExtra: hujson.Extra(" "), Value: v},
	}
	if like >= 0 {
		ref := s.o.Members[like]
		m.Name.AfterExtra = spaceOnly(ref.Name.AfterExtra)
		m.Value.BeforeExtra = spaceOnly(ref.Value.BeforeExtra)
	}
	s.o.Members = slices.Insert(s.o.Members, i, m)
}

type arraySeq struct{ a *hujson.Array }

func (s arraySeq) len() int                 { return len(s.a.Elements) }
func (s arraySeq) lead(i int) *hujson.Extra { return &s.a.Elements[i].BeforeExtra }
func (s arraySeq) tail(i int) *hujson.Extra { return &s.a.Elements[i].AfterExtra }
func (s arraySeq) end() *hujson.Extra       { return &s.a.AfterExtra }
func (s arraySeq) remove(i int)             { s.a.Elements = slices.Delete(s.a.Elements, i, i+1) }
func (s arraySeq) insert(i int, lead hujson.Extra, _ string, v hujson.ValueTrimmed, _ int) {
	s.a.Elements = slices.Insert(s.a.Elements, i, hujson.Value{BeforeExtra: lead, Value: v})
}

// spaceOnly is e when it is only whitespace, else nil.
func spaceOnly(e hujson.Extra) hujson.Extra {
	if len(bytes.TrimLeft(e, " \t\r\n")) > 0 {
		return nil
	}
	return e
}

// splitBreak cuts e before its last line break: what belongs to the line
// before (comments) and the break with the next line's indentation.
func splitBreak(e hujson.Extra) (before, brk hujson.Extra) {
	i := bytes.LastIndexByte(e, '\n')
	if i < 0 {
		return e, nil
	}
	if i > 0 && e[i-1] == '\r' {
		i--
	}
	if len(bytes.TrimLeft(e[i:], " \t\r\n")) > 0 {
		return e, nil // a comment on the last line
	}
	return e[:i:i], e[i:]
}

func hasComment(e hujson.Extra) bool { return len(bytes.TrimLeft(e, " \t\r\n")) > 0 }

// removeItem takes item i out, with its commas, keeping the comments
// around it.
func removeItem(s seq, i int) {
	n := s.len()
	lead := *s.lead(i)
	var comments hujson.Extra
	if hasComment(lead) {
		comments = bytes.TrimRight(lead, " \t\r\n")
	}
	if i < n-1 {
		s.remove(i)
		if comments != nil {
			*s.lead(i) = glue(comments, *s.lead(i))
		}
		return
	}
	trailingComma := *s.tail(i) != nil
	s.remove(i)
	if n > 1 {
		prev := s.tail(n - 2)
		switch {
		case !trailingComma && *prev != nil:
			*s.end() = join(*prev, *s.end())
			*prev = nil
		case trailingComma && *prev == nil:
			*prev = hujson.Extra{}
		}
	}
	if comments != nil {
		*s.end() = glue(comments, *s.end())
	}
	if n == 1 && !hasComment(*s.end()) {
		*s.end() = nil
	}
}

// glue is comments followed by rest, with a line break between them when
// the comments end in a line comment and rest starts no new line.
func glue(comments, rest hujson.Extra) hujson.Extra {
	nl := bytes.LastIndexByte(comments, '\n')
	if bytes.LastIndex(comments, []byte("//")) > nl && !bytes.HasPrefix(bytes.TrimLeft(rest, " \t"), []byte("\n")) && !bytes.HasPrefix(bytes.TrimLeft(rest, " \t"), []byte("\r\n")) {
		return join(join(comments, hujson.Extra("\n")), rest)
	}
	return join(comments, rest)
}

func join(a, b hujson.Extra) hujson.Extra {
	return append(append(hujson.Extra{}, a...), b...)
}

// insert puts want at i (named name in an object whose line starts with
// indent), laid out as its neighbours are: on a line of its own when they
// are, inline when they share a line.
func (l layout) insert(s seq, i int, name string, want any, indent string) error {
	n := s.len()
	var lead hujson.Extra
	like := -1
	inline := false
	if n > 0 {
		like = min(i, n-1)
		if _, brk := splitBreak(*s.lead(like)); brk != nil {
			lead = brk
		} else {
			inline = true
			lead = spaceOnly(*s.lead(like))
		}
	} else {
		lead = hujson.Extra(l.nl + indent + l.unit)
		end := bytes.TrimRight(*s.end(), " \t\r\n")
		*s.end() = join(end, hujson.Extra(l.nl+indent))
	}
	v, err := l.render(want, lineIndent(lead, indent+l.unit), inline)
	if err != nil {
		return err
	}
	if i == n && n > 0 {
		// Appending: the comments before the closing bracket stay on the
		// line of the item that was last, and the comma style is kept.
		comments, brk := splitBreak(*s.end())
		if brk != nil && hasComment(comments) {
			lead = glue(comments, lead)
			if !bytes.Contains(lead, []byte("\n")) {
				lead = join(join(comments, brk), lead[len(comments):])
			}
			*s.end() = brk
		}
		trailing := *s.tail(n - 1) != nil
		s.insert(i, lead, name, v, like)
		if trailing {
			*s.tail(i) = hujson.Extra{}
		}
		return nil
	}
	s.insert(i, lead, name, v, like)
	return nil
}

package l1

import (
	"reflect"
	"strings"
	"testing"
)

// TestReadNamedRenames: renames by name in TypeScript, JavaScript and
// Python, as the reader reads them (the stage's renames through the real
// servers are in tiers/l1/lsp), and near-misses with their reasons.
func TestReadNamedRenames(t *testing.T) {
	rn := func(name string, k Kind, file string, to string) Rename {
		return Rename{Target: Symbol{Name: name, Kind: k, File: file}, To: to}
	}
	cases := []struct {
		in   string
		want Command
		why  string
	}{
		{"rename function foo to bar in src/x.ts", rn("foo", KindFunc, "src/x.ts", "bar"), ""},
		{"Rename the function `totalArea` in src/shapes.ts to `sumAreas`.", rn("totalArea", KindFunc, "src/shapes.ts", "sumAreas"), ""},
		{"rename class Circle to Disk", rn("Circle", KindClass, "", "Disk"), ""},
		{"Rename the class `Circle` to `Disk`", rn("Circle", KindClass, "", "Disk"), ""},
		{"rename the Circle class to Disk", rn("Circle", KindClass, "", "Disk"), ""},
		{"rename class Circle in pkg/geometry.py to Disk", rn("Circle", KindClass, "pkg/geometry.py", "Disk"), ""},
		{"rename method area of Circle to surface", rn("Circle.area", KindMethod, "", "surface"), ""},
		{"rename the method area of the class Circle to surface", rn("Circle.area", KindMethod, "", "surface"), ""},
		{"Rename Circle's area method to surface in src/shapes.ts", rn("Circle.area", KindMethod, "src/shapes.ts", "surface"), ""},
		{"rename Circle.area to surface", rn("Circle.area", KindAny, "", "surface"), ""},
		{"rename the function total_area in pkg/geometry.py to sum_areas", rn("total_area", KindFunc, "pkg/geometry.py", "sum_areas"), ""},
		{"rename total_area → sum_areas in geometry.py", rn("total_area", KindAny, "geometry.py", "sum_areas"), ""},
		{"rename the variable emoji in src/shapes.ts to smiley", rn("emoji", KindVar, "src/shapes.ts", "smiley"), ""},
		{"rename the constant emoji to smiley", rn("emoji", KindConst, "", "smiley"), ""},
		{"rename the interface Shape in src/shapes.ts to Figure", rn("Shape", KindInterface, "src/shapes.ts", "Figure"), ""},
		{"rename the type Shape to Figure", rn("Shape", KindType, "", "Figure"), ""},
		{"rename greet to welcome in src/util.js", rn("greet", KindAny, "src/util.js", "welcome"), ""},
		{"rename the function greet declared in util.js to welcome", rn("greet", KindFunc, "util.js", "welcome"), ""},
		{"rename the class Circle on line 6 of src/shapes.ts to Disk", Rename{Target: Symbol{Name: "Circle", Kind: KindClass, File: "src/shapes.ts", Line: 6}, To: "Disk"}, ""},
		{"rename the field radius of Circle to r", rn("Circle.radius", KindField, "", "r"), ""},
		// near misses
		{"rename the class Circle to 2D", nil, "not a valid"},
		{"rename the class Circle", nil, "no new name"},
		{"rename class Circle to Disk in the README only", nil, "README"},
		{"rename the class Circle to Disk in src/shapes.ts and src/main.ts", nil, "not understood"},
		{"rename the class Circle in src/a.ts to Disk in src/b.ts", nil, "two files"},
		{"rename the class Circle on line 6 to Disk on line 7", nil, "two lines"},
		{"rename the method area of to surface", nil, ""},
		{"rename the file to archive", nil, ""},
		{"rename the branch to main", nil, ""},
	}
	for _, c := range cases {
		got, err := Read(c.in)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Read(%q) = %#v (%v), want %#v", c.in, got, err, c.want)
			continue
		}
		if c.why != "" && (err == nil || !strings.Contains(err.Error(), c.why)) {
			t.Errorf("Read(%q): reason %v, want one holding %q", c.in, err, c.why)
		}
	}
}

// TestReadOrganizeImportsServed: organize imports of one TypeScript,
// JavaScript or Python file is its language server's (not goimports').
func TestReadOrganizeImportsServed(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Command
	}{
		{"organize imports in src/main.ts", Format{Glob: "src/main.ts", Imports: true}},
		{"Organise the imports of main.py.", Format{Glob: "main.py", Imports: true}},
		{"fix imports in src/util.js", Format{Glob: "src/util.js", Imports: true}},
		{"organize imports in main.go", Format{Glob: "main.go", Imports: true, GoOnly: true}},
		{"goimports src/main.ts", nil},
		{"organize imports in src/*.ts", nil},
	} {
		got, err := Read(c.in)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Read(%q) = %#v (%v), want %#v", c.in, got, err, c.want)
		}
	}
}

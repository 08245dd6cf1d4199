package l1

import (
	"fmt"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/types/typeutil"
	"golang.org/x/tools/refactor/satisfy"
)

// Methods and interfaces are coupled as gopls couples them: by the
// satisfy constraints in the code (a value of concrete type C assigned,
// passed, converted or returned as interface I), not by every type whose
// method set happens to match. A rename started at an interface method
// renames every method coupled to it, transitively; a rename started at a
// concrete method coupled to an interface method is refused, naming the
// interface method to rename instead.

// coupled adds to keys the methods that must be renamed with m, and
// returns them by key (m included).
func coupled(fset *token.FileSet, pkgs []*packages.Package, m *types.Func, mkey key, keys map[key]bool, to string) (map[key]*types.Func, error) {
	abstract := types.IsInterface(m.Signature().Recv().Type())
	name, declPath := m.Name(), m.Pkg().Path()
	lookup := func(ms *types.MethodSet) *types.Func {
		for i := 0; i < ms.Len(); i++ {
			if f, ok := ms.At(i).Obj().(*types.Func); ok && f.Name() == name && (token.IsExported(name) || f.Pkg().Path() == declPath) {
				return f
			}
		}
		return nil
	}
	type constraints struct {
		msets typeutil.MethodSetCache
		cs    map[satisfy.Constraint]bool
	}
	all := make([]*constraints, len(pkgs))
	for i, p := range pkgs {
		var f satisfy.Finder
		f.Find(p.TypesInfo, p.Syntax)
		all[i] = &constraints{cs: f.Result}
	}
	objs := map[key]*types.Func{mkey: m}
	for changed := true; changed; {
		changed = false
		for _, c := range all {
			for k := range c.cs {
				l, r := lookup(c.msets.MethodSet(k.LHS)), lookup(c.msets.MethodSet(k.RHS))
				if l == nil || r == nil {
					continue
				}
				lk, rk := keyOf(fset, l.Pos()), keyOf(fset, r.Pos())
				var add *types.Func
				var addKey key
				switch {
				case keys[lk] && !keys[rk]:
					add, addKey = r, rk
				case keys[rk] && !keys[lk]:
					add, addKey = l, lk
				default:
					continue
				}
				if !abstract {
					iface := l
					return nil, fmt.Errorf("rename: renaming method %s to %s would make %s no longer assignable to %s (rename %s.%s to change both)",
						name, to, types.TypeString(k.RHS, nil), types.TypeString(k.LHS, nil), typeName(iface.Signature().Recv().Type()), name)
				}
				keys[addKey], objs[addKey] = true, add
				changed = true
			}
		}
	}
	// The new name must not collide in any interface holding a renamed
	// method (an embedding interface included) nor in a coupled type.
	for _, p := range pkgs {
		for _, obj := range p.TypesInfo.Defs {
			tn, ok := obj.(*types.TypeName)
			if !ok || !types.IsInterface(tn.Type()) {
				continue
			}
			f, _, _ := types.LookupFieldOrMethod(tn.Type(), false, m.Pkg(), name)
			if f == nil || !keys[keyOf(fset, f.Pos())] {
				continue
			}
			if t, _, _ := types.LookupFieldOrMethod(tn.Type(), false, m.Pkg(), to); t != nil {
				return nil, fmt.Errorf("rename: interface %s already has a method %s (at %s)", tn.Name(), to, fset.Position(t.Pos()))
			}
		}
	}
	return objs, nil
}

package rule

import "testing"

func mustParse(b *testing.B, s string) Rule {
	b.Helper()
	r, err := Parse(s)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

func BenchmarkMatchCommand(b *testing.B) {
	args := argv("git -C /repo push --force-with-lease -u origin feature/x")
	for _, bc := range []struct {
		name string
		rule string
		mode Mode
	}{
		{"allow", "Bash(git push:*)", Allow},
		{"deny", "Bash(git push --force:*)", Deny},
		{"deny-rm", "Bash(rm -rf:*)", Deny},
	} {
		r := mustParse(b, bc.rule)
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				r.MatchCommand(args, bc.mode)
			}
		})
	}
}

func BenchmarkMatchPath(b *testing.B) {
	roots := tempRoots(b)
	abs := roots.Workspace + "/src/core/rule/testdata/deep/file_test.go"
	for _, bc := range []struct {
		name string
		rule string
		kind Access
		mode Mode
	}{
		{"allow", "Write(src/**/*_test.go)", Write, Allow},
		{"allow-miss", "Write(docs/**)", Write, Allow},
		{"deny", "Write(src/**/*_test.go)", Write, Deny},
		{"deny-miss", "Write(docs/**)", Write, Deny}, // resolves docs through symlinks
		{"deny-glob-first", "Read(**/.env)", Read, Deny},
		{"deny-tree", "Read(**/.env)", ReadTree, Deny},
	} {
		r := mustParse(b, bc.rule)
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				r.MatchPath(bc.kind, abs, roots, bc.mode)
			}
		})
	}
}

func BenchmarkResolve(b *testing.B) {
	ws, _ := symlinkFixture(b)
	for b.Loop() {
		if _, err := Resolve(ws, "src/inside/new/file.go"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	for b.Loop() {
		if _, err := Parse(`Bash(git commit -m "fix bug":*)`); err != nil {
			b.Fatal(err)
		}
	}
}

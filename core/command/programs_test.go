package command

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestProgramOptions covers the option tables of granted programs: what
// each option makes the program run, write or read.
func TestProgramOptions(t *testing.T) {
	cases := []struct {
		line                    string
		commands, writes, reads []string
		code                    string
	}{
		// go
		{line: "go test ./...", commands: cmds("go test ./..."), reads: cmds("<dir:.")},
		{line: "go test -exec 'sh x.sh' .", commands: cmds("go: sh x.sh ⟨{}⟩", "go test -exec sh x.sh ."), reads: cmds("<dir:.")},
		{line: "go build -toolexec=strace ./...", commands: cmds("go: strace ⟨{}⟩", "go build -toolexec=strace ./..."), reads: cmds("<dir:.")},
		{line: "go vet -vettool=$(which x) ./...", code: CodeProgramOption},
		{line: "go build -o bin/app .", commands: cmds("go build -o bin/app ."), writes: cmds(">bin/app"), reads: cmds("<dir:.")},
		{line: "go test -coverprofile=c.out -cpuprofile cpu.out ./...", commands: cmds("go test -coverprofile=c.out -cpuprofile cpu.out ./..."), writes: cmds(">c.out", ">cpu.out"), reads: cmds("<dir:.")},
		{line: "go build -o \"$OUT\" .", commands: cmds("go build -o ⟨\"$OUT\"⟩ ."), writes: cmds(">⟨\"$OUT\"⟩"), reads: cmds("<dir:.")},
		{line: "go build -modfile=alt.mod .", commands: cmds("go build -modfile=alt.mod ."), reads: cmds("<alt.mod", "<dir:.")},
		{line: "go generate ./...", commands: cmds("go generate ./..."), writes: cmds(">⟨go generate runs the commands of the packages' //go:generate comments, which write what they write⟩"), reads: cmds("<dir:.")},
		{line: "go generate -n -run x .", commands: cmds("go generate -n -run x ."), reads: cmds("<dir:.")},
		{line: "go env -w GOFLAGS=-x", code: CodeProgramOption},
		{line: "go env GOPATH", commands: cmds("go env GOPATH")},
		{line: "go tool pprof x", commands: cmds("go tool pprof x"), reads: cmds("<x")},
		{line: "go tool evil", code: CodeProgramOption},
		{line: "go -C /tmp build", commands: cmds("go -C /tmp build"), reads: cmds("<dir:/tmp/.")},
		{line: "go build -ldflags='-linkmode=external -extld=sh' .", code: CodeProgramOption},
		{line: "go build $(go list ./...)", code: CodeProgramOption},
		{line: "go test -run \"$T\" ./...", commands: cmds("go test -run ⟨\"$T\"⟩ ./..."), reads: cmds("<dir:.")},
		{line: "/usr/local/go/bin/go build -o x .", commands: cmds("/usr/local/go/bin/go build -o x ."), writes: cmds(">x"), reads: cmds("<dir:.")},
		// git
		{line: "git -C sub status", commands: cmds("git status"), reads: cmds("<dir:sub/.")},
		{line: "git -C /etc status", commands: cmds("git -C /etc status"), reads: cmds("<dir:/etc/.")},
		{line: "git -C ../x status", commands: cmds("git -C ../x status"), reads: cmds("<dir:../x/.")},
		{line: "git -c color.ui=never --no-pager log -1", commands: cmds("git log -1"), reads: cmds("<dir:.")},
		{line: "git -c core.fsmonitor='touch x' status", code: CodeProgramOption},
		{line: "git -c alias.st='!sh' st", code: CodeProgramOption},
		{line: "git -c include.path=x status", code: CodeProgramOption},
		{line: "git --config-env=core.pager=P log", code: CodeProgramOption},
		{line: "git --exec-path=/tmp status", code: CodeProgramOption},
		{line: "git --exec-path", commands: cmds("git --exec-path")},
		{line: "git --git-dir=x status", code: CodeProgramOption},
		{line: "git --work-tree /tmp status", code: CodeProgramOption},
		{line: "git $OPT status", code: CodeProgramOption},
		{line: "git diff --output=d.txt", commands: cmds("git diff --output=d.txt"), writes: cmds(">d.txt"), reads: cmds("<dir:.")},
		{line: "git log --output x -1", commands: cmds("git log --output x -1"), writes: cmds(">x"), reads: cmds("<dir:.")},
		{line: "git diff --no-index a b", commands: cmds("git diff --no-index a b"), reads: cmds("<dir:.", "<a", "<b")},
		{line: "git commit -F msg.txt", commands: cmds("git commit -F msg.txt"), reads: cmds("<dir:.", "<msg.txt")},
		{line: "git commit -m \"$(date)\"", commands: cmds("date", "git commit -m ⟨\"$(date)\"⟩"), reads: cmds("<dir:.")},
		{line: "git diff \"$X\"", code: CodeProgramOption},
		// sed
		{line: "sed -n '1,5p' f", commands: cmds("sed -n 1,5p f"), reads: cmds("<f")},
		{line: "sed -n '1e id' f", code: CodeProgramOption},
		{line: "sed -n 's/a/b/e' f", code: CodeProgramOption},
		{line: "sed -n 's/a/b/gpe' f", code: CodeProgramOption},
		{line: "sed -n '/x/{e id\n}' f", code: CodeProgramOption},
		{line: "sed -n 's/e/e/g' f", commands: cmds("sed -n s/e/e/g f"), reads: cmds("<f")},
		{line: "sed -n 'y/e/E/;p' f", commands: cmds("sed -n y/e/E/;p f"), reads: cmds("<f")},
		{line: "sed -n '1w out' f", commands: cmds("sed -n 1w out f"), writes: cmds(">out"), reads: cmds("<f")},
		{line: "sed -n 's/a/b/w out' f", commands: cmds("sed -n s/a/b/w out f"), writes: cmds(">out"), reads: cmds("<f")},
		{line: "sed -n '1r /etc/passwd' f", commands: cmds("sed -n 1r /etc/passwd f"), reads: cmds("</etc/passwd", "<f")},
		{line: "sed -i 's/a/b/' f g", commands: cmds("sed -i s/a/b/ f g"), writes: cmds(">f", ">g")},
		{line: "sed -n -f s.sed f", code: CodeProgramOption},
		{line: "sed --sandbox -n -f s.sed f", commands: cmds("sed --sandbox -n -f s.sed f"), reads: cmds("<s.sed", "<f")},
		{line: "sed -n \"$S\" f", code: CodeProgramOption},
		{line: "sed -n 'a\\\nline' f", commands: cmds("sed -n a\\\nline f"), reads: cmds("<f")},
		{line: "sed -n '1i hello e' f", commands: cmds("sed -n 1i hello e f"), reads: cmds("<f")},
		{line: "sed -n 'b end; e id; :end' f", code: CodeProgramOption},
		// sort
		{line: "sort -o out.txt in.txt", commands: cmds("sort -o out.txt in.txt"), writes: cmds(">out.txt"), reads: cmds("<in.txt")},
		{line: "sort in.txt --output=o", commands: cmds("sort in.txt --output=o"), writes: cmds(">o"), reads: cmds("<in.txt")},
		{line: "sort --compress-program=gzip big", commands: cmds("sort: gzip ⟨{}⟩", "sort --compress-program=gzip big"), reads: cmds("<big")},
		{line: "sort --compress-program=\"$P\" big", code: CodeProgramOption},
		// make
		{line: "make test VERBOSE=1", commands: cmds("make test VERBOSE=1"), reads: cmds("<dir:.")},
		{line: "make --eval='$(shell id)'", code: CodeProgramOption},
		{line: "make -E x", code: CodeProgramOption},
		{line: "make SHELL=/bin/evil", code: CodeRiskyEnv},
		{line: "make CC='touch x'", code: CodeRiskyEnv},
		{line: "make -f other.mk -C sub", commands: cmds("make -f other.mk -C sub"), reads: cmds("<other.mk", "<dir:sub")},
		// touch, mkdir, gofmt, readers
		{line: "touch a b", commands: cmds("touch a b"), writes: cmds(">>a", ">>b")},
		{line: "mkdir -p build/out", commands: cmds("mkdir -p build/out"), writes: cmds(">build/out")},
		{line: "touch \"$F\"", commands: cmds("touch ⟨\"$F\"⟩"), writes: cmds(">>⟨\"$F\"⟩"), reads: cmds("<⟨touch is given \"\\\"$F\\\"\", which may be any of its options⟩")},
		{line: "gofmt -w main.go", commands: cmds("gofmt -w main.go"), writes: cmds(">main.go")},
		{line: "gofmt -l .", commands: cmds("gofmt -l ."), reads: cmds("<.")},
		{line: "head -n 5 a.txt", commands: cmds("head -n 5 a.txt"), reads: cmds("<a.txt")},
		{line: "cat ~/.ssh/id_rsa", commands: cmds("cat ⟨~/.ssh/id_rsa⟩"), reads: cmds("<⟨~/.ssh/id_rsa⟩")},
		{line: "diff <(ls a) b", commands: cmds("ls a", "diff ⟨<(ls a)⟩ b"), reads: cmds("<dir:a", "<b")},
		{line: "cd sub && cat x", commands: cmds("cd sub", "cat x"), reads: cmds("<x", "<sub/x")},
		{line: "grep -f pats.txt -r src", commands: cmds("grep -f pats.txt -r src"), reads: cmds("<pats.txt", "<src")},
		{line: "grep -n main f", commands: cmds("grep -n main f"), reads: cmds("<f")},
		// rg, npm, npx, cargo, pytest, tar
		{line: "rg --pre=./conv x", commands: cmds("rg: ./conv ⟨{}⟩", "rg --pre=./conv x"), reads: cmds("<.")},
		{line: "rg --pre \"$P\" x", code: CodeProgramOption},
		{line: "npm test --script-shell=./x", code: CodeProgramOption},
		{line: "npm run build --node-options=--require=./x.js", code: CodeProgramOption},
		{line: "npm test -- --script-shell=x", commands: cmds("npm test -- --script-shell=x"), reads: cmds("<dir:.")},
		{line: "npx -p evil tsc", code: CodeProgramOption},
		{line: "npx tsc --noEmit", commands: cmds("npx tsc --noEmit")},
		{line: "cargo test --config 'build.rustc-wrapper=\"x\"'", code: CodeProgramOption},
		{line: "cargo build -Zunstable-options", code: CodeProgramOption},
		{line: "cargo build --target-dir /tmp/t", commands: cmds("cargo build --target-dir /tmp/t"), writes: cmds(">/tmp/t"), reads: cmds("<dir:.")},
		{line: "pytest -p evil", code: CodeProgramOption},
		{line: "pytest -q --junitxml=r.xml tests", commands: cmds("pytest -q --junitxml=r.xml tests"), writes: cmds(">r.xml"), reads: cmds("<tests")},
		{line: "tar --to-command=sh -xf a.tar", code: CodeProgramOption},
		{line: "tar -I 'sh -c id' -xf a.tar", code: CodeProgramOption},
		{line: "tar xIf sh a.tar", code: CodeProgramOption},
		{line: "tar --checkpoint-action=exec=id -cf a.tar .", code: CodeProgramOption},
		{line: "tar -czf a.tgz src", commands: cmds("tar -czf a.tgz src"), writes: cmds(">a.tgz"), reads: cmds("<src")},
		// find -delete writes below its starting points
		{line: "find build -name '*.o' -delete", commands: cmds("find build -name *.o -delete"), writes: cmds(">build"), reads: cmds("<dir:build")},
		{line: "find -delete", commands: cmds("find -delete"), writes: cmds(">."), reads: cmds("<dir:.")},
		{line: "find /etc tmp -delete", commands: cmds("find /etc tmp -delete"), writes: cmds(">/etc", ">tmp"), reads: cmds("<dir:/etc", "<dir:tmp")},
		// a script of someone's own is not the program of the table
		{line: "./sed -n '1e id' f", commands: cmds("./sed -n 1e id f")},
	}
	for _, tc := range cases {
		t.Run(tc.line, func(t *testing.T) {
			got, err := Analyze(tc.line)
			if tc.code != "" {
				var ue *UnanalyzableError
				if !errors.As(err, &ue) || ue.Code != tc.code {
					t.Fatalf("Analyze(%q) = %+v, %v; want code %s", tc.line, got, err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatalf("Analyze(%q): %v", tc.line, err)
			}
			var c, w, r []string
			for _, x := range got.Commands {
				c = append(c, render(x))
			}
			for _, x := range got.Writes {
				w = append(w, renderWrite(x))
			}
			for _, x := range got.Reads {
				op := "<"
				if x.Names {
					op = "<dir:"
				}
				if x.Literal {
					r = append(r, op+x.Path)
				} else {
					r = append(r, op+"⟨"+x.Path+"⟩")
				}
			}
			if !slices.Equal(c, tc.commands) || !slices.Equal(w, tc.writes) || !slices.Equal(r, tc.reads) {
				t.Errorf("Analyze(%q):\n got commands %q writes %q reads %q\nwant commands %q writes %q reads %q", tc.line, c, w, r, tc.commands, tc.writes, tc.reads)
			}
		})
	}
}

// FuzzSedScript checks that reading any sed script terminates without
// panicking, is deterministic, and never reports a command run by a
// script that holds no e at all.
func FuzzSedScript(f *testing.F) {
	for _, s := range []string{"1,5p", "s/a/b/e", "1e id", "y/a/b/", "/x/{\ne id\n}", "a\\\ntext", "s|a|b|w f", "$!N;P;D", "\\%x%d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		eff, bad := sedScript(s)
		eff2, bad2 := sedScript(s)
		if bad != bad2 || !slices.Equal(eff.reads, eff2.reads) || !slices.Equal(eff.writes, eff2.writes) {
			t.Fatalf("sedScript(%q) is not deterministic", s)
		}
		if !strings.Contains(s, "e") && strings.Contains(bad, "runs") {
			t.Fatalf("sedScript(%q) reports %q without an e in the script", s, bad)
		}
	})
}

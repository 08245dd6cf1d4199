package rule

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

func TestParse(t *testing.T) {
	tests := []struct {
		in, want, tool, spec string
	}{
		{"Bash", "Bash", "Bash", ""},
		{"  Bash  ", "Bash", "Bash", ""},
		{"Bash(go test:*)", "Bash(go test:*)", "Bash", "go test:*"},
		{"Bash(  go   test:*  )", "Bash(go test:*)", "Bash", "go test:*"},
		{"Bash(go test :*)", "Bash(go test:*)", "Bash", "go test:*"},
		{"Bash(npm run *)", "Bash(npm run:*)", "Bash", "npm run:*"},
		{"Bash(*)", "Bash", "Bash", ""},
		{"Bash(:*)", "Bash", "Bash", ""},
		{"Bash(git status)", "Bash(git status)", "Bash", "git status"},
		{`Bash(git commit -m "fix bug")`, `Bash(git commit -m 'fix bug')`, "Bash", `git commit -m 'fix bug'`},
		{`Bash(echo "it's")`, `Bash(echo "it's")`, "Bash", `echo "it's"`},
		{`Bash(echo \*)`, `Bash(echo '*')`, "Bash", `echo '*'`},
		{`Bash(echo a\ b)`, `Bash(echo 'a b')`, "Bash", `echo 'a b'`},
		{`Bash(echo "a\"b")`, `Bash(echo 'a"b')`, "Bash", `echo 'a"b'`},
		{`Bash(echo '')`, `Bash(echo '')`, "Bash", `echo ''`},
		{"Bash(docker run img:latest)", "Bash(docker run img:latest)", "Bash", "docker run img:latest"},
		{"Bash(a: *)", "Bash(a::*)", "Bash", "a::*"},
		{"Bash(/usr/bin/curl:*)", "Bash(/usr/bin/curl:*)", "Bash", "/usr/bin/curl:*"},
		{"Read", "Read", "Read", ""},
		{"Read(**)", "Read(**)", "Read", "**"},
		{"Read(./src/**)", "Read(src/**)", "Read", "src/**"},
		{"Read(*.md)", "Read(*.md)", "Read", "*.md"},
		{"Read(//etc/**)", "Read(/etc/**)", "Read", "/etc/**"},
		{"Read(/etc/hosts)", "Read(/etc/hosts)", "Read", "/etc/hosts"},
		{"Read(~/.ssh/**)", "Read(~/.ssh/**)", "Read", "~/.ssh/**"},
		{"Read(~/)", "Read(~)", "Read", "~"},
		{"Read(~)", "Read(~)", "Read", "~"},
		{"Read(/)", "Read(/)", "Read", "/"},
		{"Read(./ x)", `Read(\ x)`, "Read", `\ x`},
		{"Read(./!x)", `Read(\!x)`, "Read", `\!x`},
		{"Read(./~x)", `Read(\~x)`, "Read", `\~x`},
		{`Read( a\  )`, `Read(a\ )`, "Read", `a\ `},
		{`Bash(echo a\ )`, `Bash(echo 'a ')`, "Bash", `echo 'a '`},
		{"Read(src/(old)/**)", "Read(src/(old)/**)", "Read", "src/(old)/**"},
		{`Read(a\{b\}.txt)`, `Read(a\{b\}.txt)`, "Read", `a\{b\}.txt`},
		{"Read([!a-c]?.go)", "Read([!a-c]?.go)", "Read", "[!a-c]?.go"},
		{"Write", "Write", "Write", ""},
		{"Edit(src/**)", "Edit(src/**)", "Edit", "src/**"},
		{"MultiEdit(docs/*.md)", "MultiEdit(docs/*.md)", "MultiEdit", "docs/*.md"},
		{"NotebookEdit(**/*.ipynb)", "NotebookEdit(**/*.ipynb)", "NotebookEdit", "**/*.ipynb"},
		{"WebFetch", "WebFetch", "WebFetch", ""},
		{"WebFetch(domain:example.com)", "WebFetch(domain:example.com)", "WebFetch", "domain:example.com"},
		{"WebFetch(domain:Example.COM.)", "WebFetch(domain:example.com)", "WebFetch", "domain:example.com"},
		{"WebFetch(domain:*.example.com)", "WebFetch(domain:*.example.com)", "WebFetch", "domain:*.example.com"},
		{"WebFetch(domain:xn--bcher-kva.de)", "WebFetch(domain:xn--bcher-kva.de)", "WebFetch", "domain:xn--bcher-kva.de"},
		{"WebFetch(domain:0x7f.1)", "WebFetch(domain:127.0.0.1)", "WebFetch", "domain:127.0.0.1"},
		{"WebFetch(domain:[::1])", "WebFetch(domain:[::1])", "WebFetch", "domain:[::1]"},
		{"WebFetch(domain:::ffff:10.0.0.1)", "WebFetch(domain:10.0.0.1)", "WebFetch", "domain:10.0.0.1"},
		{"WebSearch", "WebSearch", "WebSearch", ""},
		{"mcp__github__get_issue", "mcp__github__get_issue", "mcp__github__get_issue", ""},
		{"mcp__github__*", "mcp__github__*", "mcp__github__*", ""},
		{"mcp__github", "mcp__github", "mcp__github", ""},
		{"mcp__my-server__do_it", "mcp__my-server__do_it", "mcp__my-server__do_it", ""},
		{"Task", "Task", "Task", ""},
		{"TodoWrite", "TodoWrite", "TodoWrite", ""},
		{"Glob", "Glob", "Glob", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			r, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if got := r.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if r.Tool() != tt.tool || r.Spec() != tt.spec {
				t.Errorf("Tool(), Spec() = %q, %q, want %q, %q", r.Tool(), r.Spec(), tt.tool, tt.spec)
			}
			again, err := Parse(r.String())
			if err != nil {
				t.Fatalf("Parse(%q) (canonical form): %v", r.String(), err)
			}
			if !reflect.DeepEqual(again, r) {
				t.Errorf("Parse(String()) = %#v, want %#v", again, r)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `rule "": empty rule`},
		{"   ", `rule "   ": empty rule`},
		{"Bash(go test:*", `rule "Bash(go test:*": missing closing parenthesis`},
		{"Bash(ls)x", `rule "Bash(ls)x": text after the closing parenthesis`},
		{"Bash)", `rule "Bash)": closing parenthesis without an opening one`},
		{"Bash()", `rule "Bash()": empty specifier; write Bash without parentheses`},
		{"Read(  )", `rule "Read(  )": empty specifier; write Read without parentheses`},
		{"Bash(git:* push)", `rule "Bash(git:* push)": :* must come at the end of the rule, in "git:* push"`},
		{"Bash(ls*)", `rule "Bash(ls*)": wildcard * in "ls*": only a final :* or " *" is supported (quote it to match a literal *)`},
		{"Bash(git * push)", `rule "Bash(git * push)": wildcard * in "git * push": only a final :* or " *" is supported (quote it to match a literal *)`},
		{"Bash(cd x && make)", `rule "Bash(cd x && make)": shell operator '&' in "cd x && make": a rule matches one simple command (quote it to match it literally)`},
		{"Bash(ls | wc)", `rule "Bash(ls | wc)": shell operator '|' in "ls | wc": a rule matches one simple command (quote it to match it literally)`},
		{"Bash(echo $HOME)", `rule "Bash(echo $HOME)": shell expansion '$' in "echo $HOME": rules match literal words (quote it to match it literally)`},
		{`Bash(echo "$HOME")`, `rule "Bash(echo \"$HOME\")": shell expansion '$' inside double quotes in "\"$HOME\"": rules match literal words (use single quotes)`},
		{"Bash(echo 'x)", `rule "Bash(echo 'x)": unterminated single quote in "echo 'x"`},
		{`Bash(echo "x)`, `rule "Bash(echo \"x)": unterminated double quote in "\"x"`},
		{`Bash(echo x\)`, `rule "Bash(echo x\\)": trailing backslash in "echo x\\"`},
		{"Bash(FOO=1 make)", `rule "Bash(FOO=1 make)": environment assignment "FOO=1" in "FOO=1 make": rules match the command's words, not its environment`},
		{"Bash('' x)", `rule "Bash('' x)": empty program name in "'' x"`},
		{"Read(src/**/)", `rule "Read(src/**/)": trailing slash in "src/**/": write src/** to match a directory and everything below it`},
		{"Read(src/)", `rule "Read(src/)": trailing slash in "src/": write src/** to match a directory and everything below it`},
		{"Read(src//a)", `rule "Read(src//a)": empty path segment in "src//a"`},
		{"Read(../x)", `rule "Read(../x)": path segment ".." is not allowed; write the path without it, or an absolute pattern`},
		{"Read(a/./b)", `rule "Read(a/./b)": path segment "." is not allowed; write the path without it, or an absolute pattern`},
		{`Read(a/\.\./b)`, `rule "Read(a/\\.\\./b)": path segment "\\.\\." is not allowed; write the path without it, or an absolute pattern`},
		{"Read(./)", `rule "Read(./)": pattern "./" names the workspace itself; write ** or a bare rule`},
		{"Read(**.md)", `rule "Read(**.md)": ** must be a whole path segment, as in **/*.md or dir/**, in "**.md"`},
		{"Read(src/a**)", `rule "Read(src/a**)": ** must be a whole path segment, as in **/a* or dir/**, in "a**"`},
		{"Read(*.{ts,tsx})", `rule "Read(*.{ts,tsx})": brace expansion is not supported in "*.{ts,tsx}"; write one rule per alternative (or escape the brace)`},
		{"Read([a-)", `rule "Read([a-)": unclosed character class in "[a-"`},
		{"Read([abc)", `rule "Read([abc)": unclosed character class in "[abc"`},
		{"Read([z-a])", `rule "Read([z-a])": invalid range "z-a" in character class in "[z-a]"`},
		{"Read([])", `rule "Read([])": empty character class in "[]"`},
		{"Read([!])", `rule "Read([!])": empty character class in "[!]"`},
		{"Read([-a])", `rule "Read([-a])": unescaped '-' in character class in "[-a]"`},
		{"Read([[:alpha:]])", `rule "Read([[:alpha:]])": named character classes like [:alpha:] are not supported, in "[[:alpha:]]"`},
		{`Read(a\)`, `rule "Read(a\\)": trailing backslash in "a\\"`},
		{"Read(!secret)", `rule "Read(!secret)": negated pattern "!secret" is not supported; use a deny rule`},
		{"Read(~bob/x)", `rule "Read(~bob/x)": "~bob/x": only ~ and ~/ are supported for the home directory, not ~user`},
		{"WebFetch(example.com)", `rule "WebFetch(example.com)": WebFetch specifier "example.com" must be domain:HOST`},
		{"WebFetch(domain:)", `rule "WebFetch(domain:)": missing host in "domain:"`},
		{"WebFetch(domain:*.)", `rule "WebFetch(domain:*.)": missing host after *. in "domain:*."`},
		{"WebFetch(domain:example.com:443)", `rule "WebFetch(domain:example.com:443)": port in "domain:example.com:443": domain rules match every port`},
		{"WebFetch(domain:*)", `rule "WebFetch(domain:*)": "domain:*" matches every host; write WebFetch without parentheses`},
		{"WebFetch(domain:a.*.com)", `rule "WebFetch(domain:a.*.com)": wildcard in "domain:a.*.com": only a leading *. is supported`},
		{"WebFetch(domain:bücher.de)", `rule "WebFetch(domain:bücher.de)": non-ASCII host in "domain:bücher.de": write it in its ASCII (punycode, xn--) form`},
		{"WebFetch(domain:https://x.com)", `rule "WebFetch(domain:https://x.com)": "domain:https://x.com" names a URL or path; a domain rule names a host only`},
		{"WebFetch(domain:u@x.com)", `rule "WebFetch(domain:u@x.com)": "domain:u@x.com" holds user information; a domain rule names a host only`},
		{"WebFetch(domain:exa mple.com)", `rule "WebFetch(domain:exa mple.com)": invalid host "exa mple.com"`},
		{"WebFetch(domain:a..com)", `rule "WebFetch(domain:a..com)": invalid host "a..com"`},
		{"WebFetch(domain:256.1.1.1)", `rule "WebFetch(domain:256.1.1.1)": invalid host "256.1.1.1"`},
		{"WebFetch(domain:*.127.0.0.1)", `rule "WebFetch(domain:*.127.0.0.1)": *. needs a domain name, not an IP address, in "domain:*.127.0.0.1"`},
		{"WebSearch(x)", `rule "WebSearch(x)": WebSearch takes no specifier`},
		{"Task(explore)", `rule "Task(explore)": Task takes no specifier`},
		{"Grep(src/**)", `rule "Grep(src/**)": Grep takes no specifier; Read(...) rules cover Glob and Grep`},
		{"bash(ls)", `rule "bash(ls)": bash takes no specifier; tool names are case-sensitive: did you mean Bash?`},
		{"mcp__github__get_issue(x)", `rule "mcp__github__get_issue(x)": MCP rules take no specifier; name the tool (mcp__server__tool) or the server (mcp__server)`},
		{"mcp__", `rule "mcp__": missing MCP server name in "mcp__"`},
		{"mcp__*", `rule "mcp__*": missing MCP server name in "mcp__*"`},
		{"mcp__github__", `rule "mcp__github__": empty MCP tool name in "mcp__github__"`},
		{"mcp__gh__get_*", `rule "mcp__gh__get_*": wildcard in tool name "mcp__gh__get_*"; only mcp__server__* is supported`},
		{"mcp__gh__x__*", `rule "mcp__gh__x__*": wildcard in "mcp__gh__x__*"; only mcp__server__* is supported`},
		{"Task__*", `rule "Task__*": wildcard in tool name "Task__*"; only mcp__server__* is supported`},
		{"1Bash", `rule "1Bash": tool name "1Bash" must start with a letter`},
		{"(ls)", `rule "(ls)": missing tool name`},
		{"Ba sh", `rule "Ba sh": invalid character ' ' in tool name "Ba sh"`},
		{"Bash(ls)\n", `rule "Bash(ls)\n": control character '\n'`},
		{"Bash(ls\x00)", `rule "Bash(ls\x00)": control character '\x00'`},
		{"Bash(\xff)", `rule "Bash(\xff)": not valid UTF-8`},
		{"Bash(" + strings.Repeat("a", maxRuleLen) + ")", `rule "Bash(` + strings.Repeat("a", 75) + `...": 8198 bytes, longer than the 8192-byte limit`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			r, err := Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want error %q", tt.in, r, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("Parse(%q) error:\n got %s\nwant %s", tt.in, err, tt.want)
			}
		})
	}
}

// TestParseGolden parses every line of testdata/rules.txt and compares the
// parsed form, internals included, with testdata/rules.golden.
func TestParseGolden(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "rules.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fmt.Fprintf(&out, "%s\n", line)
		r, err := Parse(line)
		if err != nil {
			fmt.Fprintf(&out, "\terror: %v\n", err)
			continue
		}
		out.WriteString(describe(r))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "rules.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if out.String() != string(want) {
		t.Errorf("parsed rules differ from %s (run go test -update and review the diff):\n%s", golden, out.String())
	}
}

// describe prints a rule's parsed form for the golden file.
func describe(r Rule) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\tcanonical: %s\n", r)
	switch r.kind {
	case kindBash:
		fmt.Fprintf(&b, "\tcommand: words=%q prefix=%v\n", r.cmd.words, r.cmd.prefix)
		if len(r.cmd.words) > 0 {
			fmt.Fprintf(&b, "\tbroad: program=%q flags=%q operands=%q\n", r.cmd.program, r.cmd.flags, r.cmd.operands)
		}
	case kindRead, kindWrite:
		family := map[kind]string{kindRead: "read", kindWrite: "write"}[r.kind]
		anchors := map[anchor]string{anchorWorkspace: "workspace", anchorRoot: "root", anchorHome: "home"}
		fmt.Fprintf(&b, "\tpath: family=%s anchor=%s bare=%v\n", family, anchors[r.path.anchor], r.path.bare)
		for _, s := range r.path.segs {
			switch {
			case s.globstar:
				fmt.Fprintf(&b, "\t\t**\n")
			case s.literal:
				fmt.Fprintf(&b, "\t\tliteral %q\n", s.text)
			default:
				fmt.Fprintf(&b, "\t\tglob %q:", s.raw)
				for _, t := range s.toks {
					switch t.kind {
					case tokRune:
						fmt.Fprintf(&b, " %q", t.r)
					case tokAny:
						b.WriteString(" ?")
					case tokStar:
						b.WriteString(" *")
					case tokClass:
						b.WriteString(" [")
						if t.neg {
							b.WriteString("not ")
						}
						for i, rg := range t.ranges {
							if i > 0 {
								b.WriteByte(' ')
							}
							fmt.Fprintf(&b, "%q-%q", rg.lo, rg.hi)
						}
						b.WriteString("]")
					}
				}
				b.WriteByte('\n')
			}
		}
	case kindWebFetch:
		fmt.Fprintf(&b, "\tdomain: host=%q subdomains=%v\n", r.domain.host, r.domain.subdomains)
	case kindMCP:
		fmt.Fprintf(&b, "\tmcp: server=%q\n", r.server)
	case kindWebSearch, kindTool:
		fmt.Fprintf(&b, "\ttool: %q\n", r.tool)
	}
	return b.String()
}

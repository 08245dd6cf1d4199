package rule

import (
	"net/url"
	"sync"
	"testing"
)

func TestMatchTool(t *testing.T) {
	tests := []struct {
		rule, name string
		want       bool
	}{
		{"Task", "Task", true},
		{"Task", "task", false},
		{"Task", "TaskX", false},
		{"TodoWrite", "TodoWrite", true},
		{"Glob", "Glob", true},
		{"mcp__github__get_issue", "mcp__github__get_issue", true},
		{"mcp__github__get_issue", "mcp__github__get_issues", false},
		{"mcp__github__get_issue", "mcp__github", false},
		{"mcp__github__*", "mcp__github__create_pr", true},
		{"mcp__github__*", "mcp__github", true},
		{"mcp__github__*", "mcp__githubx__create_pr", false},
		{"mcp__github", "mcp__github__create_pr", true},
		{"mcp__github", "mcp__gh__create_pr", false},
		{"mcp__github", "mcp__github_enterprise__x", false},
		{"Bash", "Bash", true},
		{"Bash(ls)", "Bash", false},
		{"WebFetch", "WebFetch", true},
		{"WebFetch(domain:example.com)", "WebFetch", false},
		{"WebSearch", "WebSearch", true},
		{"WebSearch", "WebFetch", false},
		// Bare Read and Write are limited to the workspace: see MatchPath.
		{"Read", "Read", false},
		{"Write", "Write", false},
	}
	for _, tt := range tests {
		r, err := Parse(tt.rule)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.MatchTool(tt.name); got != tt.want {
			t.Errorf("%s.MatchTool(%q) = %v, want %v", tt.rule, tt.name, got, tt.want)
		}
	}
	if (Rule{}).MatchTool("") {
		t.Error("the zero Rule matched a tool")
	}
}

func TestParseSetErrors(t *testing.T) {
	_, err := ParseSet([]string{"Bash(ls)", "Bash("}, nil, []string{"Read(src/)", "Task"})
	want := `allow[1]: rule "Bash(": missing closing parenthesis` + "\n" +
		`deny[0]: rule "Read(src/)": trailing slash in "src/": write src/** to match a directory and everything below it`
	if err == nil || err.Error() != want {
		t.Errorf("ParseSet error:\n got %v\nwant %s", err, want)
	}
}

func TestSet(t *testing.T) {
	roots := tempRoots(t)
	s, err := ParseSet(
		[]string{"Bash(git:*)", "Bash(rm:*)", "Write(**)", "Read", "WebFetch", "mcp__github", "Task"},
		[]string{"Bash(git push:*)", "Write(docs/**)", "WebFetch(domain:*.example.com)", "mcp__github__merge_pr"},
		[]string{"Bash(git push --force:*)", "Bash(rm -rf:*)", "Write(.git/**)", "WebFetch(domain:evil.com)", "mcp__github__delete_repo", "Task"},
	)
	if err != nil {
		t.Fatal(err)
	}
	type check struct {
		name string
		got  Verdict
		mode Mode
		rule string
	}
	u := func(s string) *url.URL {
		v, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	ws := roots.Workspace
	checks := []check{
		{"git status", s.CheckCommand(argv("git status")), Allow, "Bash(git:*)"},
		{"git push", s.CheckCommand(argv("git push origin")), Ask, "Bash(git push:*)"},
		{"git push -f", s.CheckCommand(argv("git push -f")), Deny, "Bash(git push --force:*)"},
		{"/bin/rm -fr", s.CheckCommand(argv("/bin/rm -fr /")), Deny, "Bash(rm -rf:*)"},
		{"rm x", s.CheckCommand(argv("rm x")), Allow, "Bash(rm:*)"},
		{"curl", s.CheckCommand(argv("curl x")), 0, ""},
		{"write src", s.CheckPath(Write, ws+"/src/a.go", roots), Allow, "Write(**)"},
		{"write docs", s.CheckPath(Write, ws+"/docs/a.md", roots), Ask, "Write(docs/**)"},
		{"write .git", s.CheckPath(Write, ws+"/.Git/hooks/pre-commit", roots), Deny, "Write(.git/**)"},
		{"write outside", s.CheckPath(Write, "/etc/passwd", roots), 0, ""},
		{"read", s.CheckPath(Read, ws+"/a", roots), Allow, "Read"},
		{"fetch", s.CheckURL(u("https://go.dev/")), Allow, "WebFetch"},
		{"fetch sub", s.CheckURL(u("https://api.example.com/")), Ask, "WebFetch(domain:*.example.com)"},
		{"fetch evil", s.CheckURL(u("https://EVIL.com./")), Deny, "WebFetch(domain:evil.com)"},
		{"fetch idn", s.CheckURL(u("https://bücher.de/")), Deny, "WebFetch(domain:evil.com)"},
		{"mcp", s.CheckTool("mcp__github__get_issue"), Allow, "mcp__github"},
		{"mcp merge", s.CheckTool("mcp__github__merge_pr"), Ask, "mcp__github__merge_pr"},
		{"mcp delete", s.CheckTool("mcp__github__delete_repo"), Deny, "mcp__github__delete_repo"},
		{"task", s.CheckTool("Task"), Deny, "Task"},
		{"other tool", s.CheckTool("TodoWrite"), 0, ""},
	}
	for _, c := range checks {
		if c.got.Mode != c.mode || c.got.Rule.String() != c.rule {
			t.Errorf("%s: verdict %v %q, want %v %q", c.name, c.got.Mode, c.got.Rule, c.mode, c.rule)
		}
		if c.got.Matched() != (c.mode != 0) {
			t.Errorf("%s: Matched() = %v", c.name, c.got.Matched())
		}
	}
}

func TestModeOrder(t *testing.T) {
	if !(Allow < Ask && Ask < Deny) {
		t.Errorf("modes are not ordered by strictness: allow=%d ask=%d deny=%d", Allow, Ask, Deny)
	}
	for m, want := range map[Mode]string{Allow: "allow", Ask: "ask", Deny: "deny", 0: "Mode(0)"} {
		if m.String() != want {
			t.Errorf("Mode(%d).String() = %q, want %q", m, m.String(), want)
		}
	}
}

// TestSetConcurrentUse checks a Set from many goroutines under -race: rules
// are immutable values, and must stay safe to share.
func TestSetConcurrentUse(t *testing.T) {
	roots := tempRoots(t)
	s, err := ParseSet([]string{"Bash(go test:*)", "Read(**)"}, nil, []string{"Bash(rm -rf:*)", "Read(~/.ssh/**)", "WebFetch(domain:evil.com)"})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("https://evil.com/")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				if v := s.CheckCommand(argv("rm -fr x")); v.Mode != Deny {
					t.Errorf("rm -fr: %v", v.Mode)
				}
				if v := s.CheckPath(Read, roots.Home+"/.ssh/id", roots); v.Mode != Deny {
					t.Errorf("~/.ssh/id: %v", v.Mode)
				}
				if v := s.CheckPath(Read, roots.Workspace+"/a", roots); v.Mode != Allow {
					t.Errorf("workspace file: %v", v.Mode)
				}
				if v := s.CheckURL(u); v.Mode != Deny {
					t.Errorf("evil.com: %v", v.Mode)
				}
			}
		})
	}
	wg.Wait()
}

// TestWholeToolAskIsTheDefault: an ask rule naming a whole tool holds what
// no other rule settles, below the allow rules that name what they match;
// a deny rule wins whatever it names, and a narrow ask rule still beats a
// narrow allow rule.
func TestWholeToolAskIsTheDefault(t *testing.T) {
	tests := []struct {
		allow, ask, deny []string
		line             string
		want             Mode
	}{
		{[]string{"Bash(go test:*)"}, []string{"Bash"}, nil, "go test ./...", Allow},
		{[]string{"Bash(go test:*)"}, []string{"Bash"}, nil, "npm install", Ask},
		{[]string{"Bash(go test:*)"}, nil, nil, "npm install", 0},
		{[]string{"Bash"}, []string{"Bash(rm:*)"}, nil, "rm -rf x", Ask},
		{[]string{"Bash"}, []string{"Bash"}, nil, "ls", Ask},
		{[]string{"Bash(rm:*)"}, []string{"Bash"}, []string{"Bash(rm -rf:*)"}, "rm -rf x", Deny},
		{[]string{"Bash(go:*)"}, []string{"Bash"}, []string{"Bash"}, "go test", Deny},
		{[]string{"Bash(git push:*)"}, []string{"Bash(git push:*)"}, nil, "git push", Ask},
	}
	for _, tt := range tests {
		s, err := ParseSet(tt.allow, tt.ask, tt.deny)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.CheckCommand(argv(tt.line)); got.Mode != tt.want {
			t.Errorf("allow %q ask %q deny %q: %q is %v, want %v", tt.allow, tt.ask, tt.deny, tt.line, got.Mode, tt.want)
		}
	}
}

package rule

import (
	"strings"
	"testing"
)

// argv splits a command line on spaces into words; a word starting with $
// stands for a non-literal word.
func argv(line string) []Word {
	var words []Word
	for _, f := range strings.Fields(line) {
		words = append(words, Word{Text: f, Literal: !strings.HasPrefix(f, "$")})
	}
	return words
}

func TestMatchCommand(t *testing.T) {
	tests := []struct {
		rule string
		cmd  string
		mode Mode
		want bool
	}{
		// Allow: exact words, prefix only with :*.
		{"Bash(go test:*)", "go test ./...", Allow, true},
		{"Bash(go test:*)", "go test", Allow, true},
		{"Bash(go test:*)", "go test -race -run X ./core/...", Allow, true},
		{"Bash(go test:*)", "go build ./...", Allow, false},
		{"Bash(go test:*)", "go testing", Allow, false},
		{"Bash(go test:*)", "go", Allow, false},
		{"Bash(go test:*)", "go -C dir test", Allow, false},
		{"Bash(npm run *)", "npm run build", Allow, true},
		{"Bash(git status)", "git status", Allow, true},
		{"Bash(git status)", "git status -s", Allow, false},
		{"Bash(git status)", "git", Allow, false},
		// Allow: the program as written, or in a system bin directory.
		{"Bash(git status)", "/usr/bin/git status", Allow, true},
		{"Bash(git status)", "/bin/git status", Allow, true},
		{"Bash(git status)", "/usr/local/bin/git status", Allow, true},
		{"Bash(git status)", "/usr/sbin/git status", Allow, true},
		{"Bash(go:*)", "/usr/local/go/bin/go test ./...", Allow, true},
		{"Bash(go:*)", "/usr/local/go/go test ./...", Allow, false},
		{"Bash(git status)", "./git status", Allow, false},
		{"Bash(git status)", "/tmp/x/git status", Allow, false},
		{"Bash(git status)", "/usr/bin/../bin/git status", Allow, false},
		{"Bash(git status)", "/usr//bin/git status", Allow, false},
		{"Bash(git status)", "GIT status", Allow, false},
		{"Bash(./build.sh)", "./build.sh", Allow, true},
		{"Bash(./build.sh)", "build.sh", Allow, false},
		{"Bash(./build.sh)", "/usr/bin/build.sh", Allow, false},
		// Allow: non-literal words never equal rule words, but may follow a prefix.
		{"Bash(git status)", "git $SUB", Allow, false},
		{"Bash(go test:*)", "$GO test", Allow, false},
		{"Bash(go test:*)", "go test $PKG", Allow, true},
		{"Bash(rm -rf:*)", "rm -rf x", Allow, true},
		{"Bash(rm -rf:*)", "rm -fr x", Allow, false},
		{"Bash(rm -rf:*)", "rm -r -f x", Allow, false},
		{"Bash", "anything at all", Allow, true},
		{"Bash", "$X", Allow, true},
		{"Bash", "", Allow, true},
		{"Bash(git status)", "", Allow, false},

		// Deny: program by base name, any case.
		{"Bash(rm -rf:*)", "rm -rf /", Deny, true},
		{"Bash(rm -rf:*)", "/bin/rm -rf x", Deny, true},
		{"Bash(rm -rf:*)", "./rm -rf x", Deny, true},
		{"Bash(rm -rf:*)", "/tmp/x/RM -rf x", Deny, true},
		{"Bash(rm -rf:*)", "$RM -rf x", Deny, false},
		{"Bash(/usr/bin/curl:*)", "curl https://x", Deny, true},
		{"Bash(curl:*)", "/opt/homebrew/bin/curl https://x", Deny, true},
		{"Bash(curl:*)", "curly", Deny, false},
		// Deny: flag letters in any grouping and order, long spellings mapped.
		{"Bash(rm -rf:*)", "rm -fr x", Deny, true},
		{"Bash(rm -rf:*)", "rm -r -f x", Deny, true},
		{"Bash(rm -rf:*)", "rm -f -r", Deny, true},
		{"Bash(rm -rf:*)", "rm -rfv x", Deny, true},
		{"Bash(rm -rf:*)", "rm -R -f x", Deny, true},
		{"Bash(rm -rf:*)", "rm --recursive --force x", Deny, true},
		{"Bash(rm -rf:*)", "rm --rec --f x", Deny, true},
		{"Bash(rm -rf:*)", "rm -r --force x", Deny, true},
		{"Bash(rm -rf:*)", "rm x -rf", Deny, true},
		{"Bash(rm -rf:*)", "rm -r x", Deny, false},
		{"Bash(rm -rf:*)", "rm -- -rf", Deny, false},
		{"Bash(rm -rf:*)", "rm -r x -- -f", Deny, false},
		{"Bash(rm -rf:*)", "rm $FLAGS x", Deny, false},
		{"Bash(rm --recursive --force:*)", "rm -fR x", Deny, true},
		{"Bash(tar -xzf:*)", "tar -x -z -f a.tgz", Deny, true},
		{"Bash(tar -xzf:*)", "tar -xf a.tgz", Deny, false},
		{"Bash(git clean -fdx)", "git clean -xdf", Deny, true},
		{"Bash(git clean -fdx)", "git clean -fd", Deny, false},
		{"Bash(chmod -R 777:*)", "chmod --recursive 777 /", Deny, true},
		{"Bash(chmod -R 777:*)", "chmod -R 755 /", Deny, false},
		{"Bash(docker run --privileged:*)", "docker run --privileged=true img", Deny, true},
		{"Bash(docker run --privileged:*)", "docker run img", Deny, false},
		// Deny: other words in order, not necessarily adjacent.
		{"Bash(git push --force:*)", "git push -f origin main", Deny, true},
		{"Bash(git push --force:*)", "git push origin main --force", Deny, true},
		{"Bash(git push --force:*)", "git -C /repo push --force", Deny, true},
		{"Bash(git push --force:*)", "git push origin main", Deny, false},
		{"Bash(git push --force:*)", "git pull --force", Deny, false},
		{"Bash(git push --force:*)", "git push --force-with-lease", Deny, false},
		{"Bash(git push --force:*)", "git $SUB --force", Deny, false},
		{"Bash(git checkout -- file.txt)", "git checkout -- file.txt", Deny, true},
		{"Bash(kubectl delete:*)", "kubectl get pods", Deny, false},
		{"Bash(kubectl delete:*)", "kubectl -n prod delete pod x", Deny, true},
		// Deny and ask rules always match as prefixes.
		{"Bash(git status)", "git status", Deny, true},
		{"Bash(git status)", "git status -s", Deny, true},
		{"Bash(npm publish)", "npm publish --tag beta", Ask, true},
		{"Bash(npm publish)", "npm install", Ask, false},
		{"Bash(git push:*)", "git push", Ask, true},
		{"Bash(git status)", "", Deny, false},
		{"Bash", "", Deny, true},

		// Not Bash rules, or no valid mode: no match.
		{"Read(**)", "cat x", Allow, false},
		{"Task", "Task", Deny, false},
		{"Bash(git status)", "git status", 0, false},
		{"Bash", "ls", Mode(9), false},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String()+" "+tt.rule+" "+tt.cmd, func(t *testing.T) {
			r, err := Parse(tt.rule)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.MatchCommand(argv(tt.cmd), tt.mode); got != tt.want {
				t.Errorf("%s.MatchCommand(%q, %v) = %v, want %v", tt.rule, tt.cmd, tt.mode, got, tt.want)
			}
		})
	}
}

// TestMatchCommandQuotedWords covers words that hold blanks, which the
// space-splitting helper above cannot express.
func TestMatchCommandQuotedWords(t *testing.T) {
	r, err := Parse(`Bash(git commit -m "fix bug")`)
	if err != nil {
		t.Fatal(err)
	}
	lit := func(ws ...string) []Word {
		var out []Word
		for _, w := range ws {
			out = append(out, Word{Text: w, Literal: true})
		}
		return out
	}
	tests := []struct {
		args []Word
		mode Mode
		want bool
	}{
		{lit("git", "commit", "-m", "fix bug"), Allow, true},
		{lit("git", "commit", "-m", "fix", "bug"), Allow, false},
		{lit("git", "commit", "-m", "fix bug"), Deny, true},
		{lit("git", "commit", "-m", "other"), Deny, false},
		{[]Word{{"git", true}, {"commit", true}, {"-m", true}, {"fix bug", false}}, Allow, false},
	}
	for _, tt := range tests {
		if got := r.MatchCommand(tt.args, tt.mode); got != tt.want {
			t.Errorf("MatchCommand(%v, %v) = %v, want %v", tt.args, tt.mode, got, tt.want)
		}
	}
}

package gate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestDecideSeesFileSystemChanges checks that nothing a decision learns
// about the file system outlives it: the working directory and a write
// target that become symlinks out of the workspace are judged anew.
func TestDecideSeesFileSystemChanges(t *testing.T) {
	f := newFixture(t, testAllow, testAsk, testDeny)
	pkg := filepath.Join(f.ws, "src", "pkg")
	write := f.event("Bash", map[string]any{"command": "echo hi > src/pkg/out.txt; echo hi > src/pkg/out.txt"})
	inPkg := f.event("Bash", map[string]any{"command": "ls"})
	inPkg.Cwd = pkg
	for i := 0; i < 2; i++ {
		if v := Decide(write, f.policy); v.Decision != Allow {
			t.Fatalf("before: %+v", v)
		}
		if v := Decide(inPkg, f.policy); v.Decision != Allow {
			t.Fatalf("before, in %s: %+v", pkg, v)
		}
	}
	if err := os.Rename(pkg, pkg+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.outside, pkg); err != nil {
		t.Fatal(err)
	}
	if v := Decide(write, f.policy); v.Decision != Deny || v.Code != CodeOutside {
		t.Errorf("after the directory became a symlink out: %+v", v)
	}
	if v := Decide(inPkg, f.policy); v.Decision != Deny || v.Code != CodeOutside {
		t.Errorf("after the working directory became a symlink out: %+v", v)
	}
}

// TestDecideRepeatedPaths checks that a path named again later in a line,
// or past the number of resolutions a decision remembers, is judged.
func TestDecideRepeatedPaths(t *testing.T) {
	f := newFixture(t, testAllow, testAsk, testDeny)
	var many []string
	for i := 0; i < 2*maxSeen; i++ {
		many = append(many, fmt.Sprintf("cat src/f%d", i))
	}
	tests := []struct {
		line, code string
	}{
		{"cat src/key; cat src/key", CodeSelfTamper},
		{"ls ./src; cat ./src/key", CodeSelfTamper},
		{"echo a > src/link/x; echo b > src/link/x", CodeOutside},
		{"echo a > src/ok; echo b > src/link/x; echo c > src/ok", CodeOutside},
		{strings.Join(many, "; ") + "; cat src/key", CodeSelfTamper},
		{strings.Join(many, "; ") + "; echo x > src/link/y", CodeOutside},
	}
	for _, tt := range tests {
		v := Decide(f.event("Bash", map[string]any{"command": tt.line}), f.policy)
		if v.Decision != Deny || v.Code != tt.code {
			t.Errorf("%.60q: got %s/%s (%s), want deny/%s", tt.line, v.Decision, v.Code, v.Reason, tt.code)
		}
	}
	if v := Decide(f.event("Bash", map[string]any{"command": strings.Join(many, "; ")}), f.policy); v.Decision != Allow {
		t.Errorf("%d cats: %+v", len(many), v)
	}
}

// TestDecideConcurrent decides the same events from many goroutines at
// once (run with -race): every answer must equal the sequential one.
func TestDecideConcurrent(t *testing.T) {
	f := newFixture(t, testAllow, testAsk, testDeny)
	var events []*Event
	for _, line := range []string{"go build ./... && go test ./... | grep -v ok; git status; echo done", "timeout 5 curl x",
		"sudo go test ./...", "nice -n 5 ls", "xargs -0 ls", "env -i ls", "python3 -c 'print(1)'", "rm -rf src",
		"echo hi > src/link/x", "cat src/key", "sh -c 'ls; cat x'", "find . -newermt 2020 -exec ls {} \\;", "AWS_SECRET_KEY=x ls"} {
		events = append(events, f.event("Bash", map[string]any{"command": line}))
	}
	events = append(events, f.event("Write", map[string]any{"file_path": "src/a.go"}), f.event("WebFetch", map[string]any{"url": "https://x.example/"}))
	want := make([]Verdict, len(events))
	for i, ev := range events {
		want[i] = Decide(ev, f.policy)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range events {
				i = (i + g) % len(events)
				if got := Decide(events[i], f.policy); got != want[i] {
					t.Errorf("concurrent %d: %+v, sequential %+v", i, got, want[i])
				}
				Summarize(events[i])
			}
		}()
	}
	wg.Wait()
}

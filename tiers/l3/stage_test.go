package l3

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/core/receipts"
	"github.com/joulehook/joule/core/store"
	"github.com/joulehook/joule/energy"
	"github.com/joulehook/joule/tiers"
)

var update = flag.Bool("update", false, "rewrite golden files")

const calcGo = `package calc

// Add returns the sum of a and b.
func Add(a, b int) int {
	return 0
}
`

func workspace(t testing.TB) string {
	dir := t.TempDir()
	for p, s := range map[string]string{
		"go.mod":       "module example.com/ws\n\ngo 1.21\n",
		"calc/calc.go": calcGo,
		"README.md":    "# ws\n",
	} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const (
	good = "The fix:\n\n```go\ncalc/calc.go\n<<<<<<< SEARCH\n\treturn 0\n=======\n\treturn a + b\n>>>>>>> REPLACE\n```\n"
	// badCompile refers to an undefined name: gofmt passes, go build fails.
	badCompile = "calc/calc.go\n<<<<<<< SEARCH\n\treturn 0\n=======\n\treturn a + c\n>>>>>>> REPLACE\n"
	// badVet compiles but go vet rejects it (a Printf verb without its argument).
	badVet      = "calc/calc.go\n<<<<<<< SEARCH\npackage calc\n=======\npackage calc\n\nimport \"fmt\"\n\nfunc Show() { fmt.Printf(\"%d\\n\") }\n>>>>>>> REPLACE\n"
	malformed   = "calc/calc.go\n<<<<<<< SEARCH\n\treturn 0\n=======\n\treturn a + b\n"
	unformatted = "calc/calc.go\n<<<<<<< SEARCH\n\treturn 0\n=======\n        return a+b\n>>>>>>> REPLACE\n"
	readme      = "README.md\n<<<<<<< SEARCH\n# ws\n=======\n# ws\n\nhello\n>>>>>>> REPLACE\n"
)

type ledger struct {
	mu   sync.Mutex
	recs []energy.Record
}

func (l *ledger) Seal(ctx context.Context, rec energy.Record) (store.Entry, *receipts.Efficiency, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, rec)
	return store.Entry{}, nil, nil
}

func TestStage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go toolchain")
	}
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	for _, tc := range []struct {
		name     string
		provider string // "ollama", "openai", "down"
		replies  []string
		check    []string
		timeout  time.Duration
		calib    bool

		close   bool   // closes with an op
		want    string // calc/calc.go or README.md afterwards contains this
		errWant string // substring of the miss
		miss    bool   // (nil, nil)
		calls   int
	}{
		{name: "ollama good edit", provider: "ollama", replies: []string{good}, close: true, want: "return a + b", calls: 1},
		{name: "openai good edit", provider: "openai", replies: []string{good}, close: true, want: "return a + b", calls: 1},
		{name: "calibrated model is ModelBased", provider: "ollama", replies: []string{good}, calib: true, close: true, want: "return a + b", calls: 1},
		{name: "gofmt is applied", provider: "ollama", replies: []string{unformatted}, close: true, want: "\treturn a + b\n", calls: 1},
		{name: "repair after build error", provider: "ollama", replies: []string{badCompile, good}, close: true, want: "return a + b", calls: 2},
		{name: "repair after vet error", provider: "openai", replies: []string{badVet, good}, close: true, want: "return a + b", calls: 2},
		{name: "never compiles", provider: "ollama", replies: []string{badCompile, badCompile}, errWant: "the repaired edit failed too: go build failed", calls: 2},
		{name: "malformed twice", provider: "openai", replies: []string{malformed, malformed}, errWant: "is not closed", calls: 2},
		{name: "malformed then good", provider: "ollama", replies: []string{malformed, good}, close: true, want: "return a + b", calls: 2},
		{name: "search text absent", provider: "ollama", replies: []string{strings.Replace(good, "return 0", "return 1", 1), strings.Replace(good, "return 0", "return 2", 1)}, errWant: "does not occur", calls: 2},
		{name: "prose only", provider: "ollama", replies: []string{"You should add a and b.", "Really."}, errWant: "no edit block", calls: 2},
		{name: "model declines", provider: "openai", replies: []string{"NO_EDIT: nothing to change"}, miss: true, calls: 1},
		{name: "non-Go without check command", provider: "ollama", replies: []string{readme}, errWant: "no check command", calls: 1},
		{name: "non-Go with check command", provider: "ollama", replies: []string{readme}, check: []string{"grep", "-q", "hello", "README.md"}, close: true, want: "hello", calls: 1},
		{name: "check command fails", provider: "ollama", replies: []string{readme, readme}, check: []string{"grep", "-q", "absent", "README.md"}, errWant: "check failed", calls: 2},
		{name: "timeout", provider: "ollama", replies: []string{hang}, timeout: 300 * time.Millisecond, errWant: "did not finish within 300ms", calls: 1},
		{name: "openai timeout", provider: "openai", replies: []string{hang}, timeout: 300 * time.Millisecond, errWant: "did not finish within", calls: 1},
		{name: "server down", provider: "down", errWant: "connection refused"},
		{name: "model not pulled", provider: "missing", errWant: "not found", calls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := workspace(t)
			s := &script{replies: tc.replies, gone: make(chan struct{})}
			var m Model
			var err error
			switch tc.provider {
			case "ollama":
				m, err = NewOllama(fakeOllama(t, s).URL, "qwen2.5-coder:7b", nil)
			case "missing":
				m, err = NewOllama(fakeOllama(t, s).URL, "missing", nil)
			case "openai":
				m, err = NewOpenAI(fakeOpenAI(t, s).URL+"/v1", "", "qwen2.5-coder:7b", nil)
			case "down":
				m, err = NewOllama(downURL(t), "qwen2.5-coder:7b", nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			tbl := &energy.Table{}
			if tc.calib {
				tbl.Calibrations = []energy.Calibration{{Model: "qwen2.5-coder:7b", ID: "test-fit", Rates: energy.Rates{InputUJ: 10, OutputUJ: 100}}}
			}
			led := &ledger{}
			st := &Stage{Model: m, Key: key, Timeout: tc.timeout, Energy: tbl, Ledger: led, Check: &Checker{Command: tc.check}}
			req := &tiers.Request{Session: "s1", Prompt: "make Add in calc/calc.go return the sum", Root: root,
				Context: []tiers.Snippet{{Path: "calc/calc.go", StartLine: 3, EndLine: 6, Symbol: "Add", Text: calcGo, Why: "bm25"}}}
			res, err := st.TryResolve(context.Background(), req)
			if tc.timeout > 0 {
				select {
				case <-s.gone:
				case <-time.After(10 * time.Second):
					t.Fatal("the hung call was not abandoned")
				}
			}
			switch {
			case tc.close:
				if err != nil || res == nil || res.Op == nil {
					t.Fatalf("want a close, got %+v, %v", res, err)
				}
				id, verr := res.Op.Verify()
				if verr != nil || res.Op.Op.Tier != core.L3 {
					t.Fatalf("op %s: %v, tier %s", id, verr, res.Op.Op.Tier)
				}
				files, _ := core.ReadDir(root)
				next, aerr := core.Apply(files, &res.Op.Op)
				if aerr != nil {
					t.Fatal(aerr)
				}
				if got := string(next["calc/calc.go"]) + string(next["README.md"]); !strings.Contains(got, tc.want) {
					t.Fatalf("after the op:\n%s\nwant %q", got, tc.want)
				}
				prov := "Estimator"
				if tc.calib {
					prov = "ModelBased"
				}
				if !strings.Contains(res.Answer, prov) {
					t.Errorf("answer %q does not say %s", res.Answer, prov)
				}
			case tc.miss:
				if res != nil || err != nil {
					t.Fatalf("want (nil, nil), got %+v, %v", res, err)
				}
			default:
				if res != nil || err == nil || !strings.Contains(err.Error(), tc.errWant) {
					t.Fatalf("want a miss with %q, got %+v, %v", tc.errWant, res, err)
				}
			}
			calls := s.Calls()
			if len(calls) != tc.calls {
				t.Fatalf("%d model calls, want %d", len(calls), tc.calls)
			}
			for _, c := range calls {
				if c.Session != "s1" {
					t.Errorf("call named session %q, want s1", c.Session)
				}
			}
			if tc.calls == 2 && !strings.Contains(lastUser(calls[1]), "Your edit was not applied") {
				t.Errorf("the repair call did not carry the errors: %q", lastUser(calls[1]))
			}
			if tc.provider != "down" && tc.provider != "missing" && len(led.recs) != len(calls) {
				t.Errorf("%d receipts for %d calls", len(led.recs), len(calls))
			}
			for _, r := range led.recs {
				if r.Complete && (r.Usage.Input == 0 || r.Usage.Output == 0) {
					t.Errorf("complete receipt without the reported tokens: %+v", r)
				}
				if tc.calib && r.Complete && r.Estimate.Provenance != core.ModelBased {
					t.Errorf("calibrated call sealed as %s", r.Estimate.Provenance)
				}
			}
		})
	}
}

// TestStageCancel: a cancelled request stops the tier with the context's
// error, not a miss.
func TestStageCancel(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	s := &script{replies: []string{hang}, gone: make(chan struct{})}
	m, _ := NewOllama(fakeOllama(t, s).URL, "qwen2.5-coder:7b", nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(s.Calls()) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	_, err := (&Stage{Model: m, Key: key}).TryResolve(ctx, &tiers.Request{Session: "s", Prompt: "x", Root: workspace(t)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestPromptGolden(t *testing.T) {
	files := core.Files{"go.mod": []byte("module example.com/ws\n"), "calc/calc.go": []byte(calcGo), "calc/big.go": []byte(strings.Repeat("// x\n", 100))}
	req := &tiers.Request{Prompt: "make Add in calc/calc.go return the sum", Context: []tiers.Snippet{
		{Path: "calc/calc.go", StartLine: 3, EndLine: 6, Symbol: "Add", Text: calcGo},
		{Path: "calc/big.go", StartLine: 1, EndLine: 2, Text: "// x\n// x\n"},
	}}
	got := systemPrompt + "\n\n----\n\n" + userPrompt(req, files, 200) + "\n----\n\n" + repairPrompt(&ValidationError{Step: "go build", Output: "calc/calc.go:5:13: undefined: c"})
	golden := filepath.Join("testdata", "prompt.golden")
	if *update {
		os.WriteFile(golden, []byte(got), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("prompt differs from %s (go test -update to accept):\n%s", golden, got)
	}
}

// budget holds reservations like the store does: all or nothing, up to a
// limit.
type budget struct {
	mu       sync.Mutex
	limitUJ  uint64
	reserved map[int64]uint64
	next     int64
	grants   [][]string
}

func (b *budget) Reserve(ctx context.Context, grants []string, uj uint64) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.grants = append(b.grants, grants)
	if uj > b.limitUJ {
		return 0, errors.New("budget exhausted")
	}
	b.next++
	b.reserved[b.next] = uj
	return b.next, nil
}

func (b *budget) Release(ctx context.Context, id int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.reserved, id)
	return nil
}

// TestStageBudget: a direct call reserves its largest cost against the
// session's grants first and settles to the reported usage; a grant that
// cannot pay refuses the call before the model is asked.
func TestStageBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go toolchain")
	}
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	for _, tc := range []struct {
		name     string
		limitUJ  uint64
		provider string
		close    bool
	}{
		{"ollama pays", 1 << 62, "ollama", true},
		{"openai pays", 1 << 62, "openai", true},
		{"cannot pay", 1_000_000, "ollama", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &script{replies: []string{good}}
			var m Model
			if tc.provider == "ollama" {
				o, _ := NewOllama(fakeOllama(t, s).URL, "qwen2.5-coder:7b", nil)
				o.MaxOutput = 256
				m = o
			} else {
				o, _ := NewOpenAI(fakeOpenAI(t, s).URL+"/v1", "", "qwen2.5-coder:7b", nil)
				o.MaxOutput = 256
				m = o
			}
			b := &budget{limitUJ: tc.limitUJ, reserved: map[int64]uint64{}}
			led := &ledger{}
			st := &Stage{Model: m, Key: key, Energy: &energy.Table{}, Ledger: led, Budget: b, MaxOutput: 256,
				Grants: func(context.Context, string) []string { return []string{"g-root", "g-leaf"} }}
			res, err := st.TryResolve(context.Background(), &tiers.Request{Session: "s1", Prompt: "make Add return the sum", Root: workspace(t)})
			if len(b.grants) != 1 || len(b.grants[0]) != 2 {
				t.Fatalf("reservations against %v, want one against both grants", b.grants)
			}
			if !tc.close {
				if res != nil || err == nil || !strings.Contains(err.Error(), "cannot pay") || len(s.Calls()) != 0 {
					t.Fatalf("want a refusal before any call: %+v, %v, %d calls", res, err, len(s.Calls()))
				}
				return
			}
			if err != nil || res == nil {
				t.Fatalf("%+v, %v", res, err)
			}
			if c := s.Calls(); len(c) != 1 || c[0].MaxOutput != 256 {
				t.Fatalf("calls %+v: want one with the output cap 256", c)
			}
			if len(led.recs) != 1 {
				t.Fatalf("%d receipts", len(led.recs))
			}
			r := led.recs[0]
			if r.Reservation == nil || b.reserved[*r.Reservation] == 0 || r.SettleUJ != r.Estimate.UJ || r.SettleUJ == 0 || r.SettleUJ > b.reserved[*r.Reservation] {
				t.Fatalf("receipt %+v does not settle its reservation %v to the estimate", r, b.reserved)
			}
			if len(r.Grants) != 2 {
				t.Fatalf("receipt grants %v", r.Grants)
			}
		})
	}
}

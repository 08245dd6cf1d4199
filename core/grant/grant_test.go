package grant

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
)

var t0 = time.Unix(1_800_000_000, 0)

func issuer(t testing.TB, name string) *Issuer {
	seed := core.Sum([]byte("grant test " + name))
	is, err := NewIssuer(name, ed25519.NewKeyFromSeed(seed[:]))
	if err != nil {
		t.Fatal(err)
	}
	return is
}

func base() *Grant {
	return &Grant{
		Subject: AnySubject, Roots: []string{"/work/ws"},
		Allow: []string{"Read", "Write(src/**)", "Bash(go test:*)", "mcp__github__*", "WebFetch(domain:*.example.com)"},
		Ask:   []string{"Bash"},
		Deny:  []string{"Bash(rm:*)"},
		Tiers: []string{"l0", "l1", "l2"}, BudgetUJ: 50_000_000,
		NotBefore: t0.Unix(), NotAfter: t0.Add(8 * time.Hour).Unix(),
	}
}

func TestSignOpen(t *testing.T) {
	is := issuer(t, "alice@laptop")
	s, err := is.Sign(base())
	if err != nil {
		t.Fatal(err)
	}
	trust := Trust{"alice@laptop": is.Public()}
	back, err := trust.Open(s.Envelope)
	if err != nil {
		t.Fatal(err)
	}
	if back.ID != s.ID || back.IssuerName != "alice@laptop" || back.Grant.BudgetUJ != 50_000_000 {
		t.Fatalf("opened %+v", back)
	}
	// Untrusted issuer, tampered bytes.
	if _, err := (Trust{"mallory": issuer(t, "mallory").Public()}).Open(s.Envelope); err == nil {
		t.Fatal("untrusted issuer accepted")
	}
	for i := range s.Envelope {
		c := append([]byte(nil), s.Envelope...)
		c[i] ^= 0x20
		if _, err := trust.Open(c); err == nil {
			t.Fatalf("flipped byte %d accepted", i)
		}
	}
	// A key trusted under one name cannot sign grants naming another issuer key.
	other := issuer(t, "alice@laptop")
	_ = other
}

func TestValidate(t *testing.T) {
	tests := map[string]func(g *Grant){
		"bad rule":       func(g *Grant) { g.Allow = []string{"Bash(go test:*"} },
		"bad tier":       func(g *Grant) { g.Tiers = []string{"l9"} },
		"empty subject":  func(g *Grant) { g.Subject = "" },
		"window":         func(g *Grant) { g.NotAfter = g.NotBefore },
		"relative root":  func(g *Grant) { g.Roots = []string{"ws"} },
		"unclean root":   func(g *Grant) { g.Roots = []string{"/work/../ws"} },
		"no roots":       func(g *Grant) { g.Roots = nil },
		"budget too big": func(g *Grant) { g.BudgetUJ = 1 << 63 },
	}
	is := issuer(t, "a")
	for name, mutate := range tests {
		g := base()
		mutate(g)
		if _, err := is.Sign(g); err == nil {
			t.Errorf("%s: signed an invalid grant", name)
		}
	}
}

func TestChainCheck(t *testing.T) {
	is := issuer(t, "a")
	root, err := is.Sign(base())
	if err != nil {
		t.Fatal(err)
	}
	child := base()
	child.Parent = root.ID.String()
	child.Allow = []string{"Read(src/**)", "Bash(go test ./...)"}
	child.Ask = nil
	child.BudgetUJ = 5_000_000
	child.Tiers = []string{"l0"}
	child.Subject = "session-1"
	child.NotAfter = t0.Add(time.Hour).Unix()
	leaf, err := is.Sign(child)
	if err != nil {
		t.Fatal(err)
	}
	chain := Chain{root, leaf}
	if err := chain.Check("session-1", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		session string
		at      time.Time
		want    error
	}{
		{"expired", "session-1", t0.Add(2 * time.Hour), ErrExpired},
		{"not yet", "session-1", t0.Add(-time.Minute), ErrNotYet},
		{"wrong session", "session-2", t0.Add(time.Minute), ErrWrongUser},
	}
	for _, c := range cases {
		if err := chain.Check(c.session, c.at); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	if err := (Chain{leaf}).Check("session-1", t0); !errors.Is(err, ErrInvalid) {
		t.Errorf("orphan child: %v", err)
	}
	if err := (Chain{leaf, root}).Check("session-1", t0); !errors.Is(err, ErrInvalid) {
		t.Errorf("reversed chain: %v", err)
	}
}

func TestAttenuates(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(c *Grant)
		bad    string
	}{
		{"same", func(*Grant) {}, ""},
		{"narrower rules", func(c *Grant) {
			c.Allow = []string{"Read(docs/**)", "Write(src/pkg/**)", "Bash(go test ./...)", "mcp__github__get_issue", "WebFetch(domain:api.example.com)"}
		}, ""},
		{"ask under allow", func(c *Grant) { c.Ask = []string{"Bash(go test -race:*)"} }, ""},
		{"wider write", func(c *Grant) { c.Allow = []string{"Write(**)"} }, "not covered"},
		{"absolute read", func(c *Grant) { c.Allow = []string{"Read(/etc/**)"} }, "not covered"},
		{"other command", func(c *Grant) { c.Allow = []string{"Bash(go build:*)"} }, "not covered"},
		{"sneaky prefix", func(c *Grant) { c.Allow = []string{"Bash(go testify:*)"} }, "not covered"},
		{"other server", func(c *Grant) { c.Allow = []string{"mcp__gitlab__x"} }, "not covered"},
		{"other domain", func(c *Grant) { c.Allow = []string{"WebFetch(domain:example.com.evil)"} }, "not covered"},
		{"dropped deny", func(c *Grant) { c.Deny = nil }, "drops the parent's deny"},
		{"bigger budget", func(c *Grant) { c.BudgetUJ = 60_000_000 }, "exceeds"},
		{"longer window", func(c *Grant) { c.NotAfter++ }, "window"},
		{"extra tier", func(c *Grant) { c.Tiers = []string{"l4"} }, "tier verb"},
		{"other root", func(c *Grant) { c.Roots = []string{"/work/other"} }, "outside"},
		{"subroot", func(c *Grant) { c.Roots = []string{"/work/ws/sub"} }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			tt.mutate(c)
			err := Attenuates(base(), c)
			if tt.bad == "" && err != nil {
				t.Fatal(err)
			}
			if tt.bad != "" && (err == nil || !strings.Contains(err.Error(), tt.bad)) {
				t.Fatalf("got %v, want %q", err, tt.bad)
			}
		})
	}
}

func TestTemplatesAreValid(t *testing.T) {
	is := issuer(t, "a")
	for name, tpl := range Templates {
		g := &Grant{Subject: AnySubject, Roots: []string{"/w"}, Allow: tpl.Allow, Ask: tpl.Ask, Deny: tpl.Deny, Tiers: tpl.Tiers,
			BudgetUJ: tpl.BudgetUJ, NotBefore: t0.Unix(), NotAfter: t0.Add(tpl.TTL).Unix()}
		if _, err := is.Sign(g); err != nil {
			t.Errorf("template %s: %v", name, err)
		}
	}
}

func FuzzOpenGrant(f *testing.F) {
	is := issuer(f, "a")
	s, err := is.Sign(base())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(s.Envelope)
	payload, _ := s.Grant.Canonical()
	f.Add(payload)
	trust := Trust{"a": is.Public()}
	f.Fuzz(func(t *testing.T, data []byte) {
		if g, err := trust.Open(data); err == nil {
			if err := g.Grant.Validate(); err != nil {
				t.Fatalf("opened an invalid grant: %v", err)
			}
		}
		if g, err := Decode(data); err == nil {
			b, err := g.Canonical()
			if err != nil || string(b) != string(data) {
				t.Fatal("decode-encode not identical")
			}
		}
	})
}

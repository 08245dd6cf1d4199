package tiers

import (
	"context"
	"errors"
	"testing"

	"github.com/joulehook/joule/core"
)

type stage struct {
	tier  core.Tier
	do    func() (*Resolution, error)
	calls *int
}

func (s stage) Tier() core.Tier { return s.tier }

func (s stage) TryResolve(context.Context, *Request) (*Resolution, error) {
	if s.calls != nil {
		*s.calls++
	}
	return s.do()
}

func closes(t core.Tier) stage {
	return stage{tier: t, do: func() (*Resolution, error) { return &Resolution{Answer: string(t)}, nil }}
}
func misses(t core.Tier) stage {
	return stage{tier: t, do: func() (*Resolution, error) { return nil, nil }}
}
func fails(t core.Tier) stage {
	return stage{tier: t, do: func() (*Resolution, error) { return nil, errors.New("boom") }}
}
func panics(t core.Tier) stage {
	return stage{tier: t, do: func() (*Resolution, error) { panic("kaboom") }}
}

func TestCascade(t *testing.T) {
	tests := []struct {
		name      string
		stages    []Stage
		closing   core.Tier
		consulted []core.Tier
		errs      int
	}{
		{"first closes", []Stage{closes("L0"), closes("L1")}, "L0", []core.Tier{"L0"}, 0},
		{"miss then close", []Stage{misses("L0"), closes("L1"), closes("L2")}, "L1", []core.Tier{"L0", "L1"}, 0},
		{"error is a miss", []Stage{fails("L0"), fails("L1"), closes("L2")}, "L2", []core.Tier{"L0", "L1", "L2"}, 2},
		{"panic is a miss", []Stage{panics("L0"), closes("L3")}, "L3", []core.Tier{"L0", "L3"}, 1},
		{"nothing closes", []Stage{misses("L0"), fails("L4")}, "", []core.Tier{"L0", "L4"}, 1},
		{"no stages", nil, "", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.stages...)
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.Run(context.Background(), &Request{Prompt: "x"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Closing != tt.closing || res.Closed() != (tt.closing != "") {
				t.Fatalf("closing %q, want %q", res.Closing, tt.closing)
			}
			if (res.Resolution != nil) != res.Closed() {
				t.Fatal("resolution and closing disagree")
			}
			var got []core.Tier
			errs := 0
			for _, c := range res.Consulted {
				got = append(got, c.Tier)
				if c.Err != nil {
					errs++
				}
			}
			if len(got) != len(tt.consulted) {
				t.Fatalf("consulted %v, want %v", got, tt.consulted)
			}
			for i := range got {
				if got[i] != tt.consulted[i] {
					t.Fatalf("consulted %v, want %v", got, tt.consulted)
				}
			}
			if errs != tt.errs {
				t.Fatalf("%d errors recorded, want %d", errs, tt.errs)
			}
		})
	}
}

func TestCascadeNeverConsultsPastTheClose(t *testing.T) {
	var later int
	c, _ := New(closes("L1"), stage{tier: "L2", calls: &later, do: func() (*Resolution, error) { return nil, nil }})
	if _, err := c.Run(context.Background(), &Request{}); err != nil {
		t.Fatal(err)
	}
	if later != 0 {
		t.Fatalf("L2 consulted %d times after L1 closed", later)
	}
}

func TestNewRejectsOrder(t *testing.T) {
	for _, stages := range [][]Stage{
		{closes("L1"), closes("L0")},
		{closes("L1"), closes("L1")},
		{closes("L7")},
	} {
		if _, err := New(stages...); err == nil {
			t.Errorf("New(%v) accepted", stages)
		}
	}
}

func TestCascadeStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls int
	c, _ := New(stage{tier: "L0", do: func() (*Resolution, error) { cancel(); return nil, nil }}, stage{tier: "L1", calls: &calls, do: func() (*Resolution, error) { return nil, nil }})
	if _, err := c.Run(ctx, &Request{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run() = %v, want context.Canceled", err)
	}
	if calls != 0 {
		t.Fatal("a stage ran after cancel")
	}
}

// budgetGate denies tiers not in allowed and charges a fixed price.
type budgetGate struct {
	allowed map[core.Tier]bool
	left    uint64
	price   uint64
	calls   []core.Tier
	fail    error
}

func (g *budgetGate) Consult(_ context.Context, _ *Request, t core.Tier) error {
	g.calls = append(g.calls, t)
	if g.fail != nil {
		return g.fail
	}
	if !g.allowed[t] {
		return &Denied{Code: "action-not-granted", Reason: "no verb"}
	}
	if g.price > g.left {
		return &Denied{Code: "budget-exceeded", Reason: "spent"}
	}
	g.left -= g.price
	return nil
}

func TestGatedCascade(t *testing.T) {
	var l1Calls int
	c, _ := New(misses("L0"), stage{tier: "L1", calls: &l1Calls, do: func() (*Resolution, error) { return &Resolution{}, nil }}, closes("L2"))
	g := &budgetGate{allowed: map[core.Tier]bool{"L0": true, "L2": true}, left: 100, price: 10}
	res, err := c.WithGate(g).Run(context.Background(), &Request{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Closing != "L2" || l1Calls != 0 {
		t.Fatalf("closing %s, L1 ran %d times", res.Closing, l1Calls)
	}
	if len(res.Consulted) != 3 || res.Consulted[1].Denied == nil || res.Consulted[1].Ran() {
		t.Fatalf("consulted %+v", res.Consulted)
	}
	if g.left != 80 {
		t.Fatalf("left %d", g.left)
	}
	// Budget runs out: nothing closes rather than overspending.
	g = &budgetGate{allowed: map[core.Tier]bool{"L0": true, "L1": true, "L2": true}, left: 15, price: 10}
	res, _ = c.WithGate(g).Run(context.Background(), &Request{})
	if res.Closed() {
		t.Fatalf("closed at %s with no budget", res.Closing)
	}
	// A gate that cannot answer stops the cascade.
	g = &budgetGate{fail: errors.New("store locked")}
	if _, err := c.WithGate(g).Run(context.Background(), &Request{}); err == nil {
		t.Fatal("a failing gate did not stop the cascade")
	}
}

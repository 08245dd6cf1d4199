package ui

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/grant"
)

// TestGrantsActiveFor: the grants view says where each grant is active,
// from the signed trust chain: the default grant "default", a workspace's
// own grant its root.
func TestGrantsActiveFor(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sealer, _ := f.id.Sealer()
	dir := t.TempDir()
	g := &gate.Gate{Store: f.st, Sealer: sealer, Trust: grant.Trust{f.id.Steward: f.id.Public()}, JouleHome: filepath.Join(dir, "home"), Home: dir, Costs: gate.DefaultCosts}
	is, _ := grant.NewIssuer(f.id.Steward, f.id.Key)
	ws := filepath.Join(dir, "ws")
	issue := func(use bool) string {
		sg, err := is.Sign(&grant.Grant{Subject: grant.AnySubject, Roots: []string{ws}, Allow: []string{"Read"}, Tiers: []string{},
			BudgetUJ: 1 << 30, NotBefore: time.Now().Add(-time.Hour).Unix(), NotAfter: time.Now().Add(time.Hour).Unix()})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Adopt(ctx, sg, "grant", use); err != nil {
			t.Fatal(err)
		}
		return sg.ID.String()
	}
	def, own, idle := issue(true), issue(false), issue(false)
	if err := g.UseWorkspace(ctx, own, ws); err != nil {
		t.Fatal(err)
	}
	f.srv.cfg.TrustState = g.TrustState

	var got struct {
		Active string      `json:"active"`
		Grants []GrantView `json:"grants"`
	}
	if code := f.get("/api/grants", &got); code != 200 {
		t.Fatalf("status %d", code)
	}
	want := map[string]string{def: "true [default]", own: "true [" + ws + "]", idle: "false []"}
	for _, v := range got.Grants {
		if s := fmt.Sprint(v.Active, " ", v.ActiveFor); s != want[v.ID] {
			t.Errorf("grant %s: %s, want %s", v.ID, s, want[v.ID])
		}
		delete(want, v.ID)
	}
	if len(want) != 0 || got.Active != def {
		t.Errorf("missing %v; active %s, want the default %s", want, got.Active, def)
	}
}

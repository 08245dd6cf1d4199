package l1

import (
	"context"
	"strings"
	"testing"

	"github.com/joulehook/joule/tiers"
	"github.com/joulehook/joule/tiers/ask"
)

// lookUpWorkspace has a name in two packages (cleanPath), a type and a
// field of one name (Dir), and a method declared once per build (roundTrip).
var lookUpWorkspace = map[string]string{
	"go.mod": "module example.com/m\n\ngo 1.22\n",
	"srv/srv.go": "package srv\n\ntype Server struct{ Dir Dir }\n\ntype Dir string\n\nfunc (s *Server) Close() error { return nil }\n\n" +
		"func cleanPath(p string) string { return p }\n",
	"srv/rt.go":    "//go:build !js\n\npackage srv\n\nfunc (s *Server) roundTrip() {}\n",
	"srv/rt_js.go": "//go:build js\n\npackage srv\n\nfunc (s *Server) roundTrip() {}\n",
	"srv/use.go": "package srv\n\nfunc use() {\n\tcleanPath(\"a\")\n\tcleanPath(\"b\")\n\tcleanPath(\"c\")\n\tcleanPath(\"d\")\n" +
		"\tvar s Server\n\ts.roundTrip()\n\t_ = s.Close()\n\t_ = s.Dir\n}\n",
	"web/web.go": "package web\n\nfunc cleanPath(p string) string { return p }\n\nfunc use() { _ = cleanPath(\"x\") }\n",
}

// TestLookUpReadsPeople: what a request says of a symbol (its file, its
// kind, a build twin) gives the declaration alone, never its uses, and a
// question about behaviour does not close.
func TestLookUpReadsPeople(t *testing.T) {
	root := module(t, lookUpWorkspace)
	s := &Stage{}
	ctx := context.Background()
	for _, tt := range []struct {
		prompt string
		cites  []string // the places the answer cites, all of them; nil: must not close
	}{
		{"jump to cleanPath in srv.go", []string{"srv/srv.go:9"}},
		{"find the func cleanPath in web.go", []string{"web/web.go:3"}},
		{"go to cleanPath (web.go)", []string{"web/web.go:3"}},
		{"find cleanPath in srv.go", []string{"srv/srv.go:9"}},
		{"find cleanPath in package srv", []string{"srv/srv.go:9"}},
		{"go to the Dir type", []string{"srv/srv.go:5"}},
		{"where is roundTrip defined", []string{"srv/rt.go:5", "srv/rt_js.go:5"}},
		{"where is Server's Close", []string{"srv/srv.go:7"}},
		{"the Close method on Server — where?", []string{"srv/srv.go:7"}},
		{"is Server.Close safe to use from many goroutines?", nil},
		{"where is cleanPath defined", nil},
		{"explain cleanPath in srv.go", nil},
	} {
		res, err := s.TryResolve(ctx, &tiers.Request{Prompt: tt.prompt, Root: root})
		if tt.cites == nil {
			if err == nil && res != nil && (res.Answer != "" || res.Op != nil) {
				t.Errorf("%q closed: %s", tt.prompt, res.Answer)
			}
			continue
		}
		if err != nil || res == nil {
			t.Errorf("%q did not close: %v", tt.prompt, err)
			continue
		}
		got := cited(res.Answer)
		if strings.Join(got, " ") != strings.Join(tt.cites, " ") || ask.Sites(res.Answer) > ask.MaxDefinitionSites {
			t.Errorf("%q cites %v, want %v:\n%s", tt.prompt, got, tt.cites, res.Answer)
		}
	}
}

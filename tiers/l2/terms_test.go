package l2

import (
	"reflect"
	"strings"
	"testing"
)

func TestTerms(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string
	}{
		{"ServeHTTP", "servehttp serve http"},
		{"parse_config", "parse_config parse config"},
		{"HTTPServer", "httpserver http server"},
		{"utf8String", "utf8string utf 8 string"},
		{"getURLForID", "geturlforid get url for id"},
		{"x", "x"},
		{"plain words here", "plain words here"},
		{"__init__", "__init__ init"},
		{"___", ""},
		{"Größe ändern", "größe ändern"},
		{"a.b(c)", "a b c"},
		{"v2Client", "v2client v 2 client"},
		{strings.Repeat("a", 65) + " ok", "ok"},
	} {
		got := strings.Join(Terms(tt.in), " ")
		if got != tt.want {
			t.Errorf("Terms(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestQueryTermsDropsStopwordsAndRepeats(t *testing.T) {
	got := queryTerms("find the code that parses the HTTP header, the http Header")
	want := []string{"parses", "http", "header"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("queryTerms = %q, want %q", got, want)
	}
}

func FuzzTerms(f *testing.F) {
	for _, s := range []string{"ServeHTTP", "parse_config", "αβγ_ΔΕ9", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, term := range Terms(s) {
			if term == "" || len(term) > maxTermLen*4 {
				t.Fatalf("Terms(%q) gave term %q", s, term)
			}
			if strings.ContainsAny(term, " \t\n\"") {
				t.Fatalf("Terms(%q) gave term %q with a separator", s, term)
			}
		}
	})
}

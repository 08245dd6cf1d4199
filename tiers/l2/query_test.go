package l2

import (
	"testing"
)

func TestParseQuery(t *testing.T) {
	for _, tt := range []struct {
		prompt string
		want   Query
	}{
		{"where is ComputeTotal defined?", Query{Intent: DefinitionIntent, Name: "ComputeTotal"}},
		{"Where's the function ParseSKU declared", Query{Intent: DefinitionIntent, Name: "ParseSKU"}},
		{"where is `billing.Validate` defined", Query{Intent: DefinitionIntent, Name: "billing.Validate"}},
		{"definition of (*Stock).Reserve", Query{Intent: DefinitionIntent, Name: "(*Stock).Reserve"}},
		{"show me the definition of type Coupon", Query{Intent: DefinitionIntent, Name: "Coupon"}},
		{"go to definition of net/http.Get", Query{Intent: DefinitionIntent, Name: "net/http.Get"}},
		{"find checkToken()", Query{Intent: DefinitionIntent, Name: "checkToken"}},
		{"where is Server.ServeHTTP", Query{Intent: DefinitionIntent, Name: "Server.ServeHTTP"}},
		{"who calls ComputeTotal?", Query{Intent: CallersIntent, Name: "ComputeTotal"}},
		{"callers of inventory.ParseSKU", Query{Intent: CallersIntent, Name: "inventory.ParseSKU"}},
		{"find all references to applyDiscount", Query{Intent: CallersIntent, Name: "applyDiscount"}},
		{"where is checkToken called", Query{Intent: CallersIntent, Name: "checkToken"}},
		{"what calls (*Stock).Release", Query{Intent: CallersIntent, Name: "(*Stock).Release"}},
		{"find the code that checks the bearer token", Query{Intent: SearchIntent, Text: "checks the bearer token"}},
		{"where do we reserve stock for an order?", Query{Intent: SearchIntent, Text: "reserve stock for an order"}},
		{"where is the sales tax computed", Query{Intent: SearchIntent, Text: "the sales tax"}},
		{"fix the bug in ComputeTotal", Query{}},
		{"rename Foo to Bar", Query{}},
		{"where is", Query{}},
		{"find", Query{}},
		{"who calls", Query{}},
		{"write a function that sorts users", Query{}},
		{"find foo bar baz", Query{}},
		{"", Query{}},
	} {
		if got := ParseQuery(tt.prompt); got != tt.want {
			t.Errorf("ParseQuery(%q) = %+v, want %+v", tt.prompt, got, tt.want)
		}
	}
}

func TestParseName(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Name
		bad  bool
	}{
		{in: "Foo", want: Name{Ident: "Foo"}},
		{in: "pkg.Foo", want: Name{Qual: "pkg", Ident: "Foo"}},
		{in: "(*T).M", want: Name{Recv: "T", Ident: "M"}},
		{in: "(T).M", want: Name{Recv: "T", Ident: "M"}},
		{in: "(*pkg.T).M", want: Name{Qual: "pkg", Recv: "T", Ident: "M"}},
		{in: "pkg.T.M", want: Name{Qual: "pkg", Recv: "T", Ident: "M"}},
		{in: "net/http.Get", want: Name{Dir: "net/http", Qual: "http", Ident: "Get"}},
		{in: "net/http.(*Client).Do", want: Name{Dir: "net/http", Recv: "Client", Ident: "Do"}},
		{in: "Foo()", want: Name{Ident: "Foo"}},
		{in: "", bad: true},
		{in: "a.b.c.d", bad: true},
		{in: "1abc", bad: true},
		{in: "net/http", bad: true},
		{in: "(*T.M", bad: true},
		{in: "/.Foo", bad: true},
		{in: "foo bar", bad: true},
	} {
		got, err := ParseName(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("ParseName(%q) = %+v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseName(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"where is Foo defined", "who calls (*T).M", "find the code that x", "definition of a/b.C", "find `x`()"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, prompt string) {
		q := ParseQuery(prompt)
		switch q.Intent {
		case DefinitionIntent, CallersIntent:
			if _, err := ParseName(q.Name); err != nil {
				t.Fatalf("ParseQuery(%q) gave name %q that does not parse: %v", prompt, q.Name, err)
			}
		case SearchIntent:
			if q.Text == "" {
				t.Fatalf("ParseQuery(%q) gave an empty search", prompt)
			}
		case NoIntent:
			if q != (Query{}) {
				t.Fatalf("ParseQuery(%q) = %+v with no intent", prompt, q)
			}
		}
	})
}

package rule

import (
	"net/url"
	"testing"
)

func TestMatchURL(t *testing.T) {
	tests := []struct {
		rule  string
		url   string
		allow bool // MatchURL in Allow mode
		deny  bool // MatchURL in Deny mode
	}{
		{"WebFetch(domain:example.com)", "https://example.com/x", true, true},
		{"WebFetch(domain:example.com)", "http://example.com:8080/", true, true},
		{"WebFetch(domain:example.com)", "HTTPS://EXAMPLE.COM/", true, true},
		{"WebFetch(domain:example.com)", "https://example.com./", true, true},
		{"WebFetch(domain:example.com)", "https://user:pw@example.com/", true, true},
		{"WebFetch(domain:example.com)", "http://example.com#@evil.com", true, true},
		// User information is not the host.
		{"WebFetch(domain:example.com)", "http://example.com@evil.com/", false, false},
		{"WebFetch(domain:example.com)", "http://example.com:80@evil.com/", false, false},
		{"WebFetch(domain:example.com)", "https://evil.com/?u=example.com", false, false},
		{"WebFetch(domain:example.com)", "https://example.com.evil.com/", false, false},
		{"WebFetch(domain:example.com)", "https://notexample.com/", false, false},
		{"WebFetch(domain:example.com)", "https://sub.example.com/", false, false},
		{"WebFetch(domain:example.com)", "https://example.com../", false, true},
		// Full-width letters and ideographic dots are read as ASCII, as
		// browsers and Node do.
		{"WebFetch(domain:example.com)", "https://ｅｘａｍｐｌｅ.com/", true, true},
		{"WebFetch(domain:example.com)", "https://example。com/", true, true},
		{"WebFetch(domain:example.com)", "https://EXAMPLE．COM/", true, true},
		// No host, or not http(s): allow never, deny always.
		{"WebFetch(domain:example.com)", "ftp://example.com/", false, true},
		{"WebFetch(domain:example.com)", "http:///example.com", false, true},
		{"WebFetch(domain:example.com)", "http:example.com", false, true},
		{"WebFetch(domain:example.com)", "file:///etc/passwd", false, true},
		// Internationalized hosts are compared in punycode.
		{"WebFetch(domain:xn--bcher-kva.de)", "https://xn--bcher-kva.de/", true, true},
		{"WebFetch(domain:xn--bcher-kva.de)", "https://XN--BCHER-KVA.DE/", true, true},
		{"WebFetch(domain:xn--bcher-kva.de)", "https://bücher.de/", false, true},
		{"WebFetch(domain:example.com)", "https://exаmple.com/", false, true}, // Cyrillic а
		// Subdomains.
		{"WebFetch(domain:*.example.com)", "https://a.example.com/", true, true},
		{"WebFetch(domain:*.example.com)", "https://a.b.example.com/", true, true},
		{"WebFetch(domain:*.example.com)", "https://example.com/", false, false},
		{"WebFetch(domain:*.example.com)", "https://badexample.com/", false, false},
		{"WebFetch(domain:*.example.com)", "https://a.example.com.evil.com/", false, false},
		// IPv4 however written, IPv6, IPv4-mapped IPv6.
		{"WebFetch(domain:127.0.0.1)", "http://127.0.0.1:3000/", true, true},
		{"WebFetch(domain:127.0.0.1)", "http://2130706433/", true, true},
		{"WebFetch(domain:127.0.0.1)", "http://0x7f.1/", true, true},
		{"WebFetch(domain:127.0.0.1)", "http://0177.0.0.1/", true, true},
		{"WebFetch(domain:127.0.0.1)", "http://127.1/", true, true},
		{"WebFetch(domain:127.0.0.1)", "http://[::ffff:127.0.0.1]/", true, true},
		{"WebFetch(domain:127.0.0.1)", "http://127.0.0.2/", false, false},
		{"WebFetch(domain:127.0.0.1)", "http://999.0.0.1/", false, true},
		{"WebFetch(domain:127.0.0.1)", "http://1.2.3.4.5/", false, true},
		{"WebFetch(domain:[::1])", "http://[::1]:8080/", true, true},
		{"WebFetch(domain:[::1])", "http://[0:0::1]/", true, true},
		{"WebFetch(domain:[::1])", "http://[fe80::1%25eth0]/", false, true},
		// Bare WebFetch matches everything.
		{"WebFetch", "https://anything.example/", true, true},
		{"WebFetch", "ftp://x/", true, true},
		// Other rules never match.
		{"Bash", "https://example.com/", false, false},
		{"WebSearch", "https://example.com/", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.rule+" "+tt.url, func(t *testing.T) {
			r, err := Parse(tt.rule)
			if err != nil {
				t.Fatal(err)
			}
			u, err := url.Parse(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.MatchURL(u, Allow); got != tt.allow {
				t.Errorf("%s.MatchURL(%q, allow) = %v, want %v", tt.rule, tt.url, got, tt.allow)
			}
			if got := r.MatchURL(u, Deny); got != tt.deny {
				t.Errorf("%s.MatchURL(%q, deny) = %v, want %v", tt.rule, tt.url, got, tt.deny)
			}
			if got := r.MatchURL(u, Ask); got != tt.deny {
				t.Errorf("%s.MatchURL(%q, ask) = %v, want %v", tt.rule, tt.url, got, tt.deny)
			}
		})
	}
}

func TestMatchURLInvalidInput(t *testing.T) {
	r, err := Parse("WebFetch")
	if err != nil {
		t.Fatal(err)
	}
	if r.MatchURL(nil, Deny) {
		t.Error("MatchURL(nil) = true")
	}
	u, _ := url.Parse("https://example.com/")
	if r.MatchURL(u, 0) {
		t.Error("MatchURL with mode 0 = true")
	}
}

package rule

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// domain is the parsed specifier of a WebFetch rule.
type domain struct {
	host       string // canonical host: see canonicalHost
	subdomains bool   // domain:*.host, which matches hosts below host but not host
}

func parseDomain(spec string) (domain, error) {
	rest, ok := strings.CutPrefix(spec, "domain:")
	if !ok {
		return domain{}, fmt.Errorf("WebFetch specifier %q must be domain:HOST", spec)
	}
	var d domain
	if h, ok := strings.CutPrefix(rest, "*."); ok {
		d.subdomains, rest = true, h
	}
	switch {
	case rest == "" && !d.subdomains:
		return domain{}, fmt.Errorf("missing host in %q", spec)
	case rest == "*":
		return domain{}, fmt.Errorf("%q matches every host; write WebFetch without parentheses", spec)
	case rest == "":
		return domain{}, fmt.Errorf("missing host after *. in %q", spec)
	case strings.Contains(rest, "*"):
		return domain{}, fmt.Errorf("wildcard in %q: only a leading *. is supported", spec)
	case strings.Contains(rest, "/"):
		return domain{}, fmt.Errorf("%q names a URL or path; a domain rule names a host only", spec)
	case strings.Contains(rest, "@"):
		return domain{}, fmt.Errorf("%q holds user information; a domain rule names a host only", spec)
	}
	for _, c := range rest {
		if c >= 0x80 {
			return domain{}, fmt.Errorf("non-ASCII host in %q: write it in its ASCII (punycode, xn--) form", spec)
		}
	}
	h := rest
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	} else if strings.Contains(h, ":") {
		if _, err := netip.ParseAddr(h); err != nil {
			return domain{}, fmt.Errorf("port in %q: domain rules match every port", spec)
		}
	}
	host, ok := canonicalHost(h)
	if !ok {
		return domain{}, fmt.Errorf("invalid host %q", rest)
	}
	if d.subdomains && isIP(host) {
		return domain{}, fmt.Errorf("*. needs a domain name, not an IP address, in %q", spec)
	}
	d.host = host
	return d, nil
}

func (d domain) String() string {
	if d.subdomains {
		return "domain:*." + d.host
	}
	return "domain:" + d.host
}

func isIP(host string) bool {
	_, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil
}

// MatchURL reports whether a WebFetch rule matches a URL. A bare WebFetch
// matches every URL; domain:h matches http and https URLs whose host is h
// (any port; user information such as http://h@evil/ does not count), and
// domain:*.h the hosts below h. Hosts are compared in canonical form: lower
// case, without a trailing dot, IPv4 in dotted decimal however it was
// written (http://2130706433/ is 127.0.0.1, as browsers and Node read it),
// IPv4-mapped IPv6 as IPv4, full-width forms as ASCII.
//
// A URL whose host this package cannot put into canonical form for sure
// (not http or https, no host, an internationalized host that needs Unicode
// normalization: hosts are compared in their ASCII form) matches no allow
// rule and every ask and deny domain rule.
//
// mode must be Allow, Ask or Deny; any other value matches nothing.
func (r Rule) MatchURL(u *url.URL, mode Mode) bool {
	if r.kind != kindWebFetch || !mode.valid() || u == nil {
		return false
	}
	if r.spec == "" {
		return true
	}
	host, ok := urlHost(u)
	if !ok {
		return mode != Allow
	}
	if r.domain.subdomains {
		return strings.HasSuffix(host, "."+r.domain.host)
	}
	return host == r.domain.host
}

func urlHost(u *url.URL) (string, bool) {
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" || u.Opaque != "" {
		return "", false
	}
	return canonicalHost(u.Hostname())
}

// canonicalHost puts a host (without brackets or port) into the form rules
// are compared in, or reports false when it cannot do so with certainty.
func canonicalHost(h string) (string, bool) {
	if h == "" {
		return "", false
	}
	if strings.Contains(h, ":") {
		if strings.Contains(h, "%") {
			return "", false // a zone belongs to one machine's interfaces
		}
		addr, err := netip.ParseAddr(h)
		if err != nil {
			return "", false
		}
		if addr = addr.Unmap(); addr.Is4() {
			return addr.String(), true
		}
		return "[" + addr.String() + "]", true
	}
	var b strings.Builder
	for _, c := range h {
		switch {
		case c == 0x3002 || c == 0xFF0E || c == 0xFF61:
			c = '.' // ideographic and full-width full stops separate labels
		case 0xFF01 <= c && c <= 0xFF5E:
			c -= 0xFEE0 // full-width ASCII
		case c >= 0x80:
			// Needs IDNA mapping and normalization this package does not do.
			return "", false
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b.WriteRune(c)
	}
	host := strings.TrimSuffix(b.String(), ".")
	if host == "" {
		return "", false
	}
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if l == "" {
			return "", false
		}
		for i := 0; i < len(l); i++ {
			if c := l[i]; !isLetter(c) && !isDigit(c) && c != '-' && c != '_' {
				return "", false
			}
		}
	}
	if last := labels[len(labels)-1]; isNumberLabel(last) {
		return parseIPv4(labels)
	}
	return host, true
}

// isNumberLabel implements the WHATWG URL "ends in a number" test for the
// last label: such a host is parsed as an IPv4 address.
func isNumberLabel(l string) bool {
	if hex, ok := strings.CutPrefix(l, "0x"); ok {
		for i := 0; i < len(hex); i++ {
			if !isDigit(hex[i]) && !('a' <= hex[i] && hex[i] <= 'f') {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if !isDigit(l[i]) {
			return false
		}
	}
	return true
}

// parseIPv4 is the WHATWG URL IPv4 parser: up to four parts, each decimal,
// 0x-hexadecimal or 0-octal, the last filling the remaining bytes.
func parseIPv4(parts []string) (string, bool) {
	if len(parts) > 4 {
		return "", false
	}
	var nums []uint64
	for _, p := range parts {
		base := 10
		switch {
		case strings.HasPrefix(p, "0x"):
			base, p = 16, p[2:]
		case len(p) > 1 && p[0] == '0':
			base, p = 8, p[1:]
		}
		n := uint64(0)
		if p != "" {
			var err error
			if n, err = strconv.ParseUint(p, base, 64); err != nil {
				return "", false
			}
		}
		nums = append(nums, n)
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return "", false
	}
	ip := last
	for i, n := range nums[:len(nums)-1] {
		if n > 255 {
			return "", false
		}
		ip += n << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}).String(), true
}

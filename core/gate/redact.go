package gate

import (
	"regexp"
	"sync"
)

type secretPattern struct {
	re   *regexp.Regexp
	repl string
}

// secretPatterns match credentials that turn up in command lines. A match
// is replaced by a marker that keeps the part before the secret, so a
// receipt still says what was done without carrying the key. They are
// compiled on first use: a process that seals no command line (most joule
// commands) does not compile them at start-up.
var secretPatterns = sync.OnceValue(func() []secretPattern {
	return []secretPattern{
		// NAME=value where the name says it is secret.
		{regexp.MustCompile(`(?i)\b([A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|AUTH)[A-Z0-9_]*)=("[^"]*"|'[^']*'|\S+)`), "$1=[redacted]"},
		// --password=x, --token x, --api-key x …
		{regexp.MustCompile(`(?i)(--?(?:password|passwd|token|api[-_]?key|secret|auth)[= ])("[^"]*"|'[^']*'|\S+)`), "$1[redacted]"},
		// Authorization headers.
		{regexp.MustCompile(`(?i)((?:authorization|x-api-key|api-key)\s*:\s*(?:bearer\s+|basic\s+|token\s+)?)[^\s'"]+`), "$1[redacted]"},
		{regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}`), "$1[redacted]"},
		// user:password@ in URLs.
		{regexp.MustCompile(`(://[^/\s:@]+:)[^/\s@]+@`), "$1[redacted]@"},
		// Well-known token shapes.
		{regexp.MustCompile(`\b(?:sk|pk|rk)-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{16,}`), "[redacted-key]"},
		{regexp.MustCompile(`\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}`), "[redacted-key]"},
		{regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), "[redacted-key]"},
		{regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}`), "[redacted-key]"},
		{regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`), "[redacted-key]"},
		{regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)`), "[redacted-private-key]"},
		{regexp.MustCompile(`PRIVATE\+KEY\+\S+`), "[redacted-private-key]"},
	}
})

// Redact removes credentials from a command line or URL before it is put in
// a receipt or a log. It is a guard for the common shapes, not a proof: the
// receipt also carries only a digest of the full input.
func Redact(s string) string {
	for _, p := range secretPatterns() {
		s = p.re.ReplaceAllString(s, p.repl)
	}
	return s
}

package server

import (
	"crypto/subtle"
	"strings"
)

// checkToken compares a "Bearer <token>" authorization header with the
// shared secret in constant time.
func checkToken(header, secret string) bool {
	tok, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || secret == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(tok), []byte(secret)) == 1
}

package main

import (
	"net/url"

	"github.com/joulehook/joule/core/store"
)

// showStore is a store location fit to print: a URL without its password.
func showStore(loc string) string {
	if !store.IsURL(loc) {
		return loc
	}
	u, err := url.Parse(loc)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	return u.Redacted()
}

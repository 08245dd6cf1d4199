package main

import "testing"

func TestShowStore(t *testing.T) {
	for in, want := range map[string]string{
		"/home/u/.local/share/joule/joule.db":    "/home/u/.local/share/joule/joule.db",
		"postgres://joule:s3cret@db:5432/team":   "postgres://joule:xxxxx@db:5432/team",
		"postgres://db/team?sslmode=verify-full": "postgres://db/team?sslmode=verify-full",
		"postgres://joule:s3cret@[::1/team":      "postgres://(unparsable URL)",
	} {
		if got := showStore(in); got != want {
			t.Errorf("showStore(%q) = %q, want %q", in, got, want)
		}
	}
}

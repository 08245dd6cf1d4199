package main

import (
	"log/slog"

	"github.com/joulehook/joule/energy/proxy"
)

// discoverProxy returns the base URL of the joule proxy announced in home
// when it runs, looked up each time the remote agent is launched, so a
// proxy started after joule acp is used too.
func discoverProxy(home string, log *slog.Logger) func() string {
	return func() string {
		a, err := proxy.Discover(home)
		if err != nil {
			log.Warn("the joule proxy announcement is unreadable; the remote agent's model calls are not metered", "err", err)
			return ""
		}
		if a == nil {
			return ""
		}
		return "http://" + a.Addr
	}
}

package main

import "os"

// defaultSteward names the endpoint after the machine.
func defaultSteward() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "localhost"
	}
	return "joule@" + h
}

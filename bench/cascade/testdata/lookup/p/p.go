// Package p is a fixture for the benchmark's ground-truth tests.
package p

import "strings"

// Greeter says hello.
type Greeter struct {
	Name string
}

// Greet returns the greeting.
func (g *Greeter) Greet() string {
	return greeting(g.Name)
}

// Shout returns the greeting in capitals.
func (g *Greeter) Shout() string {
	return strings.ToUpper(greeting(g.Name))
}

func greeting(name string) string {
	return "hello, " + trim(name)
}

func trim(s string) string { return strings.TrimSpace(s) }

// helper is passed as a value, so its callers are not a call list.
func helper() {}

var hooks = []func(){helper}

const (
	// Max is the most.
	Max = 3
	min = 1
)

// Command gendeny writes the thin client's deny table
// (plugins/hook/resident/deny_table.go) from the host registry: run it
// with go generate ./plugins/hosts.
package main

import (
	"fmt"
	"os"

	"github.com/joulehook/joule/plugins/hosts"
	"github.com/joulehook/joule/plugins/hosts/internal/denytable"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gendeny OUTPUT.go")
		os.Exit(2)
	}
	src, err := denytable.Generate(hosts.All())
	if err == nil {
		err = os.WriteFile(os.Args[1], src, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendeny:", err)
		os.Exit(1)
	}
}

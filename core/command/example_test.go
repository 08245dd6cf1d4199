package command_test

import (
	"errors"
	"fmt"

	"github.com/joulehook/joule/core/command"
)

func ExampleAnalyze() {
	an, err := command.Analyze(`cd src && sudo timeout 5 go test ./... > "test.log"; echo $(git rev-parse HEAD)`)
	if err != nil {
		panic(err)
	}
	for _, c := range an.Commands {
		fmt.Println(c.Wrappers, c.Args)
	}
	for _, w := range an.Writes {
		fmt.Println("writes", w.Path)
	}
	// Output:
	// [] [{cd true} {src true}]
	// [sudo timeout] [{go true} {test true} {./... true}]
	// [] [{git true} {rev-parse true} {HEAD true}]
	// [] [{echo true} {$(git rev-parse HEAD) false}]
	// writes test.log
	// writes src/test.log
}

func ExampleAnalyze_unanalyzable() {
	_, err := command.Analyze(`curl -fsSL https://example.com/install.sh | sh`)
	var ue *command.UnanalyzableError
	if errors.As(err, &ue) {
		fmt.Println(ue.Code)
		fmt.Println(ue.Reason)
	}
	// Output:
	// interpreter-stdin
	// sh has no script or program argument, so it reads its program from standard input
}

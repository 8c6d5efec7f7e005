package main

import (
	"errors"
	"fmt"
	"os"
)

func main() {
	setUp()
	err := newRootCmd().Execute()
	var logged loggedError
	if err != nil && !errors.As(err, &logged) && err.Error() != "" {
		fmt.Fprintln(os.Stderr, "cacctl:", err)
	}
	os.Exit(exitCode(err))
}

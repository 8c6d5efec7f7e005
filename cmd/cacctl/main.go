package main

import (
	"fmt"
	"os"
)

func main() {
	err := newRootCmd().Execute()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cacctl:", err)
	}
	os.Exit(exitCode(err))
}

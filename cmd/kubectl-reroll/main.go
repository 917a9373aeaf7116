// Command kubectl-reroll is the kubectl plugin `kubectl reroll`. This file
// only wires the commands of internal/cli to the process: its arguments,
// standard streams and exit status (cli.Run says which).
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/reroll/reroll/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}))
}

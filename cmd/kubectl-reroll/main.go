// Command kubectl-reroll is the kubectl plugin `kubectl reroll`. This file
// only wires the commands of internal/cli to the process: standard streams
// and the exit code (2 when `plan --fail-on-rollout` finds rollouts).
package main

import (
	"errors"
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/reroll/reroll/internal/cli"
)

func main() {
	cmd := cli.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.Execute(); err != nil {
		if errors.Is(err, cli.ErrWouldRoll) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// Command petrel is a Kafka-compatible streaming broker in one binary. See README.md.
package main

import (
	"os"

	"github.com/petrel-broker/petrel/cli"
)

func main() {
	os.Exit(cli.Run(os.Args))
}

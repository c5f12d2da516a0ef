package perf

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/cli/internal/clitest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	ucli "github.com/urfave/cli/v2"
)

// runPetrel runs a petrel command line whose only command is `perf`, printing an error
// as one line ("petrel: ...", exit 1) as the petrel app does.
func runPetrel(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	app := &ucli.App{
		Name:           "petrel",
		Reader:         stdin,
		Writer:         stdout,
		ErrWriter:      stderr,
		Commands:       []*ucli.Command{Command()},
		ExitErrHandler: func(*ucli.Context, error) {},
	}
	if err := app.Run(args); err != nil {
		fmt.Fprintf(stderr, "petrel: %v\n", err)
		return 1
	}
	return 0
}

// runWithIO is runPetrel without standard input.
func runWithIO(args []string, stdout, stderr io.Writer) int {
	return runPetrel(args, strings.NewReader(""), stdout, stderr)
}

// mustRun runs petrel with args (without the program name) and fails the test unless
// it exits 0.
func mustRun(t testing.TB, stdin string, args ...string) clitest.Result {
	t.Helper()
	return clitest.MustRun(t, runPetrel, stdin, args...)
}

// mustFail runs a command that must exit 1 with a one-line error containing want.
func mustFail(t testing.TB, want string, stdin string, args ...string) clitest.Result {
	t.Helper()
	return clitest.MustFail(t, runPetrel, want, stdin, args...)
}

// startBroker starts a one-node broker and returns its --bootstrap-server flag and a
// function creating a topic of the given partitions (-1: the broker default) on it.
func startBroker(t testing.TB) (bootstrap string, createTopic func(name string, partitions int32)) {
	t.Helper()
	b := clitest.StartBroker(t, nil)
	return clitest.Bootstrap(b), func(name string, partitions int32) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, -1, nil, name); err != nil {
			t.Fatalf("creating topic %s: %v", name, err)
		}
	}
}

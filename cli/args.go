package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	ucli "github.com/urfave/cli/v2"
)

// RunWithInput is RunWithIO with an explicit standard input, for tests of commands that
// read it (produce). Run and RunWithIO read os.Stdin.
func RunWithInput(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	app.Reader = stdin
	return runApp(app, args, stderr)
}

// namesArgs returns the names given positionally and with the repeatable --flag (Kafka's
// tools' spelling: --topic, --group), positional ones first, without repeats.
func namesArgs(c *ucli.Context, flag string) ([]string, error) {
	args, err := clientcmd.Args(c)
	if err != nil {
		return nil, err
	}
	for _, n := range c.StringSlice(flag) {
		if n = strings.TrimSpace(n); n != "" {
			args = append(args, n)
		}
	}
	return dedupe(args), nil
}

// oneNameArg is namesArgs for a command that takes exactly one name, what in errors
// (TOPIC, GROUP).
func oneNameArg(c *ucli.Context, flag, what string) (string, error) {
	names, err := namesArgs(c, flag)
	if err != nil {
		return "", err
	}
	if len(names) != 1 {
		return "", fmt.Errorf("%s takes exactly one %s (or --%s), got %d", clientcmd.Path(c), what, flag, len(names))
	}
	return names[0], nil
}

// topicFlag is Kafka's --topic for commands that also take topics positionally.
func topicFlag(usage string) ucli.Flag {
	return &ucli.StringSliceFlag{Name: "topic", Usage: usage}
}

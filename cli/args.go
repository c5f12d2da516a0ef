package cli

import (
	"fmt"
	"io"
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// RunWithInput is RunWithIO with an explicit standard input, for tests of commands that
// read it (produce). Run and RunWithIO read os.Stdin.
func RunWithInput(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	app.Reader = stdin
	return runApp(app, args, stderr)
}

// commandArgs returns the command's positional arguments, accepting flags after them
// as Kafka's tools do (`petrel topics create t --partitions 3`). urfave/cli/v2 stops
// parsing flags at the first positional argument; the flags that follow are applied
// here with Context.Set. A lone "--" ends flag parsing.
func commandArgs(c *ucli.Context) ([]string, error) {
	rest := c.Args().Slice()
	var positional []string
	for i := 0; i < len(rest); i++ {
		arg := rest[i]
		if arg == "--" {
			return append(positional, rest[i+1:]...), nil
		}
		if len(arg) < 2 || arg[0] != '-' {
			positional = append(positional, arg)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		flag := commandFlag(c, name)
		if flag == nil {
			var flags []ucli.Flag
			if c.Command != nil {
				flags = c.Command.Flags
			}
			return nil, flagError(commandPath(c), fmt.Errorf("flag provided but not defined: %s", arg), flags)
		}
		if !hasValue {
			if isBoolFlag(flag) {
				value = "true"
			} else {
				if i+1 >= len(rest) {
					return nil, fmt.Errorf("flag needs an argument: %s", arg)
				}
				i++
				value = rest[i]
			}
		}
		// Set by the primary name: aliases hold separate values that urfave/cli copies
		// across only while it parses.
		if err := c.Set(flag.Names()[0], value); err != nil {
			return nil, fmt.Errorf("invalid value %q for flag %s: %v", value, arg, err)
		}
	}
	return positional, nil
}

// commandPath is the running command's name after "petrel": "topics create".
func commandPath(c *ucli.Context) string {
	if c.Command == nil {
		return ""
	}
	return strings.TrimPrefix(c.Command.HelpName, c.App.Name+" ")
}

// commandFlag finds the running command's flag called name (or with that alias).
func commandFlag(c *ucli.Context, name string) ucli.Flag {
	if c.Command == nil {
		return nil
	}
	for _, f := range c.Command.Flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

func isBoolFlag(f ucli.Flag) bool {
	_, ok := f.(*ucli.BoolFlag)
	return ok
}

// exactlyOneArg returns the single positional argument, named what in errors.
func exactlyOneArg(c *ucli.Context, what string) (string, error) {
	args, err := commandArgs(c)
	if err != nil {
		return "", err
	}
	if len(args) != 1 {
		name := strings.TrimPrefix(c.Command.HelpName, c.App.Name+" ")
		return "", fmt.Errorf("%s takes exactly one %s, got %d", name, what, len(args))
	}
	return args[0], nil
}

// namesArgs returns the names given positionally and with the repeatable --flag (Kafka's
// tools' spelling: --topic, --group), positional ones first, without repeats.
func namesArgs(c *ucli.Context, flag string) ([]string, error) {
	args, err := commandArgs(c)
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
		return "", fmt.Errorf("%s takes exactly one %s (or --%s), got %d", commandPath(c), what, flag, len(names))
	}
	return names[0], nil
}

// topicFlag is Kafka's --topic for commands that also take topics positionally.
func topicFlag(usage string) ucli.Flag {
	return &ucli.StringSliceFlag{Name: "topic", Usage: usage}
}

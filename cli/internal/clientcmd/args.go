package clientcmd

import (
	"fmt"
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// Args returns the command's positional arguments, accepting flags after them as
// Kafka's tools do (`petrel topics create t --partitions 3`). urfave/cli/v2 stops
// parsing flags at the first positional argument; the flags that follow are applied
// here with Context.Set. A lone "--" ends flag parsing.
func Args(c *ucli.Context) ([]string, error) {
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
		flag := Flag(c, name)
		if flag == nil {
			var flags []ucli.Flag
			if c.Command != nil {
				flags = c.Command.Flags
			}
			return nil, &UnknownFlagError{Command: Path(c), Flag: arg, Flags: flags}
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

// UnknownFlagError is a flag after the positional arguments that the command does not
// define. The app words it where it prints errors, with the nearest of Flags.
type UnknownFlagError struct {
	Command string      // the command path after "petrel": "topics create"
	Flag    string      // the flag as given: --topix
	Flags   []ucli.Flag // the command's flags
}

func (e *UnknownFlagError) Error() string {
	return "flag provided but not defined: " + e.Flag
}

// Path is the running command's name after "petrel": "topics create".
func Path(c *ucli.Context) string {
	if c.Command == nil {
		return ""
	}
	return strings.TrimPrefix(c.Command.HelpName, c.App.Name+" ")
}

// Flag finds the running command's flag called name (or with that alias).
func Flag(c *ucli.Context, name string) ucli.Flag {
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

// ExactlyOneArg returns the single positional argument, named what in errors.
func ExactlyOneArg(c *ucli.Context, what string) (string, error) {
	args, err := Args(c)
	if err != nil {
		return "", err
	}
	if len(args) != 1 {
		name := strings.TrimPrefix(c.Command.HelpName, c.App.Name+" ")
		return "", fmt.Errorf("%s takes exactly one %s, got %d", name, what, len(args))
	}
	return args[0], nil
}

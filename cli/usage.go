package cli

// Usage: what the command line does with habits from Kafka's tools, kcat and rpk, and
// with mistakes. Every mistake is one line on stderr ("petrel: ...", exit 1) that says
// what was wrong and, where a name is close, what was meant; help is printed only when
// asked for (--help, or a command group named alone).

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	ucli "github.com/urfave/cli/v2"
	"github.com/xrash/smetrics"
)

// finishCommands gives every command in the tree the shared behaviour: --log-level and
// --log-format,
// one-line usage errors, required flags checked without a help dump, and, for command
// groups, an unknown subcommand refused with a suggestion.
func finishCommands(path string, cmds []*ucli.Command) {
	for _, cmd := range cmds {
		name := strings.TrimSpace(path + " " + cmd.Name)
		cmd.Flags = append(cmd.Flags, clientcmd.LogLevelFlag(false), clientcmd.LogFormatFlag(false))
		cmd.OnUsageError = usageError(name)
		checkRequired(name, cmd)
		if len(cmd.Subcommands) > 0 {
			if cmd.Action == nil {
				cmd.Action = groupAction(name)
			}
			finishCommands(name, cmd.Subcommands)
		}
	}
}

// usageError turns a flag parsing error into one line, with the closest flag name.
func usageError(command string) ucli.OnUsageErrorFunc {
	return func(c *ucli.Context, err error, _ bool) error {
		var flags []ucli.Flag
		if c.Command != nil {
			flags = c.Command.Flags
		} else {
			flags = c.App.Flags
		}
		return flagError(command, err, flags)
	}
}

// flagError words err, a flag error from the standard flag package or clientcmd.Args,
// as one line: "flag provided but not defined: --topix; did you mean --topic?".
func flagError(command string, err error, flags []ucli.Flag) error {
	msg := singleDashFlag.ReplaceAllString(err.Error(), "$1 --$2")
	const undefined = "flag provided but not defined: "
	name, ok := strings.CutPrefix(msg, undefined)
	if !ok {
		return fmt.Errorf("%s (see %s --help)", msg, strings.TrimSpace("petrel "+command))
	}
	bare := strings.TrimLeft(name, "-")
	if hint := flagHint(command, bare); hint != "" {
		return fmt.Errorf("%s%s; %s", undefined, dashed(bare), hint)
	}
	var names []string
	for _, f := range flags {
		names = append(names, f.Names()...)
	}
	if s := closest(bare, names); s != "" {
		return fmt.Errorf("%s%s; did you mean %s? (see %s --help)", undefined, dashed(bare), dashed(s), strings.TrimSpace("petrel "+command))
	}
	return fmt.Errorf("%s%s (see %s --help)", undefined, dashed(bare), strings.TrimSpace("petrel "+command))
}

// singleDashFlag finds a long flag name that the flag package wrote with one dash.
var singleDashFlag = regexp.MustCompile(`(flag|argument:) -([A-Za-z0-9][A-Za-z0-9-]+)`)

// dashed is a flag name as it is typed: -b, --topic.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// flagHint answers flags of Kafka's tools that Petrel spells differently.
func flagHint(command, name string) string {
	switch name {
	case "zookeeper":
		return "Petrel has no ZooKeeper: use --bootstrap-server (or -b)"
	case "broker-list", "brokers", "bootstrap-servers", "bootstrap.servers":
		return "did you mean --bootstrap-server (or -b)?"
	case "property", "producer-property", "consumer-property":
		switch command {
		case "consume":
			return "use --print-key, --print-offset, --print-partition, --print-timestamp and --key-separator (see petrel consume --help)"
		case "produce":
			return "use --key-separator SEP to read keys (see petrel produce --help)"
		}
	}
	return ""
}

// groupAction runs for a command group named without a known subcommand: help when
// nothing follows, else one line naming the closest subcommand.
func groupAction(command string) ucli.ActionFunc {
	return func(c *ucli.Context) error {
		if !c.Args().Present() {
			return ucli.ShowSubcommandHelp(c)
		}
		return unknownCommand(c.Args().First(), command, c.Command.Subcommands)
	}
}

// kafkaToolNames are the Kafka and rpk tool names people type, with the petrel command
// that does the same.
var kafkaToolNames = map[string]string{
	"kafka-topics":              "topics",
	"kafka-consumer-groups":     "groups",
	"kafka-share-groups":        "share-groups",
	"kafka-console-producer":    "produce",
	"kafka-console-consumer":    "consume",
	"kafka-configs":             "configs",
	"kafka-get-offsets":         "topics offsets",
	"kafka-acls":                "acls",
	"kafka-leader-election":     "leader-election",
	"kafka-reassign-partitions": "reassign",
	"kafka-log-dirs":            "log-dirs describe",
	"kafka-delete-records":      "delete-records",
	"kafka-transactions":        "transactions",
	"kafka-metadata-quorum":     "cluster describe",
	"kafka-server-start":        "server",
	"kafka-producer-perf-test":  "perf produce",
	"kafka-consumer-perf-test":  "perf consume",
}

// unknownCommand is the one-line error for a command name that does not exist under
// parent ("" for the app).
func unknownCommand(name, parent string, cmds []*ucli.Command) error {
	where := strings.TrimSpace("petrel " + parent)
	if tool, ok := kafkaToolNames[strings.TrimSuffix(name, ".sh")]; ok && parent == "" {
		return fmt.Errorf("unknown command %q: Kafka's %s is petrel %s", name, strings.TrimSuffix(name, ".sh"), tool)
	}
	var names []string
	primary := map[string]string{} // an alias's command name
	for _, cmd := range cmds {
		if cmd.Hidden || cmd.Name == "help" {
			continue
		}
		for _, n := range cmd.Names() {
			names = append(names, n)
			primary[n] = cmd.Name
		}
	}
	if s := closest(name, names); s != "" {
		s = primary[s]
		return fmt.Errorf("unknown command %q for %s; did you mean %q? (see %s --help)", name, where, s, where)
	}
	return fmt.Errorf("unknown command %q for %s (see %s --help)", name, where, where)
}

// closest returns the candidate nearest to name when it is near enough to be a likely
// typo (a small edit distance, or one name a prefix of the other), else "".
func closest(name string, candidates []string) string {
	best, bestDist := "", 1<<30
	for _, c := range candidates {
		d := editDistance(strings.ToLower(name), strings.ToLower(c))
		if d < bestDist || (d == bestDist && absDiff(len(c), len(name)) < absDiff(len(best), len(name))) {
			best, bestDist = c, d
		}
	}
	if best == "" {
		return ""
	}
	limit := max(2, len(name)/3)
	if bestDist <= limit && bestDist < len(name) {
		return best
	}
	for _, c := range candidates {
		if len(name) >= 3 && (strings.HasPrefix(c, name) || strings.HasPrefix(name, c)) {
			return c
		}
	}
	return ""
}

func absDiff(a, b int) int {
	if a > b {
		return a - b
	}
	return b - a
}

// editDistance is the Levenshtein distance between a and b, in bytes (smetrics'
// Wagner-Fischer with unit costs).
func editDistance(a, b string) int { return smetrics.WagnerFischer(a, b, 1, 1, 1) }

// checkRequired replaces urfave/cli's required-flag check (which prints the whole help
// before its error) with a one-line error from the command's Before.
func checkRequired(command string, cmd *ucli.Command) {
	var required []string
	for _, f := range cmd.Flags {
		switch f := f.(type) {
		case *ucli.StringFlag:
			if f.Required {
				f.Required = false
				required = append(required, f.Name)
			}
		case *ucli.IntFlag:
			if f.Required {
				f.Required = false
				required = append(required, f.Name)
			}
		case *ucli.Int64Flag:
			if f.Required {
				f.Required = false
				required = append(required, f.Name)
			}
		case *ucli.StringSliceFlag:
			if f.Required {
				f.Required = false
				required = append(required, f.Name)
			}
		}
	}
	if len(required) == 0 {
		return
	}
	before := cmd.Before
	cmd.Before = func(c *ucli.Context) error {
		var missing []string
		for _, name := range required {
			if !c.IsSet(name) && !trailingFlag(c.Args().Slice(), clientcmd.Flag(c, name)) {
				missing = append(missing, "--"+name)
			}
		}
		switch len(missing) {
		case 0:
		case 1:
			return fmt.Errorf("required flag %s not set (see petrel %s --help)", missing[0], command)
		default:
			return fmt.Errorf("required flags %s not set (see petrel %s --help)", strings.Join(missing, ", "), command)
		}
		if before != nil {
			return before(c)
		}
		return nil
	}
}

// trailingFlag reports whether args (after a positional argument, where urfave/cli
// stops parsing and clientcmd.Args takes over) name f.
func trailingFlag(args []string, f ucli.Flag) bool {
	if f == nil {
		return false
	}
	for _, a := range args {
		if a == "--" {
			return false
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && slices.Contains(f.Names(), name) {
			return true
		}
	}
	return false
}

// appAction runs when no command is named, or an unknown one: --version, help, or one
// line with the closest command.
func appAction(c *ucli.Context) error {
	if c.Bool("version") {
		return printVersion(c)
	}
	if !c.Args().Present() {
		return ucli.ShowAppHelp(c)
	}
	return unknownCommand(c.Args().First(), "", c.App.Commands)
}

// normalizeArgs rewrites Kafka's action flags into petrel's subcommands, so that
// `petrel topics --describe --topic t` (kafka-topics.sh) runs `petrel topics describe
// --topic t`, and `petrel groups --reset-offsets --group g ...` runs `groups
// reset-offsets`. Only a command group followed by no subcommand is rewritten; two
// different actions are an error, as in Kafka's tools.
func normalizeArgs(app *ucli.App, args []string) ([]string, error) {
	if len(args) < 2 || args[len(args)-1] == "--generate-bash-completion" {
		return args, nil
	}
	i := 1
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "-" && args[i] != "--" {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		i++
		if (name == "log-level" || name == "log-format") && !hasValue {
			i++
		}
	}
	if i >= len(args) {
		return args, nil
	}
	group := app.Command(args[i])
	if group == nil || len(group.Subcommands) == 0 {
		return args, nil
	}
	rest := args[i+1:]
	if len(rest) > 0 && group.Command(rest[0]) != nil {
		return args, nil
	}
	// takesValue: name is a flag of the group's subcommands that is never boolean.
	takesValue := func(name string) bool {
		found := false
		for _, sub := range group.Subcommands {
			for _, f := range sub.Flags {
				if slices.Contains(f.Names(), name) {
					if _, isBool := f.(*ucli.BoolFlag); isBool {
						return false
					}
					found = true
				}
			}
		}
		return found
	}
	isAction := func(arg string) bool {
		name, _, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		return strings.HasPrefix(arg, "-") && !hasValue && name != "help" && group.Command(name) != nil
	}
	action, last := "", -1
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if sub := group.Command(name); sub != nil && name != "help" && !hasValue {
			if action != "" && action != sub.Name {
				return nil, fmt.Errorf("give one action to petrel %s, not both --%s and --%s", group.Name, action, sub.Name)
			}
			action, last = sub.Name, j
			continue
		}
		if !hasValue && takesValue(name) && j+1 < len(rest) && !isAction(rest[j+1]) {
			j++
		}
	}
	if action == "" {
		return args, nil
	}
	out := slices.Clone(args[:i+1])
	out = append(out, action)
	for j, a := range rest {
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if j <= last && strings.HasPrefix(a, "-") && name == action && !hasValue {
			continue
		}
		out = append(out, a)
	}
	return out, nil
}

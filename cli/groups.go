package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	ucli "github.com/urfave/cli/v2"
)

// groupsCommand is `petrel groups`: list, describe, delete consumer groups and reset or
// delete their committed offsets, like kafka-consumer-groups.sh. Every subcommand is a
// plain Kafka admin client (kadm), so it works against Apache Kafka too.
func groupsCommand() *ucli.Command {
	return &ucli.Command{
		Name:    "groups",
		Aliases: []string{"group"},
		Usage:   "list, describe and delete consumer groups; reset or delete their offsets",
		Subcommands: []*ucli.Command{
			{
				Name:  "list",
				Usage: "list consumer groups, one per line (with --type or --state: a GROUP [TYPE] [STATE] table)",
				Flags: withOutputFlags(
					&ucli.StringFlag{Name: "state", Usage: "show each group's state, only groups in these comma-separated states (\"all\": every state)"},
					&ucli.StringFlag{Name: "type", Usage: "show each group's type, only groups of these comma-separated types: classic, consumer (\"all\": every type)"},
				),
				Action: runGroupsList,
			},
			{
				Name:      "describe",
				Usage:     "describe consumer groups in kafka-consumer-groups.sh's format: offsets and lag (default), --members or --state",
				ArgsUsage: "GROUP...",
				Flags:     describeViewFlags("offsets and lag", "with --members: also print each member's assignment"),
				Action:    runGroupsDescribe,
			},
			{
				Name:      "delete",
				Usage:     "delete consumer groups that have no members, with their committed offsets",
				ArgsUsage: "GROUP...",
				Flags:     clientcmd.WithFlags(groupFlag("a group to delete (repeatable, with or instead of GROUP...)")),
				Action:    runGroupsDelete,
			},
			{
				Name:      "reset-offsets",
				Usage:     "compute new committed offsets for an inactive group (a dry run unless --execute)",
				ArgsUsage: "GROUP",
				Flags: resetOffsetsFlags("committed offsets", "commit the new offsets",
					&ucli.BoolFlag{Name: "to-current", Usage: "reset to the current committed offset"},
					&ucli.StringFlag{Name: "shift-by", Usage: "move the current committed offset by N (negative: back)"},
				),
				Action: runGroupsResetOffsets,
			},
			{
				Name:      "delete-offsets",
				Usage:     "delete a group's committed offsets for topics it is not subscribed to",
				ArgsUsage: "GROUP",
				Flags: clientcmd.WithFlags(
					groupFlag("the group (instead of GROUP)"),
					&ucli.StringSliceFlag{Name: "topic", Usage: "a topic, or topic:partition,partition,... (repeatable)"},
				),
				Action: runGroupsDeleteOffsets,
			},
		},
	}
}

// describeViewFlags are the flags of kafka-consumer-groups.sh's and
// kafka-share-groups.sh's --describe: the groups, and the view (--offsets, the
// default, showing offsets, --members or --state) with what --verbose adds.
func describeViewFlags(offsets, verbose string) []ucli.Flag {
	return withOutputFlags(
		groupFlag("a group to describe (repeatable, with or instead of GROUP...)"),
		&ucli.BoolFlag{Name: "all-groups", Usage: "describe every group"},
		&ucli.BoolFlag{Name: "offsets", Usage: "describe the group's " + offsets + " (the default view)"},
		&ucli.BoolFlag{Name: "members", Usage: "describe the group's members"},
		&ucli.BoolFlag{Name: "state", Usage: "describe the group's state"},
		&ucli.BoolFlag{Name: "verbose", Usage: verbose},
	)
}

// resetOffsetsFlags are the flags of kafka-consumer-groups.sh's and
// kafka-share-groups.sh's --reset-offsets: the group, the scope (--topic, or
// --all-topics: every topic the group has offsets of), the scenarios both have, the
// tool's own (scenarios), and --dry-run or --execute (what execute does).
func resetOffsetsFlags(offsets, execute string, scenarios ...ucli.Flag) []ucli.Flag {
	return clientcmd.WithFlags(append([]ucli.Flag{
		groupFlag("the group (instead of GROUP)"),
		&ucli.StringSliceFlag{Name: "topic", Usage: "a topic, or topic:partition,partition,... (repeatable)"},
		&ucli.BoolFlag{Name: "all-topics", Usage: "every topic the group has " + offsets + " for"},
		&ucli.BoolFlag{Name: "to-earliest", Usage: "reset to the earliest offset"},
		&ucli.BoolFlag{Name: "to-latest", Usage: "reset to the latest offset"},
		&ucli.StringFlag{Name: "to-offset", Usage: "reset to this offset (kept within the log's earliest and latest)"},
		&ucli.StringFlag{Name: "to-datetime", Usage: "reset to the first offset at or after YYYY-MM-DDTHH:mm:SS.sss[zone] (UTC without a zone)"},
		&ucli.BoolFlag{Name: "dry-run", Usage: "only print the new offsets (the default)"},
		&ucli.BoolFlag{Name: "execute", Usage: execute},
	}, scenarios...)...)
}

// groupFlag is kafka-consumer-groups.sh's --group.
func groupFlag(usage string) ucli.Flag {
	return &ucli.StringSliceFlag{Name: "group", Usage: usage}
}

// groupStates are the classic group states ListGroups filters by, spelled as Kafka
// spells them (the filter is case-insensitive in Kafka's tool).
// Assigning and Reconciling are a consumer group's (KIP-848), as in Kafka 4.
var groupStates = []string{"PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning", "Reconciling"}

// parseGroupTypes turns --type's comma-separated list into ListGroups' type names
// (lower case, as Kafka's tool accepts any case); "all" or an empty list means every
// type (no filter).
func parseGroupTypes(s string) ([]string, error) {
	var out []string
	for _, part := range strings.Split(s, ",") {
		part = strings.ToLower(strings.TrimSpace(part))
		switch part {
		case "", "all":
		case groupTypeClassic, groupTypeConsumer:
			out = append(out, part)
		default:
			return nil, fmt.Errorf("bad --type %q: valid types are classic, consumer", part)
		}
	}
	return out, nil
}

// groupTypeName is a ListGroups group type as Kafka's tool prints it ("Consumer"),
// "Unknown" when the broker does not say (ListGroups before v5).
func groupTypeName(t string) string {
	if t == "" {
		return "Unknown"
	}
	return strings.ToUpper(t[:1]) + t[1:]
}

// parseGroupStates turns --state's comma-separated list into Kafka's spellings; "all"
// or an empty list means every state (no filter).
func parseGroupStates(s string) ([]string, error) {
	var out []string
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" || strings.EqualFold(part, "all") {
			continue
		}
		found := ""
		for _, st := range groupStates {
			if strings.EqualFold(st, part) {
				found = st
			}
		}
		if found == "" {
			return nil, fmt.Errorf("bad --state %q: valid states are %s", part, strings.Join(groupStates, ", "))
		}
		out = append(out, found)
	}
	return out, nil
}

// listedGroup is one group of `groups list -o json`.
type listedGroup struct {
	Group        string `json:"group"`
	State        string `json:"state"` // "" when the broker does not say (ListGroups before v4)
	Type         string `json:"type"`  // "classic", "consumer"; "" when the broker does not say (before v5)
	ProtocolType string `json:"protocol_type"`
	Coordinator  int32  `json:"coordinator"`
}

func runGroupsList(c *ucli.Context) error {
	asJSON, err := parseOutputArgs(c)
	if err != nil {
		return err
	}
	withState, withType := c.IsSet("state"), c.IsSet("type")
	states, err := parseGroupStates(c.String("state"))
	if err != nil {
		return err
	}
	types, err := parseGroupTypes(c.String("type"))
	if err != nil {
		return err
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	listed, err := cl.Admin().ListGroupsByType(ctx, types, states...)
	if err != nil {
		return fmt.Errorf("list groups: %w", cl.Explain(err))
	}
	var out strings.Builder
	var sorted []kadm.ListedGroup
	for _, g := range listed.Sorted() {
		// A broker before ListGroups v5 ignores the types filter.
		if len(types) == 0 || g.GroupType == "" || slices.Contains(types, g.GroupType) {
			sorted = append(sorted, g)
		}
	}
	if asJSON {
		groups := []listedGroup{}
		for _, g := range sorted {
			groups = append(groups, listedGroup{Group: g.Group, State: g.State, Type: g.GroupType, ProtocolType: g.ProtocolType,
				Coordinator: g.Coordinator})
		}
		return writeJSON(c.App.Writer, struct {
			Groups []listedGroup `json:"groups"`
		}{groups})
	}
	if !withState && !withType {
		for _, g := range sorted {
			out.WriteString(g.Group + "\n")
		}
	} else {
		writeGroupList(&out, sorted, withType, withState)
	}
	_, err = io.WriteString(c.App.Writer, out.String())
	return err
}

func runGroupsDelete(c *ucli.Context) error {
	groups, err := namesArgs(c, "group")
	if err != nil {
		return err
	}
	if len(groups) == 0 {
		return errors.New("groups delete needs at least one GROUP (or --group)")
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	resps, err := cl.Admin().DeleteGroups(ctx, groups...)
	if err != nil && len(resps) == 0 {
		return fmt.Errorf("delete groups: %w", cl.Explain(err))
	}
	var deleted, failures []string
	for _, g := range groups {
		r, ok := resps[g]
		switch {
		case !ok:
			failures = append(failures, fmt.Sprintf("Group '%s' could not be deleted due to: no answer from its coordinator", g))
		case r.Err != nil:
			failures = append(failures, fmt.Sprintf("Group '%s' could not be deleted due to: %s", g, describeKafkaError(r.Err)))
		default:
			deleted = append(deleted, "'"+g+"'")
		}
	}
	// kafka-consumer-groups.sh --delete's wording.
	if len(deleted) > 0 {
		fmt.Fprintf(c.App.Writer, "Deletion of requested consumer groups (%s) was successful.\n", strings.Join(deleted, ", "))
	}
	if len(failures) > 0 {
		for _, f := range failures {
			fmt.Fprintln(c.App.ErrWriter, "* "+f)
		}
		return fmt.Errorf("deletion of some consumer groups failed: %s", strings.Join(failures, "; "))
	}
	return nil
}

// writeGroupList prints Kafka 4's kafka-consumer-groups.sh --list --type/--state
// table: GROUP padded to its longest name (at least 15) plus 10, then TYPE and STATE
// each padded to 20.
func writeGroupList(w *strings.Builder, groups []kadm.ListedGroup, withType, withState bool) {
	width := 15
	for _, g := range groups {
		width = max(width, len(g.Group))
	}
	width += 10
	line := func(group, typ, state string) {
		fmt.Fprintf(w, "%-*s", width, group)
		if withType {
			fmt.Fprintf(w, " %-20s", typ)
		}
		if withState {
			fmt.Fprintf(w, " %-20s", state)
		}
		w.WriteByte('\n')
	}
	line("GROUP", "TYPE", "STATE")
	for _, g := range groups {
		line(g.Group, groupTypeName(g.GroupType), g.State)
	}
}

// describeKafkaError names a Kafka error code with its description ("NON_EMPTY_GROUP:
// The group is not empty."); other errors print as they are.
func describeKafkaError(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message + ": " + ke.Description
	}
	return err.Error()
}

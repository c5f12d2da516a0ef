package cli

// `petrel share-groups`: list, describe and delete KIP-932 share groups and reset or
// delete their share-partition start offsets, in the shape of Kafka 4.2's
// kafka-share-groups.sh (ShareGroupCommand): the same actions, options, columns and
// messages. Every subcommand is a plain Kafka admin client (kadm), so it works
// against Apache Kafka too.

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

// shareGroupType is ListGroups' type of a share group.
const shareGroupType = "share"

// shareGroupStates are the states of a share group (Kafka's
// GroupState.groupStatesForType(SHARE)), as Kafka spells them.
var shareGroupStates = []string{"Dead", "Empty", "Stable"}

// shareGroupsCommand is `petrel share-groups`, kafka-share-groups.sh's actions as subcommands.
func shareGroupsCommand() *ucli.Command {
	topicsFlag := &ucli.StringSliceFlag{Name: "topic", Usage: "a topic, or topic:partition,partition,... (repeatable)"}
	return &ucli.Command{
		Name:    "share-groups",
		Aliases: []string{"share-group"},
		Usage:   "list, describe and delete share groups (KIP-932); reset or delete their start offsets",
		Subcommands: []*ucli.Command{
			{
				Name:   "list",
				Usage:  "list share groups, one per line (with --state: a GROUP STATE table)",
				Flags:  withOutputFlags(&ucli.StringFlag{Name: "state", Usage: "show each group's state, only groups in these comma-separated states: Empty, Stable, Dead (\"all\": every state)"}),
				Action: runShareGroupsList,
			},
			{
				Name:      "describe",
				Usage:     "describe share groups in kafka-share-groups.sh's format: start offsets and lag (default), --members or --state",
				ArgsUsage: "GROUP...",
				Flags:     describeViewFlags("start offsets and lag", "more columns: leader epochs, member epochs, group and assignment epochs"),
				Action:    runShareGroupsDescribe,
			},
			{
				Name:      "reset-offsets",
				Usage:     "compute new start offsets for an empty share group (a dry run unless --execute)",
				ArgsUsage: "GROUP",
				Flags: resetOffsetsFlags("start offsets", "set the new start offsets",
					&ucli.StringFlag{Name: "by-duration", Usage: "reset to the first offset at or after now minus an ISO-8601 duration (PnDTnHnMnS)"},
				),
				Action: runShareGroupsResetOffsets,
			},
			{
				Name:      "delete",
				Usage:     "delete share groups that have no members (with --delete-offsets: the group's state for --topic topics)",
				ArgsUsage: "GROUP...",
				Flags: clientcmd.WithFlags(
					groupFlag("a group (repeatable, with or instead of GROUP...)"),
					&ucli.BoolFlag{Name: "delete-offsets", Usage: "delete the share group's start offsets of the --topic topics instead of the group"},
					topicsFlag,
				),
				Action: runShareGroupsDelete,
			},
			{
				Name:      "delete-offsets",
				Usage:     "delete an empty share group's start offsets of the --topic topics (delete --delete-offsets)",
				ArgsUsage: "GROUP",
				Flags:     clientcmd.WithFlags(groupFlag("the group (instead of GROUP)"), topicsFlag),
				Action:    runShareGroupsDeleteOffsets,
			},
		},
	}
}

// parseShareGroupStates turns list --state's comma-separated list into Kafka's
// spellings, with Kafka's message for a state no share group has; "all" or an empty
// list means every state.
func parseShareGroupStates(s string) ([]string, error) {
	var out []string
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" || strings.EqualFold(part, "all") {
			continue
		}
		i := slices.IndexFunc(shareGroupStates, func(st string) bool { return strings.EqualFold(st, part) })
		if i < 0 {
			return nil, fmt.Errorf("invalid state list '%s'. Valid states are: %s", s, strings.Join(shareGroupStates, ", "))
		}
		out = append(out, shareGroupStates[i])
	}
	return out, nil
}

func runShareGroupsList(c *ucli.Context) error {
	asJSON, err := parseOutputArgs(c)
	if err != nil {
		return err
	}
	states, err := parseShareGroupStates(c.String("state"))
	if err != nil {
		return err
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	listed, err := cl.Admin().ListGroupsByType(ctx, []string{shareGroupType}, states...)
	if err != nil {
		return fmt.Errorf("list share groups: %w", cl.Explain(err))
	}
	var groups []kadm.ListedGroup
	for _, g := range listed.Sorted() {
		if g.GroupType == shareGroupType { // a broker before ListGroups v5 ignores the filter
			groups = append(groups, g)
		}
	}
	if asJSON {
		out := []listedShareGroup{}
		for _, g := range groups {
			out = append(out, listedShareGroup{Group: g.Group, State: g.State, Coordinator: g.Coordinator})
		}
		return writeJSON(c.App.Writer, struct {
			Groups []listedShareGroup `json:"groups"`
		}{out})
	}
	_, err = io.WriteString(c.App.Writer, formatShareGroupList(groups, c.IsSet("state")))
	return err
}

// listedShareGroup is one group of `share-groups list -o json`.
type listedShareGroup struct {
	Group       string `json:"group"`
	State       string `json:"state"`
	Coordinator int32  `json:"coordinator"`
}

// formatShareGroupList is kafka-share-groups.sh --list: the ids one per line, or with
// --state a GROUP STATE table, GROUP as wide as the longest id (at least 15).
func formatShareGroupList(groups []kadm.ListedGroup, withState bool) string {
	var out strings.Builder
	if !withState {
		for _, g := range groups {
			out.WriteString(g.Group + "\n")
		}
		return out.String()
	}
	t := table{columns: []column{{"GROUP", 15, true}, {"STATE", 0, false}}}
	for _, g := range groups {
		t.add(g.Group, orDash(g.State))
	}
	t.write(&out)
	return out.String()
}

func runShareGroupsDelete(c *ucli.Context) error {
	if c.Bool("delete-offsets") {
		return runShareGroupsDeleteOffsets(c)
	}
	groups, err := namesArgs(c, "group")
	if err != nil {
		return err
	}
	if len(groups) == 0 {
		return errors.New("share-groups delete needs at least one GROUP (or --group)")
	}
	if len(c.StringSlice("topic")) > 0 {
		return errors.New("--topic deletes offsets: it needs --delete-offsets")
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	adm := cl.Admin()
	// As Kafka's tool: only a listed share group that is empty is sent for deletion.
	listed, err := adm.ListGroupsByType(ctx, []string{shareGroupType})
	if err != nil {
		return fmt.Errorf("list share groups: %w", cl.Explain(err))
	}
	failures := map[string]string{}
	var toDelete []string
	for _, g := range groups {
		l, ok := listed[g]
		switch {
		case !ok || l.GroupType != shareGroupType:
			failures[g] = fmt.Sprintf("Group '%s' is not a share group.", g)
		case l.State == "Dead":
			failures[g] = fmt.Sprintf("Share group '%s' group state is DEAD.", g)
		case l.State != "" && l.State != "Empty":
			failures[g] = fmt.Sprintf("Share group '%s' is not EMPTY.", g)
		default:
			toDelete = append(toDelete, g)
		}
	}
	if len(toDelete) > 0 {
		resps, err := adm.DeleteGroups(ctx, toDelete...)
		if err != nil && len(resps) == 0 {
			return fmt.Errorf("delete share groups: %w", cl.Explain(err))
		}
		for _, g := range toDelete {
			if r, ok := resps[g]; !ok {
				failures[g] = "no answer from its coordinator"
			} else if r.Err != nil {
				failures[g] = describeKafkaError(r.Err)
			}
		}
	}
	return writeShareGroupsDeleted(c, groups, failures)
}

// writeShareGroupsDeleted prints kafka-share-groups.sh --delete's outcome and fails
// when a group could not be deleted.
func writeShareGroupsDeleted(c *ucli.Context, groups []string, failures map[string]string) error {
	quoted := func(gs []string) string {
		out := make([]string, len(gs))
		for i, g := range gs {
			out[i] = "'" + g + "'"
		}
		return strings.Join(out, ", ")
	}
	var deleted, failed []string
	for _, g := range groups {
		if _, bad := failures[g]; bad {
			failed = append(failed, g)
		} else {
			deleted = append(deleted, g)
		}
	}
	if len(failed) == 0 {
		fmt.Fprintf(c.App.Writer, "Deletion of requested share groups (%s) was successful.\n", quoted(deleted))
		return nil
	}
	var lines []string
	for _, g := range failed {
		lines = append(lines, fmt.Sprintf("Group '%s' could not be deleted due to: %s", g, failures[g]))
		fmt.Fprintln(c.App.ErrWriter, "* "+lines[len(lines)-1])
	}
	if len(deleted) > 0 {
		fmt.Fprintf(c.App.Writer, "These share groups were deleted successfully: %s\n", quoted(deleted))
	}
	return fmt.Errorf("deletion of some share groups failed: %s", strings.Join(lines, "; "))
}

// shareGroupError is a share group's error as kafka-share-groups.sh words it.
func shareGroupError(group string, err error) error {
	switch {
	case errors.Is(err, kerr.GroupIDNotFound):
		return fmt.Errorf("share group '%s' does not exist", group)
	case errors.Is(err, kerr.NonEmptyGroup):
		return fmt.Errorf("share group '%s' is not empty", group)
	}
	return fmt.Errorf("share group '%s': %s", group, describeKafkaError(err))
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kadm"
	ucli "github.com/urfave/cli/v2"
)

// Group states as DescribeGroups names them.
const (
	stateDead                = "Dead"
	stateEmpty               = "Empty"
	statePreparingRebalance  = "PreparingRebalance"
	stateCompletingRebalance = "CompletingRebalance"
)

func runGroupsDescribe(c *ucli.Context) error {
	groups, err := namesArgs(c, "group")
	if err != nil {
		return err
	}
	asJSON, err := jsonOutput(c)
	if err != nil {
		return err
	}
	all := c.Bool("all-groups")
	switch {
	case len(groups) == 0 && !all:
		return errors.New("groups describe needs at least one GROUP (or --group, or --all-groups)")
	case len(groups) > 0 && all:
		return errors.New("--all-groups cannot be used with named groups")
	case c.Bool("members") && c.Bool("state"):
		return errors.New("--members and --state cannot be used together")
	case c.Bool("offsets") && (c.Bool("members") || c.Bool("state")):
		return errors.New("--offsets cannot be used with --members or --state")
	case c.Bool("verbose") && !c.Bool("members") && !c.Bool("state"):
		return errors.New("--verbose needs --members or --state")
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	adm := cl.Admin()
	if all {
		listed, err := adm.ListGroups(ctx)
		if err != nil {
			return fmt.Errorf("list groups: %w", cl.Explain(err))
		}
		groups = listed.Groups()
		sort.Strings(groups)
		if len(groups) == 0 {
			if asJSON {
				return writeJSON(c.App.Writer, struct {
					Groups []describedGroupJSON `json:"groups"`
				}{[]describedGroupJSON{}})
			}
			return nil
		}
	}
	described, err := describeGroupViews(ctx, adm, groups)
	if err != nil {
		return fmt.Errorf("describe groups: %w", cl.Explain(err))
	}
	var out strings.Builder
	var missing []string
	jsonGroups := []describedGroupJSON{}
	for _, name := range groups {
		d, ok := described[name]
		switch {
		case !ok:
			return fmt.Errorf("describe group %q: no answer from its coordinator", name)
		case d.err != nil:
			return d.describeError()
		case d.state == stateDead:
			// Kafka describes a group it does not know as Dead.
			fmt.Fprintf(c.App.ErrWriter, "Error: Consumer group '%s' does not exist.\n", name)
			missing = append(missing, strconv.Quote(name))
			continue
		}
		switch {
		case asJSON:
			rows, err := groupOffsetRows(ctx, adm, d)
			if err != nil {
				return cl.Explain(err)
			}
			jsonGroups = append(jsonGroups, groupJSON(d, rows))
		case c.Bool("state"):
			writeGroupState(&out, d, c.Bool("verbose"))
		case c.Bool("members") && d.consumer():
			warnGroupState(c, d)
			writeConsumerGroupMembers(&out, d, c.Bool("verbose"))
		case c.Bool("members"):
			warnGroupState(c, d)
			writeGroupMembers(&out, d, c.Bool("verbose"))
		default:
			warnGroupState(c, d)
			rows, err := groupOffsetRows(ctx, adm, d)
			if err != nil {
				return cl.Explain(err)
			}
			writeGroupOffsets(&out, name, rows)
		}
	}
	if asJSON {
		if err := writeJSON(c.App.Writer, struct {
			Groups []describedGroupJSON `json:"groups"`
		}{jsonGroups}); err != nil {
			return err
		}
	} else if _, err := io.WriteString(c.App.Writer, out.String()); err != nil {
		return err
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("consumer group %s does not exist", missing[0])
	default:
		return fmt.Errorf("consumer groups %s do not exist", strings.Join(missing, ", "))
	}
}

// describedGroupJSON is one group of `groups describe -o json`: its state, members and
// offsets together, whatever view the text would show.
type describedGroupJSON struct {
	Group        string `json:"group"`
	Type         string `json:"type"` // "classic" or "consumer" (KIP-848)
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	// Protocol is the assignment strategy: a consumer group's server-side assignor.
	Protocol string `json:"protocol"`
	// GroupEpoch and AssignmentEpoch are a consumer group's; null for a classic group.
	GroupEpoch      *int32            `json:"group_epoch"`
	AssignmentEpoch *int32            `json:"assignment_epoch"`
	Coordinator     groupCoordinator  `json:"coordinator"`
	Members         []groupMemberJSON `json:"members"`
	Offsets         []groupOffsetJSON `json:"offsets"`
	TotalLag        int64             `json:"total_lag"` // summed over the partitions with a known lag
}

type groupCoordinator struct {
	ID   int32  `json:"id"`
	Host string `json:"host"`
	Port int32  `json:"port"`
}

type groupMemberJSON struct {
	MemberID   string             `json:"member_id"`
	InstanceID *string            `json:"instance_id"`
	ClientID   string             `json:"client_id"`
	Host       string             `json:"host"`
	Assignment map[string][]int32 `json:"assignment"` // topic -> partitions
	// MemberEpoch and TargetAssignment are a consumer group member's; null in a
	// classic group.
	MemberEpoch      *int32             `json:"member_epoch"`
	TargetAssignment map[string][]int32 `json:"target_assignment"`
}

// groupOffsetJSON is one partition of a group; null offsets are unknown (no commit, or
// the log end could not be listed).
type groupOffsetJSON struct {
	Topic         string  `json:"topic"`
	Partition     int32   `json:"partition"`
	CurrentOffset *int64  `json:"current_offset"`
	LogEndOffset  *int64  `json:"log_end_offset"`
	Lag           *int64  `json:"lag"`
	MemberID      *string `json:"member_id"`
}

func groupJSON(d groupView, rows []offsetRow) describedGroupJSON {
	g := describedGroupJSON{Group: d.group, Type: d.groupType, State: d.state, ProtocolType: d.protocolType, Protocol: d.protocol,
		Coordinator: groupCoordinator{ID: d.coordinator.NodeID, Host: d.coordinator.Host, Port: d.coordinator.Port},
		Members:     []groupMemberJSON{}, Offsets: []groupOffsetJSON{}}
	if d.consumer() {
		g.GroupEpoch, g.AssignmentEpoch = &d.groupEpoch, &d.assignmentEpoch
	}
	for _, m := range d.members {
		assigned := m.assignment
		for t := range assigned {
			sort.Slice(assigned[t], func(a, b int) bool { return assigned[t][a] < assigned[t][b] })
		}
		gm := groupMemberJSON{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, Host: m.host, Assignment: assigned}
		if d.consumer() {
			epoch := m.epoch
			gm.MemberEpoch, gm.TargetAssignment = &epoch, m.target
		}
		g.Members = append(g.Members, gm)
	}
	known := func(o int64) *int64 {
		if o < 0 {
			return nil
		}
		return &o
	}
	for _, r := range rows {
		o := groupOffsetJSON{Topic: r.topic, Partition: r.partition, CurrentOffset: known(r.current), LogEndOffset: known(r.logEnd)}
		if r.current >= 0 && r.logEnd >= 0 {
			lag := max(r.logEnd-r.current, 0)
			o.Lag = &lag
			g.TotalLag += lag
		}
		if r.member != nil {
			id := r.member.id
			o.MemberID = &id
		}
		g.Offsets = append(g.Offsets, o)
	}
	return g
}

// warnGroupState prints kafka-consumer-groups.sh's notes about an empty or rebalancing
// group on the error stream.
func warnGroupState(c *ucli.Context, d groupView) {
	switch d.state {
	case stateEmpty:
		fmt.Fprintf(c.App.ErrWriter, "\nConsumer group '%s' has no active members.\n", d.group)
	case statePreparingRebalance, stateCompletingRebalance, stateAssigning, stateReconciling:
		fmt.Fprintf(c.App.ErrWriter, "\nWarning: Consumer group '%s' is rebalancing.\n", d.group)
	}
}

// offsetRow is one line of the offsets view: a partition the group has a committed
// offset for or a member is assigned.
type offsetRow struct {
	topic              string
	partition          int32
	current, logEnd    int64 // -1: none
	member             *memberView
	currentErr, endErr error
}

// memberAssignment decodes a member's consumer-protocol assignment; other protocols
// (connect) carry none that the tool can show.
func memberAssignment(m kadm.DescribedGroupMember) map[string][]int32 {
	out := map[string][]int32{}
	if a, ok := m.Assigned.AsConsumer(); ok {
		for _, t := range a.Topics {
			out[t.Topic] = append(out[t.Topic], t.Partitions...)
		}
	}
	return out
}

// groupOffsetRows gathers, for every partition assigned to a member or with a
// committed offset, the committed offset, the log end offset (the high watermark, as
// Kafka's tool lists it) and the member, sorted by topic and partition.
func groupOffsetRows(ctx context.Context, adm *kadm.Client, d groupView) ([]offsetRow, error) {
	committed, err := adm.FetchOffsets(ctx, d.group)
	if err != nil {
		return nil, fmt.Errorf("fetch offsets of group %q: %w", d.group, err)
	}
	rows := map[string]map[int32]*offsetRow{}
	row := func(topic string, p int32) *offsetRow {
		if rows[topic] == nil {
			rows[topic] = map[int32]*offsetRow{}
		}
		r := rows[topic][p]
		if r == nil {
			r = &offsetRow{topic: topic, partition: p, current: -1, logEnd: -1}
			rows[topic][p] = r
		}
		return r
	}
	for i := range d.members {
		for topic, ps := range d.members[i].assignment {
			for _, p := range ps {
				row(topic, p).member = &d.members[i]
			}
		}
	}
	committed.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil {
			row(o.Topic, o.Partition).currentErr = o.Err
			return
		}
		if o.At >= 0 {
			row(o.Topic, o.Partition).current = o.At
		}
	})
	topics := make([]string, 0, len(rows))
	for t := range rows {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	if len(topics) > 0 {
		ends, err := adm.ListEndOffsets(ctx, topics...)
		if err != nil && len(ends) == 0 {
			return nil, fmt.Errorf("list end offsets: %w", err)
		}
		for t, ps := range rows {
			for p, r := range ps {
				if e, ok := ends.Lookup(t, p); ok && e.Err == nil {
					r.logEnd = e.Offset
				} else if ok {
					r.endErr = e.Err
				}
			}
		}
	}
	var out []offsetRow
	for _, t := range topics {
		ps := make([]int32, 0, len(rows[t]))
		for p := range rows[t] {
			ps = append(ps, p)
		}
		sort.Slice(ps, func(a, b int) bool { return ps[a] < ps[b] })
		for _, p := range ps {
			out = append(out, *rows[t][p])
		}
	}
	return out, nil
}

// writeGroupOffsets prints kafka-consumer-groups.sh --describe's offsets view.
func writeGroupOffsets(w *strings.Builder, group string, rows []offsetRow) {
	t := table{columns: []column{
		{"GROUP", 15, true}, {"TOPIC", 15, true}, {"PARTITION", 10, false},
		{"CURRENT-OFFSET", 15, false}, {"LOG-END-OFFSET", 15, false}, {"LAG", 15, false},
		{"CONSUMER-ID", 15, true}, {"HOST", 15, true}, {"CLIENT-ID", 0, false},
	}}
	for _, r := range rows {
		lag := "-"
		if r.current >= 0 && r.logEnd >= 0 {
			lag = strconv.FormatInt(max(r.logEnd-r.current, 0), 10)
		}
		consumer, host, client := "-", "-", "-"
		if r.member != nil {
			consumer, host, client = orDash(r.member.id), orDash(r.member.host), orDash(r.member.clientID)
		}
		t.add(group, r.topic, strconv.Itoa(int(r.partition)), offsetOrDash(r.current), offsetOrDash(r.logEnd), lag, consumer, host, client)
	}
	w.WriteByte('\n')
	t.write(w)
}

// writeGroupMembers prints kafka-consumer-groups.sh --describe --members [--verbose].
func writeGroupMembers(w *strings.Builder, d groupView, verbose bool) {
	columns := []column{
		{"GROUP", 15, true}, {"CONSUMER-ID", 15, true}, {"GROUP-INSTANCE-ID", 17, true},
		{"HOST", 15, true}, {"CLIENT-ID", 15, true}, {"#PARTITIONS", 15, false},
	}
	if verbose {
		columns = append(columns, column{"ASSIGNMENT", 0, false})
	}
	t := table{columns: columns}
	for _, m := range d.members {
		cells := []string{d.group, orDash(m.id), instanceOrDash(m.instanceID), orDash(m.host), orDash(m.clientID),
			strconv.Itoa(countPartitions(m.assignment))}
		if verbose {
			cells = append(cells, formatAssignment(m.assignment))
		}
		t.add(cells...)
	}
	w.WriteByte('\n')
	t.write(w)
}

// writeGroupState prints kafka-consumer-groups.sh --describe --state [--verbose]:
// verbose adds Kafka 4's GROUP-EPOCH and TARGET-ASSIGNMENT-EPOCH ("-" for a classic
// group).
func writeGroupState(w *strings.Builder, d groupView, verbose bool) {
	coordinator := fmt.Sprintf("%s:%d (%d)", d.coordinator.Host, d.coordinator.Port, d.coordinator.NodeID)
	columns := []column{{"GROUP", 15, true}, {"COORDINATOR (ID)", 25, true}, {"ASSIGNMENT-STRATEGY", 20, false}, {"STATE", 20, false}}
	cells := []string{d.group, coordinator, orDash(d.protocol), d.state}
	if verbose {
		columns = append(columns, column{"GROUP-EPOCH", 15, false}, column{"TARGET-ASSIGNMENT-EPOCH", 25, false})
		cells = append(cells, epochOrDash(d.groupEpoch), epochOrDash(d.assignmentEpoch))
	}
	t := table{columns: append(columns, column{"#MEMBERS", 0, false})}
	t.add(append(cells, strconv.Itoa(len(d.members)))...)
	w.WriteByte('\n')
	t.write(w)
}

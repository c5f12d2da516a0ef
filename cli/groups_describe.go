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
	"github.com/twmb/franz-go/pkg/kerr"
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
	case c.Bool("verbose") && !c.Bool("members"):
		return errors.New("--verbose needs --members")
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
	described, err := adm.DescribeGroups(ctx, groups...)
	if err != nil && len(described) == 0 {
		return fmt.Errorf("describe groups: %w", cl.Explain(err))
	}
	var out strings.Builder
	var missing []string
	jsonGroups := []describedGroupJSON{}
	for _, name := range groups {
		d, ok := described[name]
		switch {
		case !ok:
			return fmt.Errorf("describe group %q: no answer from its coordinator: %w", name, cl.Explain(err))
		case d.Err != nil && !errors.Is(d.Err, kerr.GroupIDNotFound):
			return fmt.Errorf("describe group %q: %w", name, kafkaError(d.Err, d.ErrMessage))
		case d.State == stateDead:
			// Kafka describes a group it does not know as Dead (from DescribeGroups v6
			// with GROUP_ID_NOT_FOUND).
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
			writeGroupState(&out, d)
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
	Group        string            `json:"group"`
	State        string            `json:"state"`
	ProtocolType string            `json:"protocol_type"`
	Protocol     string            `json:"protocol"` // the assignment strategy
	Coordinator  groupCoordinator  `json:"coordinator"`
	Members      []groupMemberJSON `json:"members"`
	Offsets      []groupOffsetJSON `json:"offsets"`
	TotalLag     int64             `json:"total_lag"` // summed over the partitions with a known lag
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

func groupJSON(d kadm.DescribedGroup, rows []offsetRow) describedGroupJSON {
	g := describedGroupJSON{Group: d.Group, State: d.State, ProtocolType: d.ProtocolType, Protocol: d.Protocol,
		Coordinator: groupCoordinator{ID: d.Coordinator.NodeID, Host: d.Coordinator.Host, Port: d.Coordinator.Port},
		Members:     []groupMemberJSON{}, Offsets: []groupOffsetJSON{}}
	for _, m := range d.Members {
		assigned := memberAssignment(m)
		for t := range assigned {
			sort.Slice(assigned[t], func(a, b int) bool { return assigned[t][a] < assigned[t][b] })
		}
		g.Members = append(g.Members, groupMemberJSON{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID,
			Host: m.ClientHost, Assignment: assigned})
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
			id := r.member.MemberID
			o.MemberID = &id
		}
		g.Offsets = append(g.Offsets, o)
	}
	return g
}

// warnGroupState prints kafka-consumer-groups.sh's notes about an empty or rebalancing
// group on the error stream.
func warnGroupState(c *ucli.Context, d kadm.DescribedGroup) {
	switch d.State {
	case stateEmpty:
		fmt.Fprintf(c.App.ErrWriter, "\nConsumer group '%s' has no active members.\n", d.Group)
	case statePreparingRebalance, stateCompletingRebalance:
		fmt.Fprintf(c.App.ErrWriter, "\nWarning: Consumer group '%s' is rebalancing.\n", d.Group)
	}
}

// offsetRow is one line of the offsets view: a partition the group has a committed
// offset for or a member is assigned.
type offsetRow struct {
	topic              string
	partition          int32
	current, logEnd    int64 // -1: none
	member             *kadm.DescribedGroupMember
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
func groupOffsetRows(ctx context.Context, adm *kadm.Client, d kadm.DescribedGroup) ([]offsetRow, error) {
	committed, err := adm.FetchOffsets(ctx, d.Group)
	if err != nil {
		return nil, fmt.Errorf("fetch offsets of group %q: %w", d.Group, err)
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
	for i := range d.Members {
		for topic, ps := range memberAssignment(d.Members[i]) {
			for _, p := range ps {
				row(topic, p).member = &d.Members[i]
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
			consumer, host, client = orDash(r.member.MemberID), orDash(r.member.ClientHost), orDash(r.member.ClientID)
		}
		t.add(group, r.topic, strconv.Itoa(int(r.partition)), offsetOrDash(r.current), offsetOrDash(r.logEnd), lag, consumer, host, client)
	}
	w.WriteByte('\n')
	t.write(w)
}

// writeGroupMembers prints kafka-consumer-groups.sh --describe --members [--verbose].
func writeGroupMembers(w *strings.Builder, d kadm.DescribedGroup, verbose bool) {
	columns := []column{
		{"GROUP", 15, true}, {"CONSUMER-ID", 15, true}, {"GROUP-INSTANCE-ID", 17, true},
		{"HOST", 15, true}, {"CLIENT-ID", 15, true}, {"#PARTITIONS", 15, false},
	}
	if verbose {
		columns = append(columns, column{"ASSIGNMENT", 0, false})
	}
	t := table{columns: columns}
	for _, m := range d.Members {
		assigned := memberAssignment(m)
		n := 0
		for _, ps := range assigned {
			n += len(ps)
		}
		instance := "-"
		if m.InstanceID != nil {
			instance = orDash(*m.InstanceID)
		}
		cells := []string{d.Group, orDash(m.MemberID), instance, orDash(m.ClientHost), orDash(m.ClientID), strconv.Itoa(n)}
		if verbose {
			cells = append(cells, formatAssignment(assigned))
		}
		t.add(cells...)
	}
	w.WriteByte('\n')
	t.write(w)
}

// writeGroupState prints kafka-consumer-groups.sh --describe --state.
func writeGroupState(w *strings.Builder, d kadm.DescribedGroup) {
	coordinator := fmt.Sprintf("%s:%d (%d)", d.Coordinator.Host, d.Coordinator.Port, d.Coordinator.NodeID)
	t := table{columns: []column{
		{"GROUP", 15, true}, {"COORDINATOR (ID)", 25, true}, {"ASSIGNMENT-STRATEGY", 20, false},
		{"STATE", 20, false}, {"#MEMBERS", 0, false},
	}}
	t.add(d.Group, coordinator, orDash(d.Protocol), d.State, strconv.Itoa(len(d.Members)))
	w.WriteByte('\n')
	t.write(w)
}

package cli

// `petrel share-groups describe`: kafka-share-groups.sh --describe's three views of a
// share group — start offsets and lag (DescribeShareGroupOffsets, the default),
// members and state (ShareGroupDescribe) — with its columns and messages.

import (
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

func runShareGroupsDescribe(c *ucli.Context) error {
	groups, err := namesArgs(c, "group")
	if err != nil {
		return err
	}
	asJSON, err := jsonOutput(c)
	if err != nil {
		return err
	}
	chosen := 0
	for _, v := range []string{"offsets", "members", "state"} {
		if c.Bool(v) {
			chosen++
		}
	}
	if chosen > 1 {
		return errors.New("describe takes only one of --offsets, --members, --state")
	}
	if (len(groups) == 0) == !c.Bool("all-groups") {
		return errors.New("share-groups describe needs GROUP (or --group) or --all-groups, not both")
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	adm := cl.Admin()
	if c.Bool("all-groups") {
		listed, err := adm.ListGroupsByType(ctx, []string{shareGroupType})
		if err != nil {
			return fmt.Errorf("list share groups: %w", cl.Explain(err))
		}
		for _, g := range listed.Sorted() {
			if g.GroupType == shareGroupType {
				groups = append(groups, g.Group)
			}
		}
	}
	sort.Strings(groups)
	verbose := c.Bool("verbose")
	var out strings.Builder
	var errs []error
	var views []describedShareGroup
	if c.Bool("members") || c.Bool("state") {
		described, err := adm.DescribeShareGroups(ctx, groups...)
		if err != nil && len(described) == 0 {
			return fmt.Errorf("describe share groups: %w", cl.Explain(err))
		}
		for _, g := range groups {
			d, ok := described[g]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("share group '%s': no answer from its coordinator", g))
			case d.Err != nil:
				errs = append(errs, shareGroupError(g, d.Err))
			case d.GroupState == "Dead":
				errs = append(errs, fmt.Errorf("share group '%s' does not exist", g))
			case asJSON:
				views = append(views, shareGroupView(d))
			case c.Bool("state"):
				writeShareGroupState(&out, d, verbose)
			case len(d.Members) == 0:
				fmt.Fprintf(c.App.ErrWriter, "\nShare group '%s' has no active members.\n", g)
			default:
				writeShareGroupMembers(&out, d, verbose)
			}
		}
	} else {
		described, err := adm.DescribeShareGroupOffsets(ctx, groups...)
		if err != nil && len(described) == 0 {
			return fmt.Errorf("describe share group offsets: %w", cl.Explain(err))
		}
		for _, g := range groups {
			d, ok := described[g]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("share group '%s': no answer from its coordinator", g))
			case d.Err != nil:
				errs = append(errs, shareGroupError(g, d.Err))
			case asJSON:
				views = append(views, describedShareGroup{Group: g, Offsets: shareOffsetsView(d.Offsets)})
			default:
				writeShareGroupOffsets(&out, g, d.Offsets, verbose)
			}
		}
	}
	if asJSON {
		if views == nil {
			views = []describedShareGroup{}
		}
		if err := writeJSON(c.App.Writer, struct {
			Groups []describedShareGroup `json:"groups"`
		}{views}); err != nil {
			return err
		}
		return errors.Join(errs...)
	}
	if _, err := io.WriteString(c.App.Writer, out.String()); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// writeShareGroupOffsets prints one group's start offsets as kafka-share-groups.sh
// --describe [--offsets] does: GROUP, TOPIC, PARTITION, [LEADER-EPOCH,] START-OFFSET,
// LAG, by topic then partition; unknown values "-".
func writeShareGroupOffsets(w *strings.Builder, group string, offsets kadm.ShareOffsets, verbose bool) {
	cols := []column{{"GROUP", 15, true}, {"TOPIC", 15, true}, {"PARTITION", 10, false}}
	if verbose {
		cols = append(cols, column{"LEADER-EPOCH", 13, false})
	}
	t := table{columns: append(cols, column{"START-OFFSET", 13, false}, column{"LAG", 0, false})}
	topics := make([]string, 0, len(offsets))
	for topic := range offsets {
		topics = append(topics, topic)
	}
	sort.Strings(topics)
	for _, topic := range topics {
		ps := make([]int32, 0, len(offsets[topic]))
		for p := range offsets[topic] {
			ps = append(ps, p)
		}
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		for _, p := range ps {
			o := offsets[topic][p]
			row := []string{group, topic, strconv.Itoa(int(p))}
			if verbose {
				row = append(row, offsetOrDash(int64(o.LeaderEpoch)))
			}
			start, lag := o.StartOffset, o.Lag
			if o.Err != nil {
				start, lag = -1, -1
			}
			t.add(append(row, offsetOrDash(start), offsetOrDash(lag))...)
		}
	}
	w.WriteByte('\n')
	t.write(w)
}

// writeShareGroupMembers prints kafka-share-groups.sh --describe --members: GROUP,
// CONSUMER-ID, HOST, CLIENT-ID, #PARTITIONS, [MEMBER-EPOCH,] ASSIGNMENT
// ("topic:0,1;other:2"), members by id.
func writeShareGroupMembers(w *strings.Builder, d kadm.DescribedShareGroup, verbose bool) {
	cols := []column{{"GROUP", 15, true}, {"CONSUMER-ID", 15, true}, {"HOST", 15, true}, {"CLIENT-ID", 15, true}, {"#PARTITIONS", 12, false}}
	if verbose {
		cols = append(cols, column{"MEMBER-EPOCH", 13, false})
	}
	t := table{columns: append(cols, column{"ASSIGNMENT", 0, false})}
	members := append([]kadm.ShareGroupMember(nil), d.Members...)
	sort.Slice(members, func(i, j int) bool { return members[i].MemberID < members[j].MemberID })
	for _, m := range members {
		n := 0
		for _, ps := range m.Assignment {
			n += len(ps)
		}
		row := []string{d.GroupID, m.MemberID, m.ClientHost, m.ClientID, strconv.Itoa(n)}
		if verbose {
			row = append(row, strconv.Itoa(int(m.MemberEpoch)))
		}
		t.add(append(row, shareAssignment(m.Assignment))...)
	}
	w.WriteByte('\n')
	t.write(w)
}

// shareAssignment is kafka-share-groups.sh's assignment column: topic:partitions
// (sorted, comma-separated), topics sorted and joined by ";"; "" when empty.
func shareAssignment(a kadm.TopicsSet) string {
	var parts []string
	for _, tp := range a.Sorted() {
		ps := append([]int32(nil), tp.Partitions...)
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		parts = append(parts, tp.Topic+":"+joinIDs(ps))
	}
	sort.Strings(parts)
	return strings.Join(parts, ";")
}

// writeShareGroupState prints kafka-share-groups.sh --describe --state: GROUP,
// COORDINATOR (ID) ("host:port  (id)"), STATE, [GROUP-EPOCH, ASSIGNMENT-EPOCH,]
// #MEMBERS.
func writeShareGroupState(w *strings.Builder, d kadm.DescribedShareGroup, verbose bool) {
	cols := []column{{"GROUP", 15, true}, {"COORDINATOR (ID)", 25, true}, {"STATE", 15, false}}
	if verbose {
		cols = append(cols, column{"GROUP-EPOCH", 12, false}, column{"ASSIGNMENT-EPOCH", 17, false})
	}
	t := table{columns: append(cols, column{"#MEMBERS", 0, false})}
	coordinator := fmt.Sprintf("%s:%d  (%d)", d.Coordinator.Host, d.Coordinator.Port, d.Coordinator.NodeID)
	row := []string{d.GroupID, coordinator, d.GroupState}
	if verbose {
		row = append(row, strconv.Itoa(int(d.GroupEpoch)), strconv.Itoa(int(d.AssignmentEpoch)))
	}
	t.add(append(row, strconv.Itoa(len(d.Members)))...)
	w.WriteByte('\n')
	t.write(w)
}

// describedShareGroup is one group of `share-groups describe -o json`: its start
// offsets (the default view), or its state and members (--state, --members).
type describedShareGroup struct {
	Group           string            `json:"group"`
	State           string            `json:"state,omitempty"`
	Coordinator     *int32            `json:"coordinator,omitempty"`
	GroupEpoch      *int32            `json:"group_epoch,omitempty"`
	AssignmentEpoch *int32            `json:"assignment_epoch,omitempty"`
	Members         []shareMemberView `json:"members,omitempty"`
	Offsets         []shareOffsetView `json:"offsets,omitempty"`
}

// shareMemberView is one member in `share-groups describe --members -o json`.
type shareMemberView struct {
	MemberID    string `json:"member_id"`
	ClientID    string `json:"client_id"`
	Host        string `json:"host"`
	MemberEpoch int32  `json:"member_epoch"`
	Assignment  string `json:"assignment"`
}

// shareOffsetView is one partition in `share-groups describe -o json`; -1 is unknown.
type shareOffsetView struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	LeaderEpoch int32  `json:"leader_epoch"`
	StartOffset int64  `json:"start_offset"`
	Lag         int64  `json:"lag"`
	Error       string `json:"error,omitempty"`
}

func shareGroupView(d kadm.DescribedShareGroup) describedShareGroup {
	v := describedShareGroup{Group: d.GroupID, State: d.GroupState, Coordinator: &d.Coordinator.NodeID,
		GroupEpoch: &d.GroupEpoch, AssignmentEpoch: &d.AssignmentEpoch, Members: []shareMemberView{}}
	for _, m := range d.Members {
		v.Members = append(v.Members, shareMemberView{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost,
			MemberEpoch: m.MemberEpoch, Assignment: shareAssignment(m.Assignment)})
	}
	return v
}

func shareOffsetsView(offsets kadm.ShareOffsets) []shareOffsetView {
	out := []shareOffsetView{}
	for _, ps := range offsets {
		for _, o := range ps {
			v := shareOffsetView{Topic: o.Topic, Partition: o.Partition, LeaderEpoch: o.LeaderEpoch, StartOffset: o.StartOffset, Lag: o.Lag}
			if o.Err != nil {
				v.Error = describeKafkaError(o.Err)
			}
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

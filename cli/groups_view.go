package cli

// One view of a group, whichever its protocol: as Kafka 4's admin client describes
// groups, ConsumerGroupDescribe (KIP-848, key 69) first, then DescribeGroups for the
// groups it does not know as consumer groups (classic groups, unknown ones, or every
// group on a broker without the API).

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Group types as ListGroups (v5+) names them.
const (
	groupTypeClassic  = "classic"
	groupTypeConsumer = "consumer"
)

// groupView is one described group.
type groupView struct {
	group        string
	groupType    string // groupTypeClassic or groupTypeConsumer
	state        string
	protocolType string // "consumer" for every consumer group
	// protocol is the assignment strategy: the classic group's protocol, the consumer
	// group's server-side assignor.
	protocol    string
	coordinator kadm.BrokerDetail
	// groupEpoch and assignmentEpoch are a consumer group's epochs (-1: classic).
	groupEpoch, assignmentEpoch int32
	members                     []memberView
	// err and errMessage are why the group could not be described.
	err        error
	errMessage string
}

// memberView is one member of a groupView.
type memberView struct {
	id, clientID, host string
	instanceID         *string
	assignment         map[string][]int32 // topic -> partitions
	// epoch and target are a consumer group member's epoch and target assignment
	// (-1 and nil: a classic group's member).
	epoch  int32
	target map[string][]int32
}

func (g *groupView) consumer() bool { return g.groupType == groupTypeConsumer }

// describeGroupViews describes groups: each consumer group with ConsumerGroupDescribe,
// the others with DescribeGroups (a group neither knows is described Dead). An
// authorization failure of ConsumerGroupDescribe is an error; a broker without the API
// leaves every group to DescribeGroups. err is set when nothing could be described.
func describeGroupViews(ctx context.Context, adm *kadm.Client, groups []string) (map[string]groupView, error) {
	out := map[string]groupView{}
	consumers, err := adm.DescribeConsumerGroups(ctx, groups...)
	if _, auth := errors.AsType[*kadm.AuthError](err); auth {
		return nil, err
	}
	var classic []string
	for _, name := range groups {
		d, ok := consumers[name]
		switch {
		case ok && d.Err == nil:
			out[name] = consumerGroupView(d)
		case ok && !errors.Is(d.Err, kerr.GroupIDNotFound):
			out[name] = groupView{group: name, err: d.Err}
		default:
			classic = append(classic, name)
		}
	}
	if len(classic) == 0 {
		return out, nil
	}
	described, err := adm.DescribeGroups(ctx, classic...)
	if err != nil && len(described) == 0 && len(out) == 0 {
		return nil, err
	}
	for _, name := range classic {
		if d, ok := described[name]; ok {
			out[name] = classicGroupView(d)
		}
	}
	return out, nil
}

func consumerGroupView(d kadm.DescribedConsumerGroup) groupView {
	g := groupView{group: d.Group, groupType: groupTypeConsumer, state: d.State, protocolType: "consumer",
		protocol: d.AssignorName, coordinator: d.Coordinator, groupEpoch: d.Epoch, assignmentEpoch: d.AssignmentEpoch}
	for _, m := range d.Members {
		g.members = append(g.members, memberView{id: m.MemberID, clientID: m.ClientID, host: m.ClientHost,
			instanceID: m.InstanceID, assignment: topicsSetPartitions(m.Assignment), epoch: m.MemberEpoch,
			target: topicsSetPartitions(m.TargetAssignment)})
	}
	return g
}

// classicGroupView is d as the CLI shows it. GROUP_ID_NOT_FOUND (DescribeGroups v6, for
// an unknown id or a consumer group's offsets alone) is no error: the group is Dead.
func classicGroupView(d kadm.DescribedGroup) groupView {
	g := groupView{group: d.Group, groupType: groupTypeClassic, state: d.State, protocolType: d.ProtocolType,
		protocol: d.Protocol, coordinator: d.Coordinator, groupEpoch: -1, assignmentEpoch: -1, err: d.Err, errMessage: d.ErrMessage}
	if errors.Is(d.Err, kerr.GroupIDNotFound) {
		g.err, g.errMessage, g.state = nil, "", stateDead
	}
	for _, m := range d.Members {
		g.members = append(g.members, memberView{id: m.MemberID, clientID: m.ClientID, host: m.ClientHost,
			instanceID: m.InstanceID, assignment: memberAssignment(m), epoch: -1})
	}
	return g
}

// topicsSetPartitions is a kadm.TopicsSet as topic -> partitions, ascending.
func topicsSetPartitions(s kadm.TopicsSet) map[string][]int32 {
	out := map[string][]int32{}
	for _, tp := range s.Sorted() {
		out[tp.Topic] = append(out[tp.Topic], tp.Partitions...)
	}
	return out
}

// describeError is why g could not be described, nil when it was.
func (g *groupView) describeError() error {
	if g.err == nil {
		return nil
	}
	return fmt.Errorf("describe group %q: %w", g.group, kafkaError(g.err, g.errMessage))
}

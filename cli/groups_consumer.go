package cli

// The views of kafka-consumer-groups.sh (Kafka 4) that differ for a consumer group of
// the KIP-848 protocol: its members with their epochs, current and target
// assignments.

import (
	"sort"
	"strconv"
	"strings"
)

// Consumer group states (KIP-848) between Empty and Stable.
const (
	stateAssigning   = "Assigning"
	stateReconciling = "Reconciling"
)

// writeConsumerGroupMembers prints Kafka 4's --describe --members [--verbose] of a
// consumer group: GROUP-INSTANCE-ID only when a member has one; verbose adds each
// member's epoch and assignment (CURRENT-EPOCH, CURRENT-ASSIGNMENT) and the group's
// target assignment epoch with the member's target (TARGET-EPOCH, TARGET-ASSIGNMENT).
func writeConsumerGroupMembers(w *strings.Builder, d groupView, verbose bool) {
	static := false
	for _, m := range d.members {
		static = static || (m.instanceID != nil && *m.instanceID != "")
	}
	columns := []column{{"GROUP", 15, true}, {"CONSUMER-ID", 15, true}}
	if static {
		columns = append(columns, column{"GROUP-INSTANCE-ID", 17, true})
	}
	columns = append(columns, column{"HOST", 15, true}, column{"CLIENT-ID", 15, true}, column{"#PARTITIONS", 15, false})
	if verbose {
		columns = append(columns, column{"CURRENT-EPOCH", 15, false}, column{"CURRENT-ASSIGNMENT", 20, true},
			column{"TARGET-EPOCH", 15, false}, column{"TARGET-ASSIGNMENT", 20, true})
	}
	t := table{columns: columns}
	for _, m := range d.members {
		cells := []string{d.group, orDash(m.id)}
		if static {
			cells = append(cells, instanceOrDash(m.instanceID))
		}
		cells = append(cells, orDash(m.host), orDash(m.clientID), strconv.Itoa(countPartitions(m.assignment)))
		if verbose {
			cells = append(cells, epochOrDash(m.epoch), formatConsumerAssignment(m.assignment),
				epochOrDash(d.assignmentEpoch), formatConsumerAssignment(m.target))
		}
		t.add(cells...)
	}
	w.WriteByte('\n')
	t.write(w)
}

// formatConsumerAssignment prints partitions as Kafka 4's tool does:
// topic:0,1;other:2, topics sorted; "-" when empty.
func formatConsumerAssignment(partitions map[string][]int32) string {
	if countPartitions(partitions) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(partitions))
	for t, ps := range partitions {
		if len(ps) == 0 {
			continue
		}
		sorted := append([]int32(nil), ps...)
		sort.Slice(sorted, func(a, b int) bool { return sorted[a] < sorted[b] })
		parts = append(parts, t+":"+joinIDs(sorted))
	}
	sort.Strings(parts)
	return strings.Join(parts, ";")
}

// countPartitions is the number of partitions of an assignment.
func countPartitions(partitions map[string][]int32) int {
	n := 0
	for _, ps := range partitions {
		n += len(ps)
	}
	return n
}

// instanceOrDash prints a group.instance.id, "-" when there is none.
func instanceOrDash(id *string) string {
	if id == nil {
		return "-"
	}
	return orDash(*id)
}

// epochOrDash prints an epoch, "-" for none (negative: a classic group has none).
func epochOrDash(epoch int32) string {
	if epoch < 0 {
		return "-"
	}
	return strconv.Itoa(int(epoch))
}

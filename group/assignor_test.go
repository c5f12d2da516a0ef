package group

import (
	"errors"
	"reflect"
	"testing"
)

// The assignor registry (group.consumer.assignors), input validation and worked
// examples; the properties are in assignor_property_test.go.

func TestAssignorsRegistry(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  []string // assignor names; nil means an error
	}{
		{DefaultConsumerAssignors, []string{"uniform", "range"}},
		{[]string{"range"}, []string{"range"}},
		{[]string{" range ", "uniform"}, []string{"range", "uniform"}},
		{[]string{"org.apache.kafka.coordinator.group.assignor.UniformAssignor", "org.apache.kafka.coordinator.group.assignor.RangeAssignor"}, []string{"uniform", "range"}},
		{[]string{"uniform", "sticky"}, nil},
		{[]string{"org.example.MyAssignor"}, nil},
		{[]string{"uniform", "uniform"}, nil},
		{nil, nil},
	} {
		got, err := Assignors(tc.names)
		if tc.want == nil {
			if !errors.Is(err, ErrUnknownAssignor) {
				t.Errorf("Assignors(%q) = %v, want ErrUnknownAssignor", tc.names, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Assignors(%q): %v", tc.names, err)
		}
		var names []string
		for _, a := range got {
			names = append(names, a.Name())
		}
		if !reflect.DeepEqual(names, tc.want) {
			t.Errorf("Assignors(%q) = %v, want %v", tc.names, names, tc.want)
		}
	}

	configured, _ := Assignors(DefaultConsumerAssignors)
	for name, want := range map[string]string{"": "uniform", "uniform": "uniform", "range": "range"} {
		if a, ok := FindAssignor(configured, name); !ok || a.Name() != want {
			t.Errorf("FindAssignor(%q) = %v, %v; want %s", name, a, ok, want)
		}
	}
	if _, ok := FindAssignor(configured, "sticky"); ok {
		t.Error("FindAssignor found an unconfigured assignor (want UNSUPPORTED_ASSIGNOR)")
	}
	onlyRange, _ := Assignors([]string{"range"})
	if _, ok := FindAssignor(onlyRange, "uniform"); ok {
		t.Error("FindAssignor found uniform though only range is configured")
	}
}

func TestAssignorInputErrors(t *testing.T) {
	t1 := AssignorTopic{ID: testTopicID(1), Name: "t1", Partitions: 2}
	for name, tc := range map[string]struct {
		members []AssignorMember
		topics  []AssignorTopic
	}{
		"duplicate member": {[]AssignorMember{{MemberID: "a"}, {MemberID: "a"}}, []AssignorTopic{t1}},
		"duplicate topic":  {[]AssignorMember{{MemberID: "a"}}, []AssignorTopic{t1, t1}},
		"negative count":   {nil, []AssignorTopic{{ID: testTopicID(2), Name: "t2", Partitions: -1}}},
		"racks mismatch":   {nil, []AssignorTopic{{ID: testTopicID(2), Name: "t2", Partitions: 2, PartitionRacks: [][]string{{"a"}}}}},
	} {
		for _, a := range builtinAssignors {
			if _, err := a.Assign(tc.members, tc.topics); !errors.Is(err, ErrInvalidAssignorInput) {
				t.Errorf("%s %s: err %v, want ErrInvalidAssignorInput", a.Name(), name, err)
			}
		}
	}
}

// TestAssignorExamples pins small assignments: what each assignor gives a fresh group,
// what it keeps when one joins, and that unknown topics and empty groups are harmless.
func TestAssignorExamples(t *testing.T) {
	a, b := testTopicID(1), testTopicID(2)
	topics := []AssignorTopic{{ID: a, Name: "a", Partitions: 3}, {ID: b, Name: "b", Partitions: 3}}
	both := []string{"a", "b", "missing"}
	for _, tc := range []struct {
		name     string
		assignor Assignor
		members  []AssignorMember
		want     map[string]AssignedPartitions
	}{
		{"uniform fresh", UniformAssignor{}, []AssignorMember{
			{MemberID: "m2", TopicNames: both}, {MemberID: "m1", TopicNames: both},
		}, map[string]AssignedPartitions{
			"m1": {a: {0, 1, 2}},
			"m2": {b: {0, 1, 2}},
		}},
		{"uniform join keeps all but the extra", UniformAssignor{}, []AssignorMember{
			{MemberID: "m1", TopicNames: both, Current: AssignedPartitions{a: {0, 1, 2}}},
			{MemberID: "m2", TopicNames: both, Current: AssignedPartitions{b: {0, 1, 2}}},
			{MemberID: "m3", TopicNames: both},
		}, map[string]AssignedPartitions{
			"m1": {a: {0, 1}},
			"m2": {b: {0, 1}},
			"m3": {a: {2}, b: {2}},
		}},
		{"uniform heterogeneous", UniformAssignor{}, []AssignorMember{
			{MemberID: "m1", TopicNames: []string{"a"}},
			{MemberID: "m2", TopicNames: []string{"a", "b"}},
		}, map[string]AssignedPartitions{
			"m1": {a: {0, 1, 2}},
			"m2": {b: {0, 1, 2}},
		}},
		{"range fresh", RangeAssignor{}, []AssignorMember{
			{MemberID: "m2", TopicNames: both}, {MemberID: "m1", TopicIDs: [][16]byte{a, b}},
		}, map[string]AssignedPartitions{
			"m1": {a: {0, 1}, b: {0, 1}},
			"m2": {a: {2}, b: {2}},
		}},
		{"range join keeps ranges", RangeAssignor{}, []AssignorMember{
			{MemberID: "m1", TopicNames: both, Current: AssignedPartitions{a: {0, 1}, b: {0, 1}}},
			{MemberID: "m2", TopicNames: both, Current: AssignedPartitions{a: {2}, b: {2}}},
			{MemberID: "m0", TopicNames: both},
		}, map[string]AssignedPartitions{
			"m0": {a: {1}, b: {1}},
			"m1": {a: {0}, b: {0}},
			"m2": {a: {2}, b: {2}},
		}},
		{"no subscriptions", RangeAssignor{}, []AssignorMember{{MemberID: "m1", TopicNames: []string{"missing"}}},
			map[string]AssignedPartitions{"m1": {}}},
		{"no members", UniformAssignor{}, nil, map[string]AssignedPartitions{}},
	} {
		got := mustAssign(t, tc.assignor, tc.members, topics)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestUniformKeepsSameRackWhenRevoking: a member over its quota gives up the
// partitions outside its rack first.
func TestUniformKeepsSameRackWhenRevoking(t *testing.T) {
	id := testTopicID(1)
	topics := []AssignorTopic{{ID: id, Name: "t", Partitions: 4, PartitionRacks: [][]string{{"x"}, {"y"}, {"x"}, {"y"}}}}
	members := []AssignorMember{
		{MemberID: "m1", Rack: "y", TopicIDs: [][16]byte{id}, Current: AssignedPartitions{id: {0, 1, 2, 3}}},
		{MemberID: "m2", Rack: "x", TopicIDs: [][16]byte{id}},
	}
	got := mustAssign(t, UniformAssignor{}, members, topics)
	want := map[string]AssignedPartitions{"m1": {id: {1, 3}}, "m2": {id: {0, 2}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

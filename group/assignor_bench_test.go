package group

import (
	"fmt"
	"testing"
)

// BenchmarkUniformAssign times the uniform assignor on homogeneous groups: a fresh
// assignment and a rebalance after one member joins (with every survivor's current
// assignment as input).
func BenchmarkUniformAssign(b *testing.B) {
	for _, size := range []struct{ members, topics, partitions int }{
		{10, 1, 100},
		{1000, 10, 1000}, // 10,000 partitions
	} {
		var topics []AssignorTopic
		for i := range size.topics {
			topics = append(topics, AssignorTopic{ID: testTopicID(i), Name: fmt.Sprintf("t%02d", i), Partitions: int32(size.partitions)})
		}
		var names []string
		for _, t := range topics {
			names = append(names, t.Name)
		}
		members := make([]AssignorMember, size.members)
		for i := range members {
			members[i] = AssignorMember{MemberID: fmt.Sprintf("member-%05d", i), TopicNames: names}
		}
		total := size.topics * size.partitions
		b.Run(fmt.Sprintf("fresh/%dx%d", size.members, total), func(b *testing.B) {
			for b.Loop() {
				mustAssign(b, UniformAssignor{}, members, topics)
			}
		})
		joined := append(withCurrent(members, mustAssign(b, UniformAssignor{}, members, topics)),
			AssignorMember{MemberID: "member-joined", TopicNames: names})
		b.Run(fmt.Sprintf("join/%dx%d", size.members, total), func(b *testing.B) {
			for b.Loop() {
				mustAssign(b, UniformAssignor{}, joined, topics)
			}
		})
	}
}

// BenchmarkUniformAssignHeterogeneous times the general path: 1,000 members, each
// subscribed to 5 of 10 topics of 1,000 partitions, fresh and after one member joins.
func BenchmarkUniformAssignHeterogeneous(b *testing.B) {
	var topics []AssignorTopic
	for i := range 10 {
		topics = append(topics, AssignorTopic{ID: testTopicID(i), Name: fmt.Sprintf("t%02d", i), Partitions: 1000})
	}
	members := make([]AssignorMember, 1000)
	for i := range members {
		members[i].MemberID = fmt.Sprintf("member-%05d", i)
		for k := range 5 {
			members[i].TopicNames = append(members[i].TopicNames, topics[(i+k)%len(topics)].Name)
		}
	}
	b.Run("fresh/1000x10000", func(b *testing.B) {
		for b.Loop() {
			mustAssign(b, UniformAssignor{}, members, topics)
		}
	})
	joined := append(withCurrent(members, mustAssign(b, UniformAssignor{}, members, topics)),
		AssignorMember{MemberID: "member-joined", TopicNames: []string{"t00", "t01"}})
	b.Run("join/1000x10000", func(b *testing.B) {
		for b.Loop() {
			mustAssign(b, UniformAssignor{}, joined, topics)
		}
	})
}

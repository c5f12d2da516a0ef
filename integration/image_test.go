package integration

// The test-side view of a node's metadata image: the parts every node must agree on
// (cluster id, brokers, topics, configs, offset) in metadata's own types, read through
// the image's snapshot JSON (Image.SnapshotForm: configs as a sorted list, pointers
// replaced by values). Two views are equal exactly when those parts of the images are.

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/petrel-broker/petrel/metadata"
)

type imageView struct {
	ClusterID string                    `json:"clusterId"`
	Brokers   map[int32]metadata.Broker `json:"brokers"`
	Topics    map[string]topicView      `json:"topics"`
	TopicIDs  map[metadata.Uuid]string  `json:"topicIds"`
	Configs   []metadata.ConfigEntry    `json:"configs"`
	Offset    uint64                    `json:"offset"`
}

// topicView is metadata.Topic with its partitions as values.
type topicView struct {
	Name       string          `json:"name"`
	ID         metadata.Uuid   `json:"id"`
	Partitions []partitionView `json:"partitions"`
}

// partitionView is metadata.Partition, printed short in failure messages.
type partitionView metadata.Partition

// viewOf converts a node's image to the view.
func viewOf(im *metadata.Image) (imageView, error) {
	var v imageView
	raw, err := json.Marshal(im.SnapshotForm())
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("reading the image's snapshot form: %w", err)
	}
	return v, nil
}

func (v imageView) equal(o imageView) bool { return reflect.DeepEqual(v, o) }

// withoutOffset is v with Offset zeroed, for comparing contents only.
func (v imageView) withoutOffset() imageView { v.Offset = 0; return v }

// diff names the first differences between v and o, for failure messages.
func (v imageView) diff(o imageView) string {
	var out []string
	if v.Offset != o.Offset {
		out = append(out, fmt.Sprintf("offset %d vs %d", v.Offset, o.Offset))
	}
	if v.ClusterID != o.ClusterID {
		out = append(out, fmt.Sprintf("cluster id %q vs %q", v.ClusterID, o.ClusterID))
	}
	for _, id := range sortedUnion(v.Brokers, o.Brokers) {
		if a, b := v.Brokers[id], o.Brokers[id]; !reflect.DeepEqual(a, b) {
			out = append(out, fmt.Sprintf("broker %d: %+v vs %+v", id, a, b))
		}
	}
	for _, name := range sortedUnion(v.Topics, o.Topics) {
		if a, b := v.Topics[name], o.Topics[name]; !reflect.DeepEqual(a, b) {
			out = append(out, fmt.Sprintf("topic %s: %s vs %s", name, a, b))
		}
	}
	if !reflect.DeepEqual(v.Configs, o.Configs) {
		out = append(out, fmt.Sprintf("configs %v vs %v", v.Configs, o.Configs))
	}
	if !reflect.DeepEqual(v.TopicIDs, o.TopicIDs) {
		out = append(out, fmt.Sprintf("topic ids %v vs %v", v.TopicIDs, o.TopicIDs))
	}
	if len(out) == 0 {
		return "no difference"
	}
	return strings.Join(out, "; ")
}

func (t topicView) String() string {
	if t.Name == "" {
		return "absent"
	}
	var parts []string
	for _, p := range t.Partitions {
		parts = append(parts, p.String())
	}
	return fmt.Sprintf("%s(%s)[%s]", t.Name, t.ID, strings.Join(parts, " "))
}

func (p partitionView) String() string {
	return fmt.Sprintf("p%d{r=%v isr=%v l=%d le=%d pe=%d}", p.ID, p.Replicas, p.ISR, p.Leader, p.LeaderEpoch, p.PartitionEpoch)
}

// brokerIDs returns the registered broker ids, sorted.
func (v imageView) brokerIDs() []int32 { return slices.Sorted(maps.Keys(v.Brokers)) }

// unfencedBrokerIDs returns the registered, unfenced broker ids, sorted.
func (v imageView) unfencedBrokerIDs() []int32 {
	var out []int32
	for _, id := range v.brokerIDs() {
		if !v.Brokers[id].Fenced {
			out = append(out, id)
		}
	}
	return out
}

// topicNames returns the topic names, sorted.
func (v imageView) topicNames() []string { return slices.Sorted(maps.Keys(v.Topics)) }

// topicConfigs returns a topic's config overrides.
func (v imageView) topicConfigs(topic string) map[string]string {
	out := map[string]string{}
	for _, e := range v.Configs {
		if e.Resource.Type == metadata.TopicResource && e.Resource.Name == topic {
			out[e.Name] = e.Value
		}
	}
	return out
}

func sortedUnion[K interface{ ~int32 | ~string }, V any](a, b map[K]V) []K {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// kafkaPlacement is Kafka's rack-unaware replica assignment, written out here from
// AdminUtils.assignReplicasToBrokersRackUnaware independently of Petrel's own
// metadata.AssignReplicas: partition p's first replica is brokers[(p + start) % n];
// its j-th follower is brokers[(first + 1 + (shift + j) % (n - 1)) % n], where shift
// grows by one at every partition id that is a positive multiple of n.
func kafkaPlacement(brokers []int32, partitions, rf, start, shift int) [][]int32 {
	n := len(brokers)
	out := make([][]int32, partitions)
	for p := range partitions {
		if p > 0 && p%n == 0 {
			shift++
		}
		first := (p + start) % n
		replicas := []int32{brokers[first]}
		for j := range rf - 1 {
			replicas = append(replicas, brokers[(first+1+(shift+j)%(n-1))%n])
		}
		out[p] = replicas
	}
	return out
}

// checkBalancedPlacement checks that topic's assignment is Kafka's rack-unaware one on
// brokers for some start index and shift (the controller draws them at random), and
// that each partition starts with its whole replica set in the ISR and its first
// replica as leader.
func checkBalancedPlacement(t topicView, brokers []int32, rf int) error {
	n := len(brokers)
	var got [][]int32
	for _, p := range t.Partitions {
		got = append(got, p.Replicas)
		if !slices.Equal(p.ISR, p.Replicas) || len(p.Replicas) == 0 || p.Leader != p.Replicas[0] {
			return fmt.Errorf("%s: partition %s does not start with ISR = replicas and the first replica leading", t.Name, p)
		}
	}
	for start := range n {
		for shift := range n {
			if reflect.DeepEqual(got, kafkaPlacement(brokers, len(got), rf, start, shift)) {
				return nil
			}
		}
	}
	return fmt.Errorf("%s: assignment %v is not Kafka's rack-unaware placement on brokers %v with RF %d for any start index and shift", t.Name, got, brokers, rf)
}

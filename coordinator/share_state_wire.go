package coordinator

// The shape the share coordinator's APIs (keys 83–87) share: a group id, topics by id,
// partitions by index, and answers of the same shape with an error code per partition.
// kmsg gives each API its own types; these helpers walk and build any of them by that
// shape (reflection, by kmsg's field names), so that the coordinator and the broker's
// persister handle the five APIs with one piece of code.

import (
	"reflect"

	"github.com/petrel-broker/petrel/share"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SharePart is one share partition of a share coordinator request or response: the
// indexes of its topic and of itself in the request, its topic id and partition.
type SharePart struct {
	Topic, Index int
	TopicID      [16]byte
	Partition    int32
}

// Key is the part's share partition key in group.
func (p SharePart) Key(group string) share.Key {
	return share.Key{GroupID: group, TopicID: p.TopicID, Partition: p.Partition}
}

// where is the part's topic id and partition, its identity across requests.
func (p SharePart) where() SharePart { return SharePart{TopicID: p.TopicID, Partition: p.Partition} }

// walkShare calls each for every partition of a request's or response's Topics, in
// order, with the partition's value.
func walkShare(msg any, each func(part SharePart, partition reflect.Value)) {
	topics := reflect.ValueOf(msg).Elem().FieldByName("Topics")
	for t := range topics.Len() {
		topic := topics.Index(t)
		id := topic.FieldByName("TopicID").Interface().([16]byte)
		parts := topic.FieldByName("Partitions")
		for i := range parts.Len() {
			p := parts.Index(i)
			each(SharePart{Topic: t, Index: i, TopicID: id, Partition: int32(p.FieldByName("Partition").Int())}, p)
		}
	}
}

// ShareRequestParts returns a share coordinator request's group id and partitions, in
// order.
func ShareRequestParts(req kmsg.Request) (string, []SharePart) {
	var parts []SharePart
	walkShare(req, func(part SharePart, _ reflect.Value) { parts = append(parts, part) })
	return reflect.ValueOf(req).Elem().FieldByName("GroupID").String(), parts
}

// ShareRequestSubset returns a copy of req holding only the partitions keep keeps;
// topics left without partitions are dropped.
func ShareRequestSubset(req kmsg.Request, keep func(SharePart) bool) kmsg.Request {
	src := reflect.ValueOf(req).Elem()
	out := reflect.New(src.Type())
	out.Elem().Set(src)
	srcTopics := src.FieldByName("Topics")
	topics := reflect.MakeSlice(srcTopics.Type(), 0, srcTopics.Len())
	for t := range srcTopics.Len() {
		topic := reflect.New(srcTopics.Type().Elem()).Elem()
		topic.Set(srcTopics.Index(t))
		id := topic.FieldByName("TopicID").Interface().([16]byte)
		srcParts := topic.FieldByName("Partitions")
		parts := reflect.MakeSlice(srcParts.Type(), 0, srcParts.Len())
		for i := range srcParts.Len() {
			p := srcParts.Index(i)
			if keep(SharePart{Topic: t, Index: i, TopicID: id, Partition: int32(p.FieldByName("Partition").Int())}) {
				parts = reflect.Append(parts, p)
			}
		}
		if parts.Len() > 0 {
			topic.FieldByName("Partitions").Set(parts)
			topics = reflect.Append(topics, topic)
		}
	}
	out.Elem().FieldByName("Topics").Set(topics)
	return out.Interface().(kmsg.Request)
}

// ShareAnswer is one partition of a share coordinator response: where it is, its error
// code and the response's entry for it.
type ShareAnswer struct {
	Part  SharePart
	Code  int16
	entry reflect.Value
}

// ShareResponseAnswers lists a response's partitions.
func ShareResponseAnswers(resp kmsg.Response) []ShareAnswer {
	var out []ShareAnswer
	walkShare(resp, func(part SharePart, p reflect.Value) {
		out = append(out, ShareAnswer{Part: part.where(), Code: int16(p.FieldByName("ErrorCode").Int()), entry: p})
	})
	return out
}

// ShareResponse answers req in its order: fill sets each partition's entry (i counts
// the request's partitions over its topics), which starts as Kafka's answer of an
// unknown state (defaults, StartOffset and LeaderEpoch -1) with the partition set.
func ShareResponse(req kmsg.Request, fill func(i int, part SharePart, entry ShareEntry)) kmsg.Response {
	resp := req.ResponseKind()
	topics := reflect.ValueOf(resp).Elem().FieldByName("Topics")
	topicType := topics.Type().Elem()
	partType, _ := topicType.FieldByName("Partitions")
	i := 0
	reqTopics := reflect.ValueOf(req).Elem().FieldByName("Topics")
	for t := range reqTopics.Len() {
		rt := reqTopics.Index(t)
		topic := reflect.New(topicType).Elem()
		id := rt.FieldByName("TopicID").Interface().([16]byte)
		topic.FieldByName("TopicID").Set(reflect.ValueOf(id))
		reqParts := rt.FieldByName("Partitions")
		parts := reflect.MakeSlice(partType.Type, 0, reqParts.Len())
		for j := range reqParts.Len() {
			part := SharePart{Topic: t, Index: j, TopicID: id, Partition: int32(reqParts.Index(j).FieldByName("Partition").Int())}
			entry := ShareEntry{reflect.New(partType.Type.Elem())}
			if d, ok := entry.v.Interface().(interface{ Default() }); ok {
				d.Default()
			}
			entry.setInt("Partition", int64(part.Partition))
			entry.setInt("StartOffset", -1)
			entry.setInt("LeaderEpoch", -1)
			fill(i, part, entry)
			parts = reflect.Append(parts, entry.v.Elem())
			i++
		}
		topic.FieldByName("Partitions").Set(parts)
		topics.Set(reflect.Append(topics, topic))
	}
	return resp
}

// ShareEntry is one partition entry of a share coordinator response being built.
type ShareEntry struct{ v reflect.Value }

// setInt sets the integer field name, when the entry has it.
func (e ShareEntry) setInt(name string, v int64) {
	if f := e.v.Elem().FieldByName(name); f.IsValid() {
		f.SetInt(v)
	}
}

// SetError sets the entry's error code and message.
func (e ShareEntry) SetError(code int16, message *string) {
	e.setInt("ErrorCode", int64(code))
	e.v.Elem().FieldByName("ErrorMessage").Set(reflect.ValueOf(message))
}

// SetAnswer makes the entry a copy of a's.
func (e ShareEntry) SetAnswer(a ShareAnswer) { e.v.Elem().Set(a.entry) }

// setState sets the state fields the entry has: epochs, start offset,
// delivery-complete count, state batches.
func (e ShareEntry) setState(st share.State) {
	e.setInt("StateEpoch", int64(st.StateEpoch))
	e.setInt("LeaderEpoch", int64(st.LeaderEpoch))
	e.setInt("StartOffset", st.StartOffset)
	e.setInt("DeliveryCompleteCount", int64(st.DeliveryCompleteCount))
	f := e.v.Elem().FieldByName("StateBatches")
	if !f.IsValid() {
		return
	}
	batches := reflect.MakeSlice(f.Type(), 0, len(st.Batches))
	for _, b := range st.Batches {
		sb := reflect.New(f.Type().Elem()).Elem()
		sb.FieldByName("FirstOffset").SetInt(b.FirstOffset)
		sb.FieldByName("LastOffset").SetInt(b.LastOffset)
		sb.FieldByName("DeliveryState").SetInt(int64(b.DeliveryState))
		sb.FieldByName("DeliveryCount").SetInt(int64(b.DeliveryCount))
		batches = reflect.Append(batches, sb)
	}
	f.Set(batches)
}

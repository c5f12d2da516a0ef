package group

import "fmt"

// DecodeConsumerGroupRecord decodes a __consumer_offsets record of a KIP-848 consumer
// group (key types 3-8 and 16, see records_consumer.go); a nil value is a tombstone and
// gives a nil Value. ok is false, with no error, for the other key types (classic
// records 0-2, share groups 9-15, streams groups 17+), so that replay code can try this
// first and fall back to the classic records. A known key or value that does not parse,
// or a value version other than 0, is an ErrCorruptRecord (Kafka's loader fails on an
// unknown value version too).
func DecodeConsumerGroupRecord(key, value []byte) (rec ConsumerGroupRecord, ok bool, err error) {
	rec.Key, ok, err = DecodeConsumerGroupKey(key)
	if !ok || err != nil || value == nil {
		return rec, ok, err
	}
	rec.Value, err = DecodeConsumerGroupValue(rec.Key.Type, value)
	if err != nil {
		return rec, true, fmt.Errorf("group %q record type %d: %w", rec.Key.GroupID, rec.Key.Type, err)
	}
	return rec, true, nil
}

// DecodeConsumerGroupKey decodes a key; ok is false for key types that are not of a
// consumer group.
func DecodeConsumerGroupKey(key []byte) (k ConsumerGroupKey, ok bool, err error) {
	r := reader{b: key}
	k.Type = r.int16()
	if r.err != nil {
		return k, false, r.err
	}
	if !isConsumerGroupRecordType(k.Type) {
		return k, false, nil
	}
	k.GroupID = r.string()
	switch {
	case keyHasMember(k.Type):
		k.MemberID = r.string()
	case k.Type == RecordTypeConsumerGroupRegularExpression:
		k.RegularExpression = r.string()
	}
	return k, true, r.err
}

// DecodeConsumerGroupValue decodes the value of a record of type recordType.
func DecodeConsumerGroupValue(recordType int16, value []byte) (ConsumerGroupValue, error) {
	r := reader{b: value}
	version := r.int16()
	if r.err != nil {
		return nil, r.err
	}
	if version != consumerGroupValueVersion {
		return nil, fmt.Errorf("%w: value version %d of record type %d", ErrCorruptRecord, version, recordType)
	}
	r.flexible = true
	var v ConsumerGroupValue
	switch recordType {
	case RecordTypeConsumerGroupMetadata:
		v = r.consumerGroupMetadata()
	case RecordTypeConsumerGroupPartitionMetadata:
		v = r.consumerGroupPartitionMetadata()
	case RecordTypeConsumerGroupMemberMetadata:
		v = r.consumerGroupMemberMetadata()
	case RecordTypeConsumerGroupTargetAssignmentMetadata:
		t := &ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: r.int32()}
		r.taggedFields(nil)
		v = t
	case RecordTypeConsumerGroupTargetAssignmentMember:
		t := &ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: r.topicPartitions()}
		r.taggedFields(nil)
		v = t
	case RecordTypeConsumerGroupCurrentMemberAssignment:
		c := &ConsumerGroupCurrentMemberAssignmentValue{}
		c.MemberEpoch = r.int32()
		c.PreviousMemberEpoch = r.int32()
		c.State = r.int8()
		c.AssignedPartitions = r.topicPartitions()
		c.PartitionsPendingRevocation = r.topicPartitions()
		r.taggedFields(nil)
		v = c
	case RecordTypeConsumerGroupRegularExpression:
		x := &ConsumerGroupRegularExpressionValue{}
		x.Topics = r.stringArray()
		x.Version = r.int64()
		x.Timestamp = r.int64()
		r.taggedFields(nil)
		v = x
	default:
		return nil, fmt.Errorf("%w: record type %d is not a consumer group record", ErrCorruptRecord, recordType)
	}
	if r.err != nil {
		return nil, r.err
	}
	return v, nil
}

func (r *reader) consumerGroupMetadata() *ConsumerGroupMetadataValue {
	v := &ConsumerGroupMetadataValue{Epoch: r.int32()}
	r.taggedFields(func(tag uint64, f *reader) {
		if tag == 0 {
			v.MetadataHash = f.int64()
		}
	})
	return v
}

func (r *reader) consumerGroupPartitionMetadata() *ConsumerGroupPartitionMetadataValue {
	v := &ConsumerGroupPartitionMetadataValue{}
	n := r.arrayLength()
	for i := 0; i < n && r.err == nil; i++ {
		t := ConsumerGroupTopicMetadata{TopicID: r.uuid(), TopicName: r.recordString(), NumPartitions: r.int32()}
		m := r.arrayLength()
		for j := 0; j < m && r.err == nil; j++ {
			p := ConsumerGroupPartitionRacks{Partition: r.int32(), Racks: r.stringArray()}
			r.taggedFields(nil)
			t.PartitionMetadata = append(t.PartitionMetadata, p)
		}
		r.taggedFields(nil)
		v.Topics = append(v.Topics, t)
	}
	r.taggedFields(nil)
	return v
}

func (r *reader) consumerGroupMemberMetadata() *ConsumerGroupMemberMetadataValue {
	v := &ConsumerGroupMemberMetadataValue{}
	v.InstanceID = r.recordNullableString()
	v.RackID = r.recordNullableString()
	v.ClientID = r.recordString()
	v.ClientHost = r.recordString()
	v.SubscribedTopicNames = r.stringArray()
	v.SubscribedTopicRegex = r.recordNullableString()
	v.RebalanceTimeoutMs = r.int32()
	v.ServerAssignor = r.recordNullableString()
	r.taggedFields(func(tag uint64, f *reader) {
		if tag != 0 {
			return
		}
		v.ClassicMemberMetadata = nil
		if f.int8() < 0 { // null
			return
		}
		c := &ClassicMemberMetadata{SessionTimeoutMs: f.int32()}
		n := f.arrayLength()
		for i := 0; i < n && f.err == nil; i++ {
			p := ClassicProtocol{Name: f.recordString(), Metadata: f.bytes()}
			f.taggedFields(nil)
			c.SupportedProtocols = append(c.SupportedProtocols, p)
		}
		f.taggedFields(nil)
		if f.err == nil {
			v.ClassicMemberMetadata = c
		}
	})
	return v
}

func (r *reader) topicPartitions() []ConsumerGroupTopicPartitions {
	var out []ConsumerGroupTopicPartitions
	n := r.arrayLength()
	for i := 0; i < n && r.err == nil; i++ {
		tp := ConsumerGroupTopicPartitions{TopicID: r.uuid()}
		m := r.arrayLength()
		for j := 0; j < m && r.err == nil; j++ {
			tp.Partitions = append(tp.Partitions, r.int32())
		}
		r.taggedFields(nil) // tag 0 is AssignmentEpochs (after Kafka 4.2): skipped
		out = append(out, tp)
	}
	return out
}

func (r *reader) stringArray() []string {
	var out []string
	n := r.arrayLength()
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, r.recordString())
	}
	return out
}

func (r *reader) int8() int8 {
	p := r.take(1, "int8")
	if p == nil {
		return 0
	}
	return int8(p[0])
}

func (r *reader) uuid() (id [16]byte) {
	copy(id[:], r.take(16, "uuid"))
	return id
}

// recordNullableString reads a string as Kafka's generated readers do: longer than
// 32767 bytes is corrupt.
func (r *reader) recordNullableString() *string {
	s := r.nullableString()
	if s != nil && !fitsRecord(*s) {
		r.fail("string length")
		return nil
	}
	return s
}

func (r *reader) recordString() string {
	s := r.string()
	if !fitsRecord(s) {
		r.fail("string length")
		return ""
	}
	return s
}

// taggedFields reads a structure's tagged-field section, handing each field's bytes to
// known (nil: none known); a failure inside a field is the record's. Unknown tags are
// skipped, as Kafka's readers keep them aside.
func (r *reader) taggedFields(known func(tag uint64, field *reader)) {
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		tag := r.uvarint()
		size := r.uvarint()
		if r.err != nil || size > uint64(len(r.b)) {
			r.fail("tagged field")
			return
		}
		f := reader{b: r.take(int(size), "tagged field"), flexible: true}
		if known != nil {
			known(tag, &f)
		}
		if f.err != nil {
			r.fail(fmt.Sprintf("tagged field %d", tag))
		}
	}
}

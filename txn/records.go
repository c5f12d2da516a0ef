package txn

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The __transaction_state records, in Kafka's schemas (TransactionLogKey.json and
// TransactionLogValue.json, as kmsg.TxnMetadataKey/Value encode them), so that
// kafka-dump-log.sh --transaction-log-decoder reads Petrel's files:
//
//	key   = version int16 (0) | transactional_id string
//	value = version int16 (0) | producer_id int64 | producer_epoch int16 |
//	        transaction_timeout_ms int32 | transaction_status int8 |
//	        transaction_partitions nullable array of (topic string, partition_ids
//	        array of int32) | transaction_last_update_timestamp_ms int64 |
//	        transaction_start_timestamp_ms int64
//
// Petrel writes value version 0 for transactions of TV1 clients (no epoch bump per
// transaction), exactly as before Transactions V2, and version 1 (flexible, with
// KIP-890's tagged fields: PreviousProducerId, NextProducerId,
// ClientTransactionVersion, NextProducerEpoch) for those of TV2 clients or with a
// producer id rotation pending (tv2.go); it reads both.
const (
	keyVersion   = 0
	valueVersion = 0
)

// ErrInvalidRecord is a __transaction_state record Petrel cannot decode.
var ErrInvalidRecord = errors.New("txn: invalid __transaction_state record")

func encodeKey(id string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version, k.TransactionalID = keyVersion, id
	return k.AppendTo(nil)
}

func decodeKey(b []byte) (string, error) {
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(b); err != nil {
		return "", fmt.Errorf("%w: key: %v", ErrInvalidRecord, err)
	}
	if k.Version != keyVersion {
		return "", fmt.Errorf("%w: key version %d", ErrInvalidRecord, k.Version)
	}
	return k.TransactionalID, nil
}

func encodeValue(t *Transaction) []byte {
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion
	v.ProducerID, v.ProducerEpoch = t.ProducerID, t.ProducerEpoch
	v.TimeoutMillis = int32(t.Timeout / time.Millisecond)
	v.State = kmsg.TransactionState(t.State)
	for _, tp := range t.SortedPartitions() {
		if n := len(v.Topics); n > 0 && v.Topics[n-1].Topic == tp.Topic {
			v.Topics[n-1].Partitions = append(v.Topics[n-1].Partitions, tp.Partition)
			continue
		}
		v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: tp.Topic, Partitions: []int32{tp.Partition}})
	}
	writeTV2Fields(&v, t)
	v.LastUpdateTimestamp = t.LastUpdate.UnixMilli()
	v.StartTimestamp = -1
	if !t.StartTime.IsZero() {
		v.StartTimestamp = t.StartTime.UnixMilli()
	}
	return v.AppendTo(nil)
}

func decodeValue(id string, b []byte) (*Transaction, error) {
	var v kmsg.TxnMetadataValue
	if len(b) < 2 {
		return nil, fmt.Errorf("%w: value of %d bytes", ErrInvalidRecord, len(b))
	}
	if err := v.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("%w: value: %v", ErrInvalidRecord, err)
	}
	if v.Version < 0 || v.Version > 1 {
		return nil, fmt.Errorf("%w: value version %d", ErrInvalidRecord, v.Version)
	}
	st := State(v.State)
	if !st.valid() || v.TimeoutMillis < 0 {
		return nil, fmt.Errorf("%w: state %d, timeout %d", ErrInvalidRecord, v.State, v.TimeoutMillis)
	}
	t := &Transaction{
		ID: id, ProducerID: v.ProducerID, LastProducerID: -1, NextProducerID: -1, ProducerEpoch: v.ProducerEpoch,
		LastProducerEpoch: noProducerEpoch, Timeout: time.Duration(v.TimeoutMillis) * time.Millisecond,
		State: st, Partitions: map[TopicPartition]struct{}{}, LastUpdate: time.UnixMilli(v.LastUpdateTimestamp),
	}
	if v.Version >= 1 {
		readTV2Fields(t, &v)
	}
	if v.StartTimestamp >= 0 && st != StateEmpty {
		t.StartTime = time.UnixMilli(v.StartTimestamp)
	}
	for _, topic := range v.Topics {
		for _, p := range topic.Partitions {
			t.Partitions[TopicPartition{topic.Topic, p}] = struct{}{}
		}
	}
	return t, nil
}

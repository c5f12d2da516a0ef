package txn

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Describe answers one id of DescribeTransactions (key 65): its producer, state,
// timeout, start and partitions; an unknown id is TRANSACTIONAL_ID_NOT_FOUND.
func (s *Shard) Describe(id string) kmsg.DescribeTransactionsResponseTransactionState {
	out := kmsg.NewDescribeTransactionsResponseTransactionState()
	out.TransactionalID = id
	t, ok := s.txns[id]
	if !ok || t.ProducerEpoch == noProducerEpoch {
		out.ErrorCode = kerr.TransactionalIDNotFound.Code
		out.ProducerID, out.ProducerEpoch, out.StartTimestamp = -1, -1, -1
		return out
	}
	out.State, out.TimeoutMillis = t.State.String(), int32(t.Timeout/time.Millisecond)
	out.ProducerID, out.ProducerEpoch, out.StartTimestamp = t.ProducerID, t.ProducerEpoch, -1
	if !t.StartTime.IsZero() {
		out.StartTimestamp = t.StartTime.UnixMilli()
	}
	for _, tp := range t.SortedPartitions() {
		if n := len(out.Topics); n > 0 && out.Topics[n-1].Topic == tp.Topic {
			out.Topics[n-1].Partitions = append(out.Topics[n-1].Partitions, tp.Partition)
			continue
		}
		rt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
		rt.Topic, rt.Partitions = tp.Topic, []int32{tp.Partition}
		out.Topics = append(out.Topics, rt)
	}
	return out
}

// List answers ListTransactions (key 66) for this shard: the ids whose state is in
// states and producer id in producerIDs (empty filters match all) and, when minDuration
// is positive, whose ongoing transaction started at least that long before now.
func (s *Shard) List(now time.Time, states []string, producerIDs []int64, minDuration time.Duration) []kmsg.ListTransactionsResponseTransactionState {
	var out []kmsg.ListTransactionsResponseTransactionState
	for _, id := range s.IDs() {
		t := s.txns[id]
		switch {
		case t.ProducerEpoch == noProducerEpoch:
			continue
		case len(states) > 0 && !slices.Contains(states, t.State.String()):
			continue
		case len(producerIDs) > 0 && !slices.Contains(producerIDs, t.ProducerID):
			continue
		case minDuration > 0 && (t.StartTime.IsZero() || now.Sub(t.StartTime) < minDuration):
			continue
		}
		l := kmsg.NewListTransactionsResponseTransactionState()
		l.TransactionalID, l.ProducerID, l.TransactionState = id, t.ProducerID, t.State.String()
		out = append(out, l)
	}
	return out
}

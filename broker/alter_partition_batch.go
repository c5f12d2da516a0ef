package broker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/replication"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxISRChangesPerRequest bounds one AlterPartition request: the controller commits a
// request's changes as one metadata entry, which holds at most 10,000 records.
const maxISRChangesPerRequest = 5000

// isrBatcher sends this broker's ISR changes to the controller the way Kafka's
// AlterPartitionManager does: at most one AlterPartition request in flight, and every
// change submitted meanwhile goes into the next request, at most one per partition. So
// after a broker rejoins, the leaders of thousands of partitions it replicates ask for
// it back in the ISR in a few requests (a few metadata entries), not one request and
// one Raft entry each.
type isrBatcher struct {
	b        *Broker
	mu       sync.Mutex
	pending  []*isrItem // submitted, not yet sent; guarded by mu
	sending  bool       // a sender goroutine runs; guarded by mu
	inFlight int        // changes in the request being sent; guarded by mu
}

// isrItem is one submitted change and where its outcome goes.
type isrItem struct {
	change replication.ISRChange
	before int // the ISR size the change starts from (-1: unknown), for the metrics
	done   chan error
}

// submit queues change for the next AlterPartition request and waits for its outcome.
func (q *isrBatcher) submit(change replication.ISRChange) error {
	before := -1
	if lp := q.b.partitions.get(change.Topic, change.Partition); lp != nil {
		before = len(lp.State().ISR)
	}
	it := &isrItem{change: change, before: before, done: make(chan error, 1)}
	q.mu.Lock()
	q.pending = append(q.pending, it)
	start := !q.sending
	q.sending = true
	q.mu.Unlock()
	if start {
		go q.run()
	}
	select {
	case err := <-it.done:
		return err
	case <-q.b.stop:
		return controller.ErrNotController
	}
}

// run sends batches until nothing is pending.
func (q *isrBatcher) run() {
	for {
		q.mu.Lock()
		batch := q.takeLocked()
		q.inFlight = len(batch)
		if len(batch) == 0 {
			q.sending = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		q.send(batch)
	}
}

// takeLocked removes the next request's changes from pending, in submission order: at
// most maxISRChangesPerRequest, and a partition's later change waits for the request
// after (the controller checks each against the image before the request).
func (q *isrBatcher) takeLocked() []*isrItem {
	type key struct {
		topic     string
		partition int32
	}
	seen := map[key]bool{}
	var batch, rest []*isrItem
	for _, it := range q.pending {
		k := key{it.change.Topic, it.change.Partition}
		if seen[k] || len(batch) == maxISRChangesPerRequest {
			rest = append(rest, it)
			continue
		}
		seen[k] = true
		batch = append(batch, it)
	}
	q.pending = rest
	return batch
}

// send sends one AlterPartition request for batch and hands each change its outcome.
func (q *isrBatcher) send(batch []*isrItem) {
	b := q.b
	ctx, cancel := b.waitTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Version 3 (KIP-903): topics by id, and each ISR member with the broker epoch its
	// fetches came from, so that the controller refuses a member whose incarnation is
	// gone. Each change goes under its replica's topic id, so that a change of a
	// deleted topic is never applied to one re-created under its name; one without an
	// id takes the image's, and a topic missing from the image the zero id, which the
	// controller answers UNKNOWN_TOPIC_OR_PARTITION, as it would the name.
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = 3
	req.BrokerID, req.BrokerEpoch = b.cfg.NodeID, b.brokerEpoch.Load()
	im := b.Image()
	type topicKey struct {
		name string
		id   [16]byte
	}
	topics := map[topicKey]int{}  // index in req.Topics
	at := make([]int, len(batch)) // each change's topic, as an index in req.Topics
	for n, it := range batch {
		c := it.change
		id := c.TopicID
		if tp := im.Topic(c.Topic); id == ([16]byte{}) && tp != nil {
			id = tp.ID // a change without an id: the image's
		}
		i, ok := topics[topicKey{c.Topic, id}]
		if !ok {
			i = len(req.Topics)
			topics[topicKey{c.Topic, id}] = i
			t := kmsg.NewAlterPartitionRequestTopic()
			t.Topic, t.TopicID = c.Topic, id
			req.Topics = append(req.Topics, t)
		}
		at[n] = i
		p := kmsg.NewAlterPartitionRequestTopicPartition()
		p.Partition, p.LeaderEpoch, p.PartitionEpoch, p.NewISR = c.Partition, c.LeaderEpoch, c.PartitionEpoch, c.ISR
		p.NewEpochISR = isrWithEpochs(c, b.cfg.NodeID, req.BrokerEpoch)
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	resp, err := b.controllerCall(ctx, req)
	if err == nil {
		err = kerr.ErrorForCode(resp.(*kmsg.AlterPartitionResponse).ErrorCode) // request-level: retried
	}
	if err != nil {
		for _, it := range batch {
			it.done <- err
		}
		return
	}
	codes := make([]map[int32]int16, len(req.Topics)) // by index in req.Topics
	for i, t := range resp.(*kmsg.AlterPartitionResponse).Topics {
		if i >= len(req.Topics) || t.TopidID != req.Topics[i].TopicID {
			continue // not as asked: the answer lacks the asked one, below
		}
		codes[i] = map[int32]int16{} // the answer's topics are the request's, in order
		for _, p := range t.Partitions {
			codes[i][p.Partition] = p.ErrorCode
		}
	}
	for n, it := range batch {
		code, ok := codes[at[n]][it.change.Partition]
		if !ok {
			it.done <- fmt.Errorf("alter partition: the answer lacks %s-%d", it.change.Topic, it.change.Partition)
			continue
		}
		it.done <- b.isrOutcome(it.change, it.before, code)
	}
}

// isrOutcome maps a partition's AlterPartition error code to what replication expects
// (replication.Options.AlterISR) and counts ISR shrinks, expansions and refusals.
func (b *Broker) isrOutcome(change replication.ISRChange, before int, code int16) error {
	if code != 0 {
		b.metrics.ISRUpdateFailed()
	}
	switch code {
	case 0:
		switch {
		case before < 0:
		case len(change.ISR) < before:
			b.metrics.ISRShrunk()
		case len(change.ISR) > before:
			b.metrics.ISRExpanded()
		}
		return nil
	case kerr.IneligibleReplica.Code, kerr.OperationNotAttempted.Code:
		return fmt.Errorf("%w: %v", replication.ErrISRChangeNotAttempted, kerr.ErrorForCode(code))
	case kerr.FencedLeaderEpoch.Code, kerr.InvalidUpdateVersion.Code, kerr.UnknownTopicOrPartition.Code, kerr.InvalidRequest.Code:
		return fmt.Errorf("%w: %v", replication.ErrISRChangeRejected, kerr.ErrorForCode(code))
	default:
		return kerr.ErrorForCode(code)
	}
}

// isrWithEpochs is change's ISR as AlterPartition v3 names it: each member with the
// broker epoch the leader knows for it (change.BrokerEpochs, -1 unknown), and this
// broker, the leader, with its own (self, selfEpoch).
func isrWithEpochs(change replication.ISRChange, self int32, selfEpoch int64) []kmsg.AlterPartitionRequestTopicPartitionNewEpochISR {
	out := make([]kmsg.AlterPartitionRequestTopicPartitionNewEpochISR, len(change.ISR))
	for i, id := range change.ISR {
		out[i] = kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		out[i].BrokerID, out[i].BrokerEpoch = id, -1
		switch {
		case id == self:
			out[i].BrokerEpoch = selfEpoch
		case i < len(change.BrokerEpochs):
			out[i].BrokerEpoch = change.BrokerEpochs[i]
		}
	}
	return out
}

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
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = 1
	req.BrokerID, req.BrokerEpoch = b.cfg.NodeID, b.brokerEpoch.Load()
	topics := map[string]int{} // topic name -> index in req.Topics
	for _, it := range batch {
		c := it.change
		i, ok := topics[c.Topic]
		if !ok {
			i = len(req.Topics)
			topics[c.Topic] = i
			t := kmsg.NewAlterPartitionRequestTopic()
			t.Topic = c.Topic
			req.Topics = append(req.Topics, t)
		}
		p := kmsg.NewAlterPartitionRequestTopicPartition()
		p.Partition, p.LeaderEpoch, p.PartitionEpoch, p.NewISR = c.Partition, c.LeaderEpoch, c.PartitionEpoch, c.ISR
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
	codes := map[string]map[int32]int16{}
	for _, t := range resp.(*kmsg.AlterPartitionResponse).Topics {
		if codes[t.Topic] == nil {
			codes[t.Topic] = map[int32]int16{}
		}
		for _, p := range t.Partitions {
			codes[t.Topic][p.Partition] = p.ErrorCode
		}
	}
	for _, it := range batch {
		code, ok := codes[it.change.Topic][it.change.Partition]
		if !ok {
			it.done <- fmt.Errorf("alter partition: the answer lacks %s-%d", it.change.Topic, it.change.Partition)
			continue
		}
		it.done <- b.isrOutcome(it.change, it.before, code)
	}
}

// isrOutcome maps a partition's AlterPartition error code to what replication expects
// (replication.Options.AlterISR) and counts ISR shrinks and expansions.
func (b *Broker) isrOutcome(change replication.ISRChange, before int, code int16) error {
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

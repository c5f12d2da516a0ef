package broker

// The broker's shareleader.Persister (Kafka's DefaultStatePersister and
// PersisterStateManager): a request's share partitions are split by share
// coordinator — the leader of the __share_group_state partition of each key
// "groupId:topicId:partition" — and sent there, in process when that is this broker,
// else over the peer connection (peer_clients.go). Partitions answered
// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or COORDINATOR_NOT_AVAILABLE, or
// whose coordinator could not be reached, are tried again with a doubling backoff
// (shareRetryBackoff up to shareRetryBackoffMax) against the image of the moment
// while ctx lasts; then they keep their last code. The answers are gathered in the
// request's order. __share_group_state is created on first need.

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/petrel-broker/petrel/coordinator"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/shareleader"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The persister's retry backoff, doubling from shareRetryBackoff (Kafka's
// PersisterStateManager backs off likewise, from 100 ms).
const (
	shareRetryBackoff    = 50 * time.Millisecond
	shareRetryBackoffMax = time.Second
)

// errPersisterStopped is a persister call after the broker began shutting down.
var errPersisterStopped = errors.New("broker: share persister stopped: the broker is shutting down")

// sharePersister is the broker's shareleader.Persister.
type sharePersister struct{ b *Broker }

var _ shareleader.Persister = (*sharePersister)(nil)

func newSharePersister(b *Broker) *sharePersister { return &sharePersister{b: b} }

// persist runs req (one of keys 83–87) through the share coordinators: split by
// coordinator, sent (local answers it on this broker's), retried, gathered in req's
// order.
func persist[Req kmsg.Request](ctx context.Context, p *sharePersister, req Req,
	local func(*coordinator.ShareCoordinator, Req) <-chan kmsg.Response) (kmsg.Response, error) {
	b := p.b
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-b.stop:
		return nil, errPersisterStopped
	default:
	}
	group, parts := coordinator.ShareRequestParts(req)
	answers := map[coordinator.SharePart]coordinator.ShareAnswer{} // by topic id and partition
	pending := map[coordinator.SharePart]bool{}                    // not answered yet, or retriably
	code := kerr.InvalidGroupID.Code                               // of a partition without an answer
	if group != "" {
		code = kerr.CoordinatorNotAvailable.Code
		for _, part := range parts {
			pending[where(part)] = true
		}
	}
	backoff := shareRetryBackoff
	for len(pending) > 0 {
		im := b.Image()
		if im.Topic(shareStateTopic) == nil {
			im = b.ensureShareStateTopic(ctx)
		}
		byNode := map[int32]map[coordinator.SharePart]bool{}
		for part := range pending {
			node, ok := shareCoordinatorOf(im, coordinator.ShareCoordinatorKey(group, part.TopicID, part.Partition))
			if !ok {
				continue // no coordinator yet: COORDINATOR_NOT_AVAILABLE, tried again
			}
			if byNode[node] == nil {
				byNode[node] = map[coordinator.SharePart]bool{}
			}
			byNode[node][part] = true
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for node, keep := range byNode {
			sub := coordinator.ShareRequestSubset(req, func(part coordinator.SharePart) bool { return keep[where(part)] }).(Req)
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := sendShare(ctx, b, node, sub, local)
				if err != nil {
					b.logger.Debug("share persister: coordinator not reached", "node", node, "api", sub.Key(), "error", err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for _, a := range coordinator.ShareResponseAnswers(resp) {
					if !keep[a.Part] {
						continue
					}
					answers[a.Part] = a
					if !retriableShareCode(a.Code) {
						delete(pending, a.Part)
					}
				}
			}()
		}
		wg.Wait()
		if len(pending) == 0 {
			break
		}
		select {
		case <-ctx.Done():
		case <-b.stop:
		case <-time.After(backoff):
			backoff = min(2*backoff, shareRetryBackoffMax)
			continue
		}
		break
	}
	return coordinator.ShareResponse(req, func(_ int, part coordinator.SharePart, entry coordinator.ShareEntry) {
		if a, ok := answers[where(part)]; ok {
			entry.SetAnswer(a)
		} else {
			entry.SetError(code, nil)
		}
	}), nil
}

// where is a request's partition by topic id and partition alone, as answers name it.
func where(p coordinator.SharePart) coordinator.SharePart {
	return coordinator.SharePart{TopicID: p.TopicID, Partition: p.Partition}
}

// retriableShareCode reports the codes after which the persister asks again: the
// coordinator moved, is loading, or could not write.
func retriableShareCode(code int16) bool {
	switch code {
	case kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code:
		return true
	}
	return false
}

// shareCoordinatorOf is the broker leading key's __share_group_state partition, if
// it has a live one.
func shareCoordinatorOf(im *metadata.Image, key string) (int32, bool) {
	t := im.Topic(shareStateTopic)
	if t == nil || len(t.Partitions) == 0 {
		return -1, false
	}
	pt := t.Partitions[coordinator.ShareStatePartitionFor(key, int32(len(t.Partitions)))]
	br := im.Brokers[pt.Leader]
	if pt.Leader < 0 || br == nil || br.Fenced {
		return -1, false
	}
	return pt.Leader, true
}

// sendShare asks node's share coordinator: in process (local) when node is this
// broker.
func sendShare[Req kmsg.Request](ctx context.Context, b *Broker, node int32, req Req,
	local func(*coordinator.ShareCoordinator, Req) <-chan kmsg.Response) (kmsg.Response, error) {
	if node != b.cfg.NodeID {
		return b.peers.do(ctx, node, req)
	}
	select {
	case resp := <-local(b.shareStates, req):
		return resp, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-b.stop:
		return nil, errPersisterStopped
	}
}

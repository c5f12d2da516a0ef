package broker

// The group coordinator's side of the share state (KIP-932): a share group's
// heartbeat asks the share coordinator to initialize the share state of the
// partitions its members subscribe to (group.Config.OnShareInitialize), and the
// answer goes back to the group's shard, whose next heartbeats then assign those
// partitions; DeleteGroups of a share group deletes its share state first, and the
// group only once that succeeded (coordinator.GroupConfig.DeleteShareGroupState).
// Both go through the share coordinators' API (shareleader.Persister, Kafka's
// DefaultStatePersister), on a goroutine of their own: the shard never waits for a
// share coordinator.
//
// Without a Persister (Broker.sharePersister nil) an initialization fails with
// COORDINATOR_NOT_AVAILABLE, so the group asks again at the next heartbeat as Kafka's
// does when the share coordinator is not reachable, and so does the deletion of a
// share group with share state.

import (
	"context"
	"time"

	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/shareleader"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareStateTimeout bounds one InitializeShareGroupState or DeleteShareGroupState
// through the Persister (Kafka's persister retries within the request timeout,
// 30000 ms by default).
const shareStateTimeout = 30 * time.Second

// persister returns the share coordinators' API, nil until one is wired.
func (b *Broker) persister() shareleader.Persister {
	b.sharePersisterMu.RLock()
	defer b.sharePersisterMu.RUnlock()
	return b.sharePersister
}

// setPersister wires the share coordinators' API (tests: a fake).
func (b *Broker) setPersister(p shareleader.Persister) {
	b.sharePersisterMu.Lock()
	defer b.sharePersisterMu.Unlock()
	b.sharePersister = p
}

// goShareState runs fn on a goroutine of its own with a context bounded by
// shareStateTimeout and the broker's stop, unless the broker is stopping; it reports
// whether fn was started.
func (b *Broker) goShareState(name string, fn func(ctx context.Context)) bool {
	select {
	case <-b.stop:
		return false
	default:
	}
	b.goLoop(name, func() {
		ctx, cancel := b.waitTimeout(context.Background(), shareStateTimeout)
		defer cancel()
		fn(ctx)
	})
	return true
}

// onShareInitialize is group.Config.OnShareInitialize: InitializeShareGroupState for
// init's partitions (state epoch the group epoch, start offset -1: the group's
// share.auto.offset.reset decides), then each partition's outcome back to the group's
// shard (coordinator.GroupCoordinator.ShareGroupStateInitialized).
func (b *Broker) onShareInitialize(init group.ShareInitialize) {
	b.goShareState("share-initialize", func(ctx context.Context) {
		ok, failed, code := b.initializeShareState(ctx, init)
		if len(ok) > 0 {
			b.groups.ShareGroupStateInitialized(init.GroupID, ok, 0)
		}
		if len(failed) > 0 {
			b.logger.Debug("share state not initialized; the group asks again", "group", init.GroupID, "error", kerr.ErrorForCode(code))
			b.groups.ShareGroupStateInitialized(init.GroupID, failed, code)
		}
	})
}

// initializeShareState asks the Persister to initialize init's partitions and splits
// them into those initialized and those that failed, with the first failure's code.
func (b *Broker) initializeShareState(ctx context.Context, init group.ShareInitialize) (ok, failed []group.ShareTopicPartitions, code int16) {
	p := b.persister()
	if p == nil {
		return nil, init.Topics, kerr.CoordinatorNotAvailable.Code
	}
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = init.GroupID
	for _, t := range init.Topics {
		rt := kmsg.NewInitializeShareGroupStateRequestTopic()
		rt.TopicID = t.TopicID
		for _, part := range t.Partitions {
			rp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
			rp.Partition, rp.StateEpoch, rp.StartOffset = part, init.GroupEpoch, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := p.InitializeState(ctx, req)
	if err != nil {
		return nil, init.Topics, kerr.CoordinatorNotAvailable.Code
	}
	codes := map[[16]byte]map[int32]int16{}
	for _, t := range resp.Topics {
		if codes[t.TopicID] == nil {
			codes[t.TopicID] = map[int32]int16{}
		}
		for _, rp := range t.Partitions {
			codes[t.TopicID][rp.Partition] = rp.ErrorCode
		}
	}
	for _, t := range init.Topics {
		good, bad := group.ShareTopicPartitions{TopicID: t.TopicID, TopicName: t.TopicName}, group.ShareTopicPartitions{TopicID: t.TopicID, TopicName: t.TopicName}
		for _, part := range t.Partitions {
			c, answered := codes[t.TopicID][part]
			if !answered {
				c = kerr.UnknownServerError.Code // not answered: ask again
			}
			if c == 0 {
				good.Partitions = append(good.Partitions, part)
				continue
			}
			if code == 0 {
				code = c
			}
			bad.Partitions = append(bad.Partitions, part)
		}
		if len(good.Partitions) > 0 {
			ok = append(ok, good)
		}
		if len(bad.Partitions) > 0 {
			failed = append(failed, bad)
		}
	}
	return ok, failed, code
}

// deleteShareGroupState is coordinator.GroupConfig.DeleteShareGroupState: an empty
// share group's state goes to DeleteShareGroupState before the group is deleted, as
// Kafka 4.2's GroupCoordinatorService.deleteGroups does; done gets 0 once every
// partition's state is deleted, else the first partition's code (a share coordinator
// moving or unreachable: COORDINATOR_NOT_AVAILABLE, for the admin client to retry).
func (b *Broker) deleteShareGroupState(groupID string, state []group.ShareTopicPartitions, done func(code int16)) {
	p := b.persister()
	if p == nil {
		done(kerr.CoordinatorNotAvailable.Code)
		return
	}
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = groupID
	for _, t := range state {
		rt := kmsg.NewDeleteShareGroupStateRequestTopic()
		rt.TopicID = t.TopicID
		for _, part := range t.Partitions {
			rp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
			rp.Partition = part
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	started := b.goShareState("share-delete", func(ctx context.Context) {
		resp, err := p.DeleteState(ctx, req)
		if err != nil {
			b.logger.Debug("share state of a share group not deleted; the group stays", "group", groupID, "error", err)
			done(kerr.CoordinatorNotAvailable.Code)
			return
		}
		for _, t := range resp.Topics {
			for _, rp := range t.Partitions {
				if code := rp.ErrorCode; code != 0 {
					b.logger.Debug("share state of a share group not deleted; the group stays", "group", groupID,
						"partition", rp.Partition, "error", kerr.ErrorForCode(code))
					switch code {
					case kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code:
						code = kerr.CoordinatorNotAvailable.Code
					}
					done(code)
					return
				}
			}
		}
		done(0)
	})
	if !started {
		done(kerr.CoordinatorNotAvailable.Code) // the broker is stopping
	}
}

package broker

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// lifecycleLoop registers this broker with the controller and keeps its session with
// heartbeats every broker.heartbeat.interval.ms (every 200 ms while unregistered or
// fenced, so that a restarted broker is unfenced promptly). A registered, fenced broker
// also heartbeats as soon as its image reaches its registration (the offset the
// controller unfences it at), rather than on the next tick, and a registered broker
// heartbeats at once when it has peers' refused connections to report
// (controller/peer_refusals.go).
// A new controller is registered with or heartbeaten at once, not on the next tick.
func (b *Broker) lifecycleLoop() {
	interval := b.cfg.durationMs("broker.heartbeat.interval.ms")
	epoch := int64(-1)
	fenced := true
	caughtUpSent := int64(-1) // the epoch whose caught-up heartbeat was sent
	reported := uint64(0)     // the metadata offset the last heartbeat carried
	var lastSent time.Time
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		changed := b.machine.Changed()
		leaderChanged := b.leaders.changed()
		watch := epoch >= 0 && fenced && caughtUpSent != epoch
		if !watch || b.Image().Offset < uint64(epoch) {
			var catchUp, applied <-chan struct{}
			if watch {
				catchUp = changed
			} else if epoch >= 0 && !fenced {
				applied = changed
			}
			var refusals <-chan struct{}
			if epoch >= 0 {
				refusals = b.refusals.Notify()
			}
			select {
			case <-b.stop:
				return
			case <-b.draining:
				return
			case <-catchUp:
				continue // look at the new image
			case <-applied:
				// Report a newly applied metadata offset promptly (at most one
				// heartbeat per appliedReportGap): the controller answers an admin
				// change only once every live broker has applied it (admin_visibility.go).
				if b.Image().Offset <= reported {
					continue
				}
				if wait := appliedReportGap - time.Since(lastSent); wait > 0 {
					timer.Reset(wait)
					continue
				}
			case <-refusals:
			case <-leaderChanged:
				if b.ControllerID() < 0 {
					continue // no controller to talk to yet
				}
			case <-timer.C:
			}
		}
		if b.shuttingDown.Load() {
			return // controlledShutdown heartbeats from here on
		}
		ctx, cancel := b.waitTimeout(context.Background(), 5*time.Second)
		if epoch < 0 {
			epoch = b.register(ctx)
		} else {
			if b.Image().Offset >= uint64(epoch) {
				caughtUpSent = epoch
			}
			reported, lastSent = b.Image().Offset, time.Now()
			hb, err := b.heartbeat(ctx, epoch, false)
			switch {
			case err == nil:
				fenced = hb.IsFenced
				if fenced {
					b.trace.countHeartbeat()
				} else {
					b.trace.mark("heartbeat_unfenced")
				}
			case errors.Is(err, kerr.StaleBrokerEpoch), errors.Is(err, kerr.BrokerIDNotRegistered):
				epoch = -1
			}
		}
		cancel()
		b.brokerEpoch.Store(epoch)
		if epoch < 0 || fenced {
			timer.Reset(200 * time.Millisecond)
		} else {
			timer.Reset(interval)
		}
	}
}

// register sends this broker's registration; it returns the broker epoch or -1.
func (b *Broker) register(ctx context.Context) int64 {
	b.trace.mark("registration_sent")
	resp, err := b.controllerCall(ctx, b.registrationRequest())
	if err != nil {
		b.logger.Debug("registration not done", "error", err)
		return -1
	}
	r := resp.(*kmsg.BrokerRegistrationResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		b.logger.Debug("registration refused", "error", err)
		return -1
	}
	b.trace.mark("registration_answered")
	b.logger.Info("registered with the controller", "broker_epoch", r.BrokerEpoch)
	b.persistRegistration(r.BrokerEpoch)
	return r.BrokerEpoch
}

// heartbeat sends one heartbeat; Kafka errors come back as kerr errors.
func (b *Broker) heartbeat(ctx context.Context, epoch int64, wantShutdown bool) (*kmsg.BrokerHeartbeatResponse, error) {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.Version = 1
	req.BrokerID, req.BrokerEpoch = b.cfg.NodeID, epoch
	req.CurrentMetadataOffset = int64(b.Image().Offset)
	req.WantShutdown = wantShutdown
	if req.CurrentMetadataOffset >= epoch {
		b.trace.mark("heartbeat_caught_up_sent")
	}
	refused := b.refusals.Take(time.Now())
	if len(refused) > 0 {
		req.UnknownTags.Set(refusedPeersTag, encodeRefusedPeers(refused))
	}
	resp, err := b.controllerCall(ctx, req)
	if err != nil {
		b.refusals.Requeue(refused)
		return nil, err
	}
	hb := resp.(*kmsg.BrokerHeartbeatResponse)
	return hb, kerr.ErrorForCode(hb.ErrorCode)
}

// controlledShutdown asks the controller to move this broker's leaderships away and
// waits until it leads nothing (or ctx ends), as Kafka's controlled shutdown does. It
// reports whether the controller said so, and whether it said so because the whole
// cluster is stopping (clusterStoppingTag: nothing was moved).
func (b *Broker) controlledShutdown(ctx context.Context) (moved, clusterStopping bool) {
	epoch := b.brokerEpoch.Load()
	if epoch < 0 || b.metadataStoreFailure() != nil {
		return false, false // unregistered, or no controller to ask (metadata_store.go)
	}
	for ctx.Err() == nil {
		// No shorter bound than ctx: the controller answers once the entry moving this
		// broker's leaderships is committed, which takes seconds at 100,000 partitions,
		// and a retry would only queue behind it.
		hb, err := b.heartbeat(ctx, epoch, true)
		if err == nil && hb.ShouldShutdown {
			if _, ok := petrelTag(&hb.UnknownTags, clusterStoppingTag); ok {
				b.logger.Info("controlled shutdown: every other broker is stopping too; leaderships stay")
				return false, true
			}
			b.logger.Info("controlled shutdown: this broker leads nothing now")
			return true, false
		}
		if err != nil && (errors.Is(err, kerr.StaleBrokerEpoch) || errors.Is(err, kerr.BrokerIDNotRegistered)) {
			return false, false
		}
		if err != nil && !slices.ContainsFunc(b.Image().UnfencedBrokerIDs(), func(id int32) bool { return id != b.cfg.NodeID }) {
			// No controller answers (the last broker of a cluster stopped one node
			// after another: its Raft quorum went with the others), and no other
			// broker is unfenced to take a leadership: the controller's answer could
			// only be that leaderships stay, so waiting for one is needless.
			b.logger.Info("controlled shutdown: no controller answers and no other broker is unfenced; leaderships stay", "error", err)
			return false, true
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	return false, false
}

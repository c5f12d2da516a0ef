package broker

// BrokerHeartbeat (key 63), v0-2, internal. Heartbeats are not Raft writes: the
// controller keeps the last one in memory and writes records only on changes. A fenced
// broker whose metadata offset has reached its registration is unfenced (and leaderless
// partitions whose ISR holds it get a leader). WantShutdown starts a controlled shutdown:
// the broker is fenced and its leaderships moved in one entry, with as many of its ISR
// removals as fit in 10,000 records; it is answered ShouldShutdown once it leads nothing,
// and the controller writes the remaining ISR removals after (controller/shutdown.go,
// DESIGN.md invariant C8). When every other unfenced broker asked for a controlled
// shutdown too (the whole cluster is stopping), it is answered ShouldShutdown at once
// with nothing written and Petrel's clusterStoppingTag set. Unknown brokers get BROKER_ID_NOT_REGISTERED, a
// wrong epoch STALE_BROKER_EPOCH. Petrel's refusedPeersTag reports peers whose listener
// refused the sender's connections; the controller probes them and may fence them
// before their session expires (controller/evidence.go).

import (
	"context"
	"fmt"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerInternalAPI(kmsg.BrokerHeartbeat, 0, 2, func(b *Broker, ctx context.Context, req *rpc.Request) rpc.Result {
		detachTags(&req.Body.(*kmsg.BrokerHeartbeatRequest).UnknownTags) // answered on another goroutine
		return b.respondFromController(ctx, req)
	}, apiOpts{
		authorize:  clusterOnly(auth.OpClusterAction),
		controller: onController((*Broker).brokerHeartbeat),
		fillError:  fillErrorBrokerHeartbeat,
		isNotController: func(resp kmsg.Response) bool {
			return resp.(*kmsg.BrokerHeartbeatResponse).ErrorCode == kerr.NotController.Code
		},
		sessionConn: true,
	})
}

// brokerHeartbeat runs on the controller.
func (b *Broker) brokerHeartbeat(ctx context.Context, r *kmsg.BrokerHeartbeatRequest) *kmsg.BrokerHeartbeatResponse {
	resp := r.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	id := r.BrokerID
	im := b.Image()
	br := im.Brokers[id]
	switch {
	case br == nil:
		resp.ErrorCode = b.errorCodeLogged(fmt.Errorf("%w: %d", controller.ErrBrokerNotRegistered, id), "heartbeat")
		return resp
	case br.Epoch != r.BrokerEpoch:
		resp.ErrorCode = b.errorCodeLogged(fmt.Errorf("%w: broker %d sent %d, registered %d", controller.ErrStaleBrokerEpoch, id, r.BrokerEpoch, br.Epoch), "heartbeat")
		return resp
	}
	b.ctrl.Sessions().Heartbeat(id, r.CurrentMetadataOffset, r.WantShutdown, time.Now())
	if refused, err := refusedPeersOf(r); err != nil {
		b.logger.Debug("heartbeat's refused peers ignored", "broker", id, "error", err)
	} else if len(refused) > 0 {
		b.ctrl.RefusedPeersReported(id, refused) // never waits (controller/evidence.go)
	}
	resp.IsCaughtUp = r.CurrentMetadataOffset >= br.Epoch
	var err error
	switch {
	case r.WantShutdown:
		var stopping bool
		im, stopping, err = b.ctrl.ControlledShutdown(ctx, id, r.BrokerEpoch)
		if err == nil {
			resp.ShouldShutdown = stopping || im.LeaderCount(id) == 0
		}
		if stopping {
			resp.UnknownTags.Set(clusterStoppingTag, []byte{1})
		}
	case br.Fenced && !r.WantFence && resp.IsCaughtUp && !b.ctrl.Sessions().InControlledShutdown(id):
		im, err = b.ctrl.Unfence(ctx, id, r.BrokerEpoch)
		if err == nil && !im.Brokers[id].Fenced {
			b.logger.Info("broker unfenced", "broker", id, "epoch", r.BrokerEpoch)
		}
	}
	if err != nil {
		resp.ErrorCode = b.errorCodeLogged(err, "heartbeat")
		return resp
	}
	if cur := im.Brokers[id]; cur != nil {
		resp.IsFenced = cur.Fenced
	}
	return resp
}

// fillErrorBrokerHeartbeat is BrokerHeartbeat's apiOpts.fillError.
func fillErrorBrokerHeartbeat(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	r := resp.(*kmsg.BrokerHeartbeatResponse)
	r.ErrorCode = code
}

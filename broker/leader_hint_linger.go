package broker

// A stopping leader's last answers (KIP-951, issue P22 item 3). The controlled shutdown
// moves this broker's leaderships; the broker then keeps reading and answering its
// connections a little longer before the drain closes them, so that the producers and
// consumers still sending to it get NOT_LEADER_OR_FOLLOWER (or FENCED_LEADER_EPOCH)
// naming the new leader (leader_hints.go) rather than a closed connection. A client
// whose connection closes under it learns nothing: franz-go then retries, finds the
// port closed and waits for a metadata refresh, which comes at most once per
// metadata.max.age's minimum (MetadataMinAge, 5 s) — the multi-second first ack the
// controlled-stop benchmark showed in one round in five.

import (
	"context"
	"slices"
	"time"
)

// hintLinger is how long a stopping broker that led partitions keeps answering once its
// own metadata names the new leaders: a producer or consumer that is sending at all sends
// again well within it (kgo's default linger is 10 ms; a parked fetch is answered at
// the move), and every graceful stop of a leader takes this much longer.
const hintLinger = 250 * time.Millisecond

// lingerForHints waits, in Shutdown after the controlled shutdown, until this broker's
// image names another leader for every partition and its replicas follow that image
// (so that its answers are NOT_LEADER_OR_FOLLOWER with the new leader), then for
// hintLinger; ctx bounds both. moved is whether the broker led any partition when it
// began to stop and the controlled shutdown moved them: otherwise there is no client
// to redirect, nor, without another unfenced broker, a leader to name.
func (b *Broker) lingerForHints(ctx context.Context, moved bool) {
	if !moved {
		return
	}
	self := b.cfg.NodeID
	for {
		changed := b.machine.Changed()
		im := b.Image()
		if im.LeaderCount(self) == 0 {
			b.partitions.waitReconciled(ctx, im.Offset)
			if !slices.ContainsFunc(im.UnfencedBrokerIDs(), func(id int32) bool { return id != self }) {
				return
			}
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
	t := time.NewTimer(hintLinger)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

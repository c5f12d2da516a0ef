package broker

import (
	"context"
	"fmt"

	"github.com/petrel-broker/petrel/rpc"
)

// connectFetcher connects a follower's fetcher to leader id: an inline client
// (rpc.DialInline), whose one fetch in flight is read by the fetcher goroutine itself
// rather than handed over by a reader goroutine — one goroutine wake-up less on the
// follower for every fetch answer, which with acks=all is on the path of every
// produce answer.
func (b *Broker) connectFetcher(ctx context.Context, id int32) (*rpc.Client, error) {
	addr, ok := b.interBrokerAddr(b.Image().Brokers[id])
	if !ok {
		return nil, fmt.Errorf("broker %d has no known address", id)
	}
	clientID := fmt.Sprintf("%s%d", forwardedClientPrefix, b.cfg.NodeID)
	cl, err := rpc.DialInline(ctx, b.interBroker.dialFunc(b.dial, clientID), addr, clientID)
	b.noteDialError(id, err) // a refusal is reported to the controller (peer_reports.go)
	return cl, err
}

package broker

// peerClients keeps one broker-to-broker connection per peer for the transaction
// paths that talk to other brokers on every transaction (KIP-890 verification,
// WriteTxnMarkers), instead of dialling for each request; replica verification keeps
// a second set of its own (Broker.verifyPeers). A connection that fails is
// dropped and the next request dials again; close shuts them all and refuses new ones.

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// errPeersClosed is a request after the broker began shutting down.
var errPeersClosed = errors.New("broker: peer connections closed")

type peerClient struct {
	addr string
	cl   *rpc.Client
}

type peerClients struct {
	b      *Broker
	mu     sync.Mutex
	peers  map[int32]peerClient // guarded by mu
	closed bool                 // guarded by mu
}

func newPeerClients(b *Broker) *peerClients {
	return &peerClients{b: b, peers: map[int32]peerClient{}}
}

// do sends req to broker id over its kept connection (dialling one when there is none
// or it failed) and drops the connection on a transport error.
func (pc *peerClients) do(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	cl, err := pc.get(ctx, id)
	if err != nil {
		return nil, err
	}
	resp, err := cl.Do(ctx, req)
	if err != nil && cl.Err() != nil {
		pc.drop(id, cl)
	}
	return resp, err
}

func (pc *peerClients) get(ctx context.Context, id int32) (*rpc.Client, error) {
	br, ok := pc.b.Image().Brokers[id]
	if !ok || len(br.Listeners) == 0 {
		return nil, fmt.Errorf("broker %d has no known address", id)
	}
	addr := fmt.Sprintf("%s:%d", br.Listeners[0].Host, br.Listeners[0].Port)
	pc.mu.Lock()
	p, ok := pc.peers[id]
	closed := pc.closed
	pc.mu.Unlock()
	if closed {
		return nil, errPeersClosed
	}
	if ok && p.addr == addr && p.cl.Err() == nil {
		return p.cl, nil
	}
	cl, err := pc.b.connectToBroker(ctx, id) // no lock held across the dial
	if err != nil {
		return nil, err
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.closed {
		cl.Close()
		return nil, errPeersClosed
	}
	if old, ok := pc.peers[id]; ok && old.cl != p.cl {
		// Another request dialled meanwhile: keep that one.
		if old.addr == addr && old.cl.Err() == nil {
			cl.Close()
			return old.cl, nil
		}
	}
	if ok {
		p.cl.Close()
	}
	pc.peers[id] = peerClient{addr: addr, cl: cl}
	return cl, nil
}

func (pc *peerClients) drop(id int32, cl *rpc.Client) {
	pc.mu.Lock()
	if p, ok := pc.peers[id]; ok && p.cl == cl {
		delete(pc.peers, id)
	}
	pc.mu.Unlock()
	cl.Close()
}

// close closes every kept connection; later requests fail with errPeersClosed.
func (pc *peerClients) close() {
	pc.mu.Lock()
	peers := pc.peers
	pc.peers, pc.closed = map[int32]peerClient{}, true
	pc.mu.Unlock()
	for _, p := range peers {
		p.cl.Close()
	}
}

package broker

// AddRaftVoter (key 80), v0-1, internal: a node that is not among the initial voters asks
// any member to add it to the metadata quorum as a non-voter (an observer that holds the
// whole image). Members forward it to the controller, which calls raft.AddNonvoter. The
// request's listener named "raft" carries the joiner's Raft address.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerInternalAPI(kmsg.AddRaftVoter, 0, 1, func(b *Broker, ctx context.Context, req *rpc.Request) rpc.Result {
		return b.respondFromController(ctx, req)
	})
}

// raftListenerName names the joiner's Raft address in AddRaftVoter.
const raftListenerName = "raft"

// addNonvoter runs on the controller.
func (b *Broker) addNonvoter(ctx context.Context, r *kmsg.AddRaftVoterRequest) *kmsg.AddRaftVoterResponse {
	resp := r.ResponseKind().(*kmsg.AddRaftVoterResponse)
	var addr string
	for _, l := range r.Listeners {
		if l.Name == raftListenerName {
			addr = fmt.Sprintf("%s:%d", l.Host, l.Port)
		}
	}
	if addr == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ErrorMessage = errorMessage(errors.New("no raft listener given"))
		return resp
	}
	f := b.raft.raft.AddNonvoter(raft.ServerID(strconv.Itoa(int(r.VoterID))), raft.ServerAddress(addr), 0, 10*time.Second)
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) {
			err = fmt.Errorf("%w: %v", ErrNotController, err)
		}
		resp.ErrorCode = b.errorCodeLogged(err, "add raft non-voter")
		resp.ErrorMessage = errorMessage(err)
		return resp
	}
	b.logger.Info("added a raft non-voter", "node", r.VoterID, "raft", addr)
	return resp
}

// joinLoop asks the members in JoinAddrs to add this node as a non-voter until Raft
// replicates to it.
func (b *Broker) joinLoop() {
	for attempt := 0; ; attempt++ {
		if b.raft.raft.LastIndex() > 0 {
			return // the leader is replicating to us: we are a member
		}
		for _, addr := range b.cfg.JoinAddrs {
			if b.askToJoin(addr) {
				return
			}
		}
		select {
		case <-b.stop:
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (b *Broker) askToJoin(addr string) bool {
	ctx, cancel := b.waitTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cl, err := b.dialBroker(ctx, addr, fmt.Sprintf("petrel-join-%d", b.cfg.NodeID))
	if err != nil {
		return false
	}
	defer cl.Close()
	req := kmsg.NewPtrAddRaftVoterRequest()
	req.Version = 0
	req.VoterID = b.cfg.NodeID
	req.TimeoutMillis = 10000
	host, port := splitHostPort(b.RaftAddr())
	l := kmsg.NewAddRaftVoterRequestListener()
	l.Name, l.Host, l.Port = raftListenerName, host, uint16(port)
	req.Listeners = append(req.Listeners, l)
	resp, err := cl.Do(ctx, req)
	if err != nil {
		return false
	}
	r := resp.(*kmsg.AddRaftVoterResponse)
	if r.ErrorCode != 0 {
		b.logger.Debug("join refused", "member", addr, "error", kerr.ErrorForCode(r.ErrorCode))
		return false
	}
	b.logger.Info("joined the metadata quorum as a non-voter", "via", addr)
	return true
}

// isObserver reports whether this node joins as a non-voter.
func (b *Broker) isObserver() bool { return isObserver(&b.cfg) }

package broker

// AddRaftVoter (key 80), v0-1, internal: a node that is not among the initial voters asks
// any member to add it to the metadata quorum as a non-voter (an observer that holds the
// whole image). Members forward it to the controller, which calls raft.AddNonvoter. The
// request's listener named "raft" carries the joiner's Raft address.
//
// Rules:
//   - Alter on the cluster, checked where the request arrives (Kafka's
//     ControllerApis.handleAddRaftVoter: authorizeClusterOperation(ALTER)); without it,
//     CLUSTER_AUTHORIZATION_FAILED and nothing changes. The check is authorizedCluster's,
//     after the API's rule (clusterOnlyCode): a broker's request (auth.Checks.IsBroker)
//     passes it, as the copy a member forwards to the controller must.
//   - A node id already in the Raft configuration, voter or not, is refused with
//     DUPLICATE_VOTER (126; Kafka's AddVoterHandler: "The voter id ... is already part
//     of the set of voters"), whatever address it names: hashicorp/raft's AddNonvoter
//     would rewrite that member's address, and two such requests left a 3-node cluster
//     without a controller. Kafka changes a voter only by removing and adding it.
//   - A new id at an address a member already has is INVALID_REQUEST (Petrel's rule:
//     hashicorp/raft refuses a configuration with one address twice, which would
//     otherwise come back as an unknown error).
//   - The change applies only to the configuration it was checked against
//     (AddNonvoter's prevIndex), so two requests cannot both pass the checks.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerInternalAPI(kmsg.AddRaftVoter, 0, 1, func(b *Broker, ctx context.Context, req *rpc.Request) rpc.Result {
		if !b.authorizedCluster(req, auth.OpAlter) {
			resp := req.Body.ResponseKind().(*kmsg.AddRaftVoterResponse)
			resp.SetVersion(req.Version)
			resp.ErrorCode, resp.ErrorMessage = errorCode(ErrClusterAuthorizationFailed), errorMessage(ErrClusterAuthorizationFailed)
			return rpc.Respond(resp)
		}
		return b.respondFromController(ctx, req)
	}, apiOpts{
		authorize:  clusterOnlyCode(auth.OpAlter),
		controller: onController((*Broker).addNonvoter),
		fillError:  fillErrorAddRaftVoter,
		isNotController: func(resp kmsg.Response) bool {
			return resp.(*kmsg.AddRaftVoterResponse).ErrorCode == kerr.NotController.Code
		},
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
	id := serverID(r.VoterID)
	cf := b.raft.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return addNonvoterFailed(b, resp, err)
	}
	if code, msg := checkNewRaftMember(cf.Configuration(), id, raft.ServerAddress(addr)); code != 0 {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return resp
	}
	f := b.raft.raft.AddNonvoter(id, raft.ServerAddress(addr), cf.Index(), 10*time.Second)
	if err := f.Error(); err != nil {
		// Another change won the race for this configuration: answer as if this
		// request had come second.
		if now := b.raft.raft.GetConfiguration(); now.Error() == nil {
			if code, msg := checkNewRaftMember(now.Configuration(), id, raft.ServerAddress(addr)); code != 0 {
				resp.ErrorCode, resp.ErrorMessage = code, &msg
				return resp
			}
		}
		return addNonvoterFailed(b, resp, err)
	}
	if b.raft.removed != nil {
		b.raft.removed.readded(raft.ServerAddress(addr))
	}
	b.logger.Info("added a raft non-voter", "node", r.VoterID, "raft", addr)
	return resp
}

// checkNewRaftMember refuses an id already in the configuration (DUPLICATE_VOTER) and
// an address a member already has (INVALID_REQUEST); 0 lets the addition through.
func checkNewRaftMember(cf raft.Configuration, id raft.ServerID, addr raft.ServerAddress) (int16, string) {
	for _, s := range cf.Servers {
		switch {
		case s.ID == id:
			return kerr.DuplicateVoter.Code, fmt.Sprintf("node %s is already a member of the metadata quorum (%s at %s); "+
				"its address cannot be changed by AddRaftVoter", id, s.Suffrage, s.Address)
		case s.Address == addr:
			return kerr.InvalidRequest.Code, fmt.Sprintf("the Raft address %s is already node %s's", addr, s.ID)
		}
	}
	return 0, ""
}

// addNonvoterFailed answers a Raft failure: NOT_CONTROLLER when this node no longer
// leads (or is handing the leadership over), the error table's code otherwise.
func addNonvoterFailed(b *Broker, resp *kmsg.AddRaftVoterResponse, err error) *kmsg.AddRaftVoterResponse {
	if raftLeadershipMoving(err) {
		err = fmt.Errorf("%w: %v", controller.ErrNotController, err)
	}
	resp.ErrorCode = b.errorCodeLogged(err, "add raft non-voter")
	resp.ErrorMessage = errorMessage(err)
	return resp
}

// joinLoop asks the members in JoinAddrs to add this node as a non-voter until Raft
// replicates to it. Refusals are DEBUG (a member that is not the controller, a quorum
// still starting); a node still outside the quorum after raftPeerWarnAfter is WARN,
// then once per raftPeerWarnEvery, with the last refusal.
func (b *Broker) joinLoop() {
	start := time.Now()
	var warned time.Time
	for {
		if b.raft.raft.LastIndex() > 0 {
			return // the leader is replicating to us: we are a member
		}
		var lastErr error
		for _, addr := range b.cfg.JoinAddrs {
			err := b.askToJoin(addr)
			if err == nil {
				return
			}
			lastErr = fmt.Errorf("%s: %w", addr, err)
		}
		if now := time.Now(); warningDue(start, warned, now) {
			warned = now
			b.logger.Warn("not a member of the metadata quorum yet: no member in --join has added this node; retrying",
				"waited", now.Sub(start).Round(time.Second), "join", strings.Join(b.cfg.JoinAddrs, ","), "last_error", lastErr)
		}
		select {
		case <-b.stop:
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// askToJoin asks the member at addr to add this node as a non-voter; nil when it did.
func (b *Broker) askToJoin(addr string) error {
	ctx, cancel := b.waitTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cl, err := b.dialBroker(ctx, addr, fmt.Sprintf("petrel-join-%d", b.cfg.NodeID))
	if err != nil {
		return err
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
		return err
	}
	r := resp.(*kmsg.AddRaftVoterResponse)
	if r.ErrorCode != 0 {
		err := kerr.ErrorForCode(r.ErrorCode)
		b.logger.Debug("join refused", "member", addr, "error", err)
		return err
	}
	b.logger.Info("joined the metadata quorum as a non-voter", "via", addr)
	return nil
}

// isObserver reports whether this node joins as a non-voter.
func (b *Broker) isObserver() bool { return isObserver(&b.cfg) }

// fillErrorAddRaftVoter is AddRaftVoter's apiOpts.fillError.
func fillErrorAddRaftVoter(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	r := resp.(*kmsg.AddRaftVoterResponse)
	r.ErrorCode, r.ErrorMessage = code, errorMessage(cause)
}

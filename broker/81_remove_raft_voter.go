package broker

// RemoveRaftVoter (key 81), v0: removes a voter from the metadata quorum (KIP-853;
// `petrel cluster remove-broker` sends it for a voter, after UnregisterBroker). Any
// broker forwards it to the controller, which calls raft.RemoveServer; the leader then
// stops replicating to it, and a leader that removes itself steps down once the new
// configuration is committed. Petrel has no directory ids: VoterDirectoryID is ignored.
// A removed voter that still ran would keep its Raft state while outside the quorum
// (and a leader that removes itself shuts its Raft down), so only a stopped voter is
// removed.
//
// Rules:
//   - Alter on the cluster (Kafka's ControllerApis.handleRemoveRaftVoter); without it,
//     CLUSTER_AUTHORIZATION_FAILED.
//   - A cluster id other than the cluster's is INCONSISTENT_CLUSTER_ID; an id that is
//     not a voter is VOTER_NOT_FOUND (Kafka's RemoveVoterHandler).
//   - Petrel's rule, where Kafka removes a running voter too: a voter that runs (the
//     controller itself, or a registered, unfenced broker or one still heartbeating)
//     is refused with INVALID_REQUEST ("stop it first"). Removing a stopped voter
//     never costs a quorum that has one: the remaining voters' majority shrinks with it.
//   - The change applies only to the configuration it was checked against.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/controller"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.RemoveRaftVoter, 0, 0, (*Broker).respondFromController, apiOpts{
		authorize: clusterOnly(auth.OpAlter),
		controller: func(b *Broker, _ context.Context, req kmsg.Request) kmsg.Response {
			return b.removeRaftVoter(req.(*kmsg.RemoveRaftVoterRequest))
		},
		fillError: fillErrorRemoveRaftVoter,
		isNotController: func(resp kmsg.Response) bool {
			return resp.(*kmsg.RemoveRaftVoterResponse).ErrorCode == kerr.NotController.Code
		},
	})
}

// removeRaftVoter runs on the controller.
func (b *Broker) removeRaftVoter(r *kmsg.RemoveRaftVoterRequest) *kmsg.RemoveRaftVoterResponse {
	resp := r.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
	fail := func(code int16, msg string) *kmsg.RemoveRaftVoterResponse {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return resp
	}
	im := b.Image()
	if r.ClusterID != nil && *r.ClusterID != "" && *r.ClusterID != im.ClusterID {
		return fail(kerr.InconsistentClusterID.Code, fmt.Sprintf("the cluster id is %s, not %s", im.ClusterID, *r.ClusterID))
	}
	cf := b.raft.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return removeVoterFailed(b, resp, err)
	}
	id := serverID(r.VoterID)
	var voter *raft.Server
	for _, s := range cf.Configuration().Servers {
		if s.Suffrage == raft.Voter && s.ID == id {
			voter = &s
		}
	}
	if voter == nil {
		return fail(kerr.VoterNotFound.Code, fmt.Sprintf("Cannot remove voter %d from the set of voters: it is not a voter", r.VoterID))
	}
	br := im.Brokers[r.VoterID]
	if r.VoterID == b.cfg.NodeID || br != nil && !br.Fenced ||
		b.ctrl.Sessions().Heartbeating(r.VoterID, time.Now(), b.cfg.durationMs("broker.session.timeout.ms")) {
		return fail(kerr.InvalidRequest.Code, fmt.Sprintf("voter %d is running; stop it first", r.VoterID))
	}
	if err := b.raft.removeServer(*voter, cf.Index()); err != nil {
		return removeVoterFailed(b, resp, err)
	}
	b.logger.Info("removed a raft voter", "node", r.VoterID)
	return resp
}

// parseServerID is a Raft server id as a node id; -1 when it is not a number.
func parseServerID(s raft.ServerID) int32 {
	var id int32
	if _, err := fmt.Sscan(string(s), &id); err != nil {
		return -1
	}
	return id
}

// removeVoterFailed answers a Raft failure: NOT_CONTROLLER when this node no longer
// leads, the error table's code otherwise.
func removeVoterFailed(b *Broker, resp *kmsg.RemoveRaftVoterResponse, err error) *kmsg.RemoveRaftVoterResponse {
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
		err = fmt.Errorf("%w: %v", controller.ErrNotController, err)
	}
	resp.ErrorCode, resp.ErrorMessage = b.errorCodeLogged(err, "remove raft voter"), errorMessage(err)
	return resp
}

// fillErrorRemoveRaftVoter is RemoveRaftVoter's apiOpts.fillError.
func fillErrorRemoveRaftVoter(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	r := resp.(*kmsg.RemoveRaftVoterResponse)
	r.ErrorCode, r.ErrorMessage = code, errorMessage(cause)
}

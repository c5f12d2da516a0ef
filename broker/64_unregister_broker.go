package broker

// UnregisterBroker (key 64), v0: decommissions a broker (`petrel cluster remove-broker`,
// Kafka's `kafka-cluster.sh unregister`). Any broker forwards it to the controller, which
// removes the broker's registration, and its per-broker dynamic configs, from the
// metadata log in one entry, and, when the broker is a Raft non-voter (a node that
// joined with --join), removes it from the Raft configuration too, so the Raft leader
// stops replicating to it. After that no Metadata, DescribeCluster, DescribeQuorum answer
// or broker metric names it. A voter stays in the quorum: RemoveRaftVoter (81) removes
// it.
//
// Rules:
//   - Alter on the cluster (Kafka's ControllerApis.handleUnregisterBroker); without it,
//     CLUSTER_AUTHORIZATION_FAILED.
//   - An unknown id is BROKER_ID_NOT_REGISTERED (Kafka's), unless it is still a Raft
//     non-voter: an earlier removal that stopped between the two steps is completed.
//   - Petrel's rules, where Kafka unregisters any broker: a broker that is running (not
//     fenced, or heartbeating) is refused with INVALID_REQUEST ("stop it first": it would
//     register again at its next heartbeat), and so is a broker that still holds replicas,
//     naming how many and the first (move them with `petrel reassign` first): a partition
//     must never list a broker that no longer exists.

import (
	"cmp"
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
	registerAPI(kmsg.UnregisterBroker, 0, 0, (*Broker).respondFromController, apiOpts{
		authorize:  clusterOnly(auth.OpAlter),
		controller: onController((*Broker).unregisterBroker),
		fillError:  fillErrorUnregisterBroker,
		isNotController: func(resp kmsg.Response) bool {
			return resp.(*kmsg.UnregisterBrokerResponse).ErrorCode == kerr.NotController.Code
		},
		adminChange: true,
	})
}

// raftMembershipTimeout bounds a change of the Raft configuration.
const raftMembershipTimeout = 10 * time.Second

// unregisterBroker runs on the controller: the controller decides
// (controller/unregister.go), then the broker leaves the Raft configuration too.
func (b *Broker) unregisterBroker(ctx context.Context, r *kmsg.UnregisterBrokerRequest) *kmsg.UnregisterBrokerResponse {
	resp := r.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	id := r.BrokerID
	err := b.ctrl.UnregisterBroker(ctx, id)
	removedNonvoter := false
	if err == nil || errors.Is(err, controller.ErrBrokerNotRegistered) {
		var rerr error
		removedNonvoter, rerr = b.removeRaftNonvoter(id)
		if removedNonvoter {
			err = nil // an unknown id still in Raft completes an earlier removal
		}
		err = cmp.Or(err, rerr)
	}
	if err != nil {
		if errors.Is(err, raft.ErrNotLeader) {
			err = fmt.Errorf("%w: %v", controller.ErrNotController, err)
		}
		resp.ErrorCode, resp.ErrorMessage = b.errorCodeLogged(err, "unregister broker"), errorMessage(err)
		return resp
	}
	b.ctrl.Sessions().Forget(id)
	b.logger.Info("broker unregistered", "broker", id, "raft_non_voter_removed", removedNonvoter)
	return resp
}

// removeServer removes member s from the Raft configuration at index prevIndex (the
// configuration the caller checked) and records it as removed.
func (n *raftNode) removeServer(s raft.Server, prevIndex uint64) error {
	if err := n.raft.RemoveServer(s.ID, prevIndex, raftMembershipTimeout).Error(); err != nil {
		return err
	}
	if n.removed != nil {
		n.removed.add(s.Address)
	}
	return nil
}

// removeRaftNonvoter removes node id from the Raft configuration when it is a non-voter
// there; it reports whether it did.
func (b *Broker) removeRaftNonvoter(id int32) (bool, error) {
	cf := b.raft.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return false, err
	}
	for _, s := range cf.Configuration().Servers {
		if s.ID != serverID(id) || s.Suffrage == raft.Voter {
			continue
		}
		if err := b.raft.removeServer(s, cf.Index()); err != nil {
			return false, err
		}
		return true, nil
	}
	return false, nil
}

// fillErrorUnregisterBroker is UnregisterBroker's apiOpts.fillError.
func fillErrorUnregisterBroker(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	r := resp.(*kmsg.UnregisterBrokerResponse)
	r.ErrorCode, r.ErrorMessage = code, errorMessage(cause)
}

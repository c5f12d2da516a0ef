package broker

// DescribeQuorum (key 55), v0-2: the metadata quorum, as Kafka's kafka-metadata-quorum
// shows it. Any broker forwards it to the controller, which answers with the Raft leader
// (itself), the controller epoch (Raft term), its applied metadata offset as the high
// watermark, the voters and the non-voters (observers), each with the metadata offset it
// last reported in a heartbeat and the time of that heartbeat. v2 lists each member's
// Raft address as the listener "raft".

import (
	"context"
	"strconv"

	"github.com/hashicorp/raft"
	"github.com/petrel-broker/petrel/auth"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.DescribeQuorum, 0, 2, (*Broker).respondFromController, apiOpts{
		authorize: clusterOnlyCode(auth.OpDescribe),
		controller: func(b *Broker, _ context.Context, req kmsg.Request) kmsg.Response {
			return b.describeQuorum(req.(*kmsg.DescribeQuorumRequest))
		},
		fillError: fillErrorDescribeQuorum,
		isNotController: func(resp kmsg.Response) bool {
			return resp.(*kmsg.DescribeQuorumResponse).ErrorCode == kerr.NotController.Code
		},
	})
}

// metadataTopic is the name Kafka gives its metadata log.
const metadataTopic = "__cluster_metadata"

// describeQuorum runs on the controller.
func (b *Broker) describeQuorum(r *kmsg.DescribeQuorumRequest) *kmsg.DescribeQuorumResponse {
	resp := r.ResponseKind().(*kmsg.DescribeQuorumResponse)
	rt := kmsg.NewDescribeQuorumResponseTopic()
	rt.Topic = metadataTopic
	rp := kmsg.NewDescribeQuorumResponseTopicPartition()
	rp.LeaderID = b.cfg.NodeID
	rp.LeaderEpoch = int32(b.ControllerEpoch())
	rp.HighWatermark = int64(b.Image().Offset)
	cf := b.raft.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		rp.ErrorCode = kerr.UnknownServerError.Code
		rp.ErrorMessage = errorMessage(err)
	}
	offsets := b.ctrl.Sessions().Offsets()
	offsets[b.cfg.NodeID] = int64(b.Image().Offset)
	for _, s := range cf.Configuration().Servers {
		id, err := strconv.Atoi(string(s.ID))
		if err != nil {
			continue
		}
		st := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		st.ReplicaID = int32(id)
		st.LogEndOffset = -1
		if off, ok := offsets[int32(id)]; ok {
			st.LogEndOffset = off
		}
		st.LastFetchTimestamp, st.LastCaughtUpTimestamp = -1, -1
		if s.Suffrage == raft.Voter {
			rp.CurrentVoters = append(rp.CurrentVoters, st)
		} else {
			rp.Observers = append(rp.Observers, st)
		}
		node := kmsg.NewDescribeQuorumResponseNode()
		node.NodeID = int32(id)
		host, port := splitHostPort(string(s.Address))
		l := kmsg.NewDescribeQuorumResponseNodeListener()
		l.Name, l.Host, l.Port = raftListenerName, host, uint16(port)
		node.Listeners = append(node.Listeners, l)
		resp.Nodes = append(resp.Nodes, node)
	}
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	return resp
}

// fillErrorDescribeQuorum is DescribeQuorum's apiOpts.fillError.
func fillErrorDescribeQuorum(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	r := resp.(*kmsg.DescribeQuorumResponse)
	r.ErrorCode, r.ErrorMessage = code, errorMessage(cause)
}

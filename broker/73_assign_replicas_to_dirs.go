package broker

// AssignReplicasToDirs (key 73), v0, internal (KIP-858): Petrel has one log directory,
// so brokers use this request only to report replicas they cannot open or write, as
// assigned to Kafka's LOST directory (offline_replicas.go). The controller takes each
// out of its ISR and leadership (controller.AssignReplicasToDirs), in one Raft entry.
// Directories other than LOST change nothing. A stale broker epoch is
// STALE_BROKER_EPOCH; unknown partitions are UNKNOWN_TOPIC_OR_PARTITION.

import (
	"context"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// lostDirectoryID is Kafka's DirectoryId.LOST: replicas in a failed directory.
var lostDirectoryID = [16]byte{15: 1}

func init() {
	registerInternalAPI(kmsg.AssignReplicasToDirs, 0, 0, (*Broker).respondFromController, apiOpts{
		authorize:  clusterOnly(auth.OpClusterAction),
		controller: onController((*Broker).assignReplicasToDirs),
		fillError:  fillErrorAssignReplicasToDirs,
		isNotController: func(resp kmsg.Response) bool {
			return resp.(*kmsg.AssignReplicasToDirsResponse).ErrorCode == kerr.NotController.Code
		},
	})
}

// assignReplicasToDirs runs on the controller (controller/offline.go decides).
func (b *Broker) assignReplicasToDirs(ctx context.Context, r *kmsg.AssignReplicasToDirsRequest) *kmsg.AssignReplicasToDirsResponse {
	resp := r.ResponseKind().(*kmsg.AssignReplicasToDirsResponse)
	var replicas []controller.ReplicaDir
	for _, d := range r.Directories {
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				ref := metadata.ReplicaRef{TopicID: metadata.Uuid(t.TopicID), Partition: p.Partition}
				replicas = append(replicas, controller.ReplicaDir{Ref: ref, Lost: d.ID == lostDirectoryID})
			}
		}
	}
	unknown, err := b.ctrl.AssignReplicasToDirs(ctx, r.BrokerID, r.BrokerEpoch, replicas)
	if err != nil {
		resp.ErrorCode = b.errorCodeLogged(err, "assign replicas to dirs")
		return resp
	}
	for _, d := range r.Directories {
		rd := kmsg.NewAssignReplicasToDirsResponseDirectory()
		rd.ID = d.ID
		for _, t := range d.Topics {
			rt := kmsg.NewAssignReplicasToDirsResponseDirectoryTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewAssignReplicasToDirsResponseDirectoryTopicPartition()
				rp.Partition = p.Partition
				if unknown[metadata.ReplicaRef{TopicID: metadata.Uuid(t.TopicID), Partition: p.Partition}] {
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rd.Topics = append(rd.Topics, rt)
		}
		resp.Directories = append(resp.Directories, rd)
	}
	return resp
}

// fillErrorAssignReplicasToDirs is AssignReplicasToDirs's apiOpts.fillError.
func fillErrorAssignReplicasToDirs(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	r := resp.(*kmsg.AssignReplicasToDirsResponse)
	r.ErrorCode = code
}

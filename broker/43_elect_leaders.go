package broker

// ElectLeaders (key 43), v0-2. PREFERRED (v0's only type): move a partition to its first
// replica if that replica is in the ISR and unfenced (ELECTION_NOT_NEEDED when it leads
// already, PREFERRED_LEADER_NOT_AVAILABLE otherwise). UNCLEAN (v1+): elect a leader for
// a partition that has none, from the ISR if a member is live, else any live replica
// (ELECTION_NOT_NEEDED when it has a leader, ELIGIBLE_LEADERS_NOT_AVAILABLE when no
// replica is live). Null topics means every partition; then, as in Kafka, partitions
// that need no election are left out of the answer. Elections are committed in entries
// of at most 10,000 records, planned against the current image.

import (
	"context"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.ElectLeaders, 0, 2, (*Broker).respondFromController, apiOpts{
		authorize:  authorizeElectLeaders,
		controller: onController((*Broker).electLeaders),
		fillError:  fillErrorElectLeaders,
		isNotController: func(resp kmsg.Response) bool {
			return resp.(*kmsg.ElectLeadersResponse).ErrorCode == kerr.NotController.Code
		},
		adminChange: true,
		ownTimeout:  true,
	})
}

// electLeaders runs on the controller: it decodes the partitions, asks the controller
// (controller/elections.go) and encodes the outcomes by topic.
func (b *Broker) electLeaders(ctx context.Context, r *kmsg.ElectLeadersRequest) *kmsg.ElectLeadersResponse {
	resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
	typ := controller.ElectionType(r.ElectionType)
	if typ != controller.ElectPreferred && typ != controller.ElectUnclean {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	var wanted []metadata.TopicPartitionID // nil: every partition
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			wanted = append(wanted, metadata.TopicPartitionID{Topic: t.Topic, Partition: p})
		}
	}
	if r.Topics != nil && wanted == nil {
		wanted = []metadata.TopicPartitionID{}
	}
	timeout := max(time.Duration(r.TimeoutMillis)*time.Millisecond, time.Second)
	cctx, cancel := b.waitTimeout(ctx, timeout)
	defer cancel()
	byTopic := map[string]int{}
	for _, res := range b.ctrl.ElectLeaders(cctx, wanted, typ) {
		tp := res.Partition
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(resp.Topics)
			byTopic[tp.Topic] = i
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = tp.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewElectLeadersResponseTopicPartition()
		rp.Partition = tp.Partition
		if res.Err != nil {
			rp.ErrorCode = b.errorCodeLogged(res.Err, "elect leaders")
			rp.ErrorMessage = errorMessage(res.Err)
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return resp
}

// authorizeElectLeaders is ElectLeaders's authorization rule (checkRequest).
func authorizeElectLeaders(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.ElectLeadersRequest)
	z := checksOf(b, req)
	if z.clusterOK(auth.OpAlter) {
		return authzDecision{}
	}
	// Each partition is answered too, which NOT_CONTROLLER's answer leaves out.
	return z.whole(func(resp kmsg.Response) {
		out := resp.(*kmsg.ElectLeadersResponse)
		fillErrorElectLeaders(r, out, codeClusterAuthz, nil)
		for _, t := range r.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, codeClusterAuthz
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	})
}

// fillErrorElectLeaders is ElectLeaders's apiOpts.fillError.
func fillErrorElectLeaders(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	r := resp.(*kmsg.ElectLeadersResponse)
	r.ErrorCode = code
}

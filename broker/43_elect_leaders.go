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
	"errors"
	"fmt"
	"sync"
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
		authorize:   authorizeElectLeaders,
		controller:  onController((*Broker).electLeaders),
		fillError:   fillErrorElectLeaders,
		adminChange: true,
		ownTimeout:  true,
	})
}

// Kafka's election types.
const (
	electionPreferred int8 = 0
	electionUnclean   int8 = 1
)

// electLeaders runs on the controller.
func (b *Broker) electLeaders(ctx context.Context, r *kmsg.ElectLeadersRequest) *kmsg.ElectLeadersResponse {
	resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
	if r.ElectionType != electionPreferred && r.ElectionType != electionUnclean {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	all := r.Topics == nil
	var wanted []metadata.TopicPartitionID
	im := b.Image()
	if all {
		for _, name := range im.TopicNames() {
			for _, p := range im.Topics[name].Partitions {
				wanted = append(wanted, metadata.TopicPartitionID{Topic: name, Partition: p.ID})
			}
		}
	} else {
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				wanted = append(wanted, metadata.TopicPartitionID{Topic: t.Topic, Partition: p})
			}
		}
	}
	timeout := max(time.Duration(r.TimeoutMillis)*time.Millisecond, time.Second)
	cctx, cancel := b.waitTimeout(ctx, timeout)
	defer cancel()
	results := b.runElections(cctx, wanted, r.ElectionType)
	byTopic := map[string]int{}
	for _, tp := range wanted {
		err := results[tp]
		if all && errors.Is(err, metadata.ErrElectionNotNeeded) {
			continue
		}
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
		if err != nil {
			rp.ErrorCode = b.errorCodeLogged(err, "elect leaders")
			rp.ErrorMessage = errorMessage(err)
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return resp
}

// runElections elects leaders for partitions, in entries of at most
// controller.MaxRecordsPerUserOp changes, and returns each partition's outcome (nil: elected).
func (b *Broker) runElections(ctx context.Context, partitions []metadata.TopicPartitionID, electionType int8) map[metadata.TopicPartitionID]error {
	results := make(map[metadata.TopicPartitionID]error, len(partitions))
	for start := 0; start < len(partitions); start += controller.MaxRecordsPerUserOp {
		chunk := partitions[start:min(start+controller.MaxRecordsPerUserOp, len(partitions))]
		// The plan runs on the controller goroutine, possibly after ctx ended here: it
		// hands its outcome over under mu.
		var mu sync.Mutex
		var before *metadata.Image
		var planned []metadata.Record
		outcome := map[metadata.TopicPartitionID]error{}
		_, err := b.ctrl.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
			var records []metadata.Record
			decided := map[metadata.TopicPartitionID]error{}
			for _, tp := range chunk {
				change, err := planElection(im, tp, electionType)
				decided[tp] = err
				if err == nil {
					records = append(records, change)
				}
			}
			mu.Lock()
			before, planned, outcome = im, records, decided
			mu.Unlock()
			return records, nil
		})
		mu.Lock()
		for _, tp := range chunk {
			res, decided := outcome[tp]
			switch {
			case !decided || (res == nil && err != nil):
				results[tp] = err
			default:
				results[tp] = res
			}
		}
		if err == nil && before != nil {
			b.ctrl.LogUncleanElections(before, planned)
		}
		mu.Unlock()
	}
	return results
}

// planElection decides one partition's election against im.
func planElection(im *metadata.Image, tp metadata.TopicPartitionID, electionType int8) (metadata.PartitionChangeRecord, error) {
	t := im.Topic(tp.Topic)
	if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
		return metadata.PartitionChangeRecord{}, fmt.Errorf("%w: %s-%d", metadata.ErrUnknownPartition, tp.Topic, tp.Partition)
	}
	p := t.Partitions[tp.Partition]
	if electionType == electionUnclean {
		return metadata.UncleanLeaderChange(im, t, p)
	}
	return metadata.PreferredLeaderChange(im, t, p)
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

package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzClusterOpsRequests decodes arbitrary bytes as CreatePartitions,
// IncrementalAlterConfigs, AlterConfigs, ElectLeaders, DeleteRecords and DescribeLogDirs
// bodies and runs each decodable one through the controller side of its handler on a
// live one-node broker: an answer, never a panic or a hang. CreatePartitions and the
// config requests are made validate-only, so iterations stay cheap and independent.
// Run with
//
//	go test -run XXX -fuzz FuzzClusterOpsRequests -fuzztime 2000x ./broker/
func FuzzClusterOpsRequests(f *testing.F) {
	seeds := []kmsg.Request{}
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cpt := kmsg.NewCreatePartitionsRequestTopic()
	cpt.Topic, cpt.Count = "fz", 3
	a := kmsg.NewCreatePartitionsRequestTopicAssignment()
	a.Replicas = []int32{0}
	cpt.Assignment = append(cpt.Assignment, a, a)
	cp.Topics = append(cp.Topics, cpt)
	seeds = append(seeds, cp)
	ia := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, typ := range []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker} {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = typ, "fz"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = "cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("delete")
		r.Configs = append(r.Configs, c)
		ia.Resources = append(ia.Resources, r)
	}
	seeds = append(seeds, ia)
	ac := kmsg.NewPtrAlterConfigsRequest()
	acr := kmsg.NewAlterConfigsRequestResource()
	acr.ResourceType, acr.ResourceName = kmsg.ConfigResourceTypeBroker, ""
	acc := kmsg.NewAlterConfigsRequestResourceConfig()
	acc.Name, acc.Value = "log.retention.ms", kmsg.StringPtr("1000")
	acr.Configs = append(acr.Configs, acc)
	ac.Resources = append(ac.Resources, acr)
	seeds = append(seeds, ac)
	el := kmsg.NewPtrElectLeadersRequest()
	elt := kmsg.NewElectLeadersRequestTopic()
	elt.Topic, elt.Partitions = "fz", []int32{0, 5, -1}
	el.Topics = append(el.Topics, elt)
	seeds = append(seeds, el)
	dr := kmsg.NewPtrDeleteRecordsRequest()
	drt := kmsg.NewDeleteRecordsRequestTopic()
	drt.Topic = "fz"
	drp := kmsg.NewDeleteRecordsRequestTopicPartition()
	drp.Offset = -1
	drt.Partitions = append(drt.Partitions, drp)
	dr.Topics = append(dr.Topics, drt)
	seeds = append(seeds, dr)
	seeds = append(seeds, kmsg.NewPtrDescribeLogDirsRequest())
	for i, s := range seeds {
		for _, v := range []int16{0, s.MaxVersion()} {
			s.SetVersion(v)
			f.Add(uint8(i), v, s.AppendTo(nil))
		}
	}
	b := startTestBroker(f, "", nil)
	mustCreateTopic(f, newAdmin(f, b), "fz", 2, nil)
	f.Fuzz(func(t *testing.T, kind uint8, version int16, body []byte) {
		var req kmsg.Request
		switch kind % 6 {
		case 0:
			req = kmsg.NewPtrCreatePartitionsRequest()
		case 1:
			req = kmsg.NewPtrIncrementalAlterConfigsRequest()
		case 2:
			req = kmsg.NewPtrAlterConfigsRequest()
		case 3:
			req = kmsg.NewPtrElectLeadersRequest()
		case 4:
			req = kmsg.NewPtrDeleteRecordsRequest()
		default:
			req = kmsg.NewPtrDescribeLogDirsRequest()
		}
		if version < 0 || version > req.MaxVersion() {
			return
		}
		req.SetVersion(version)
		if err := req.ReadFrom(body); err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var resp kmsg.Response
		switch r := req.(type) {
		case *kmsg.CreatePartitionsRequest:
			r.ValidateOnly = true
			resp = b.createPartitions(ctx, r)
		case *kmsg.IncrementalAlterConfigsRequest:
			r.ValidateOnly = true
			resp = b.incrementalAlterConfigs(ctx, r)
		case *kmsg.AlterConfigsRequest:
			r.ValidateOnly = true
			resp = b.alterConfigs(ctx, r)
		case *kmsg.ElectLeadersRequest:
			resp = b.electLeaders(ctx, r)
		case *kmsg.DeleteRecordsRequest:
			resp = b.deleteRecords(ctx, r)
		case *kmsg.DescribeLogDirsRequest:
			resp = b.describeLogDirs(r)
		}
		if resp == nil {
			t.Fatalf("no answer to %T", req)
		}
		resp.AppendTo(nil) // the answer encodes
	})
}

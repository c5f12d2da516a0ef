package rpc

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fuzzRegistry serves every key kmsg knows at every version it knows (but
// ControlledShutdown v0), so the fuzzer reaches every body decoder.
func fuzzRegistry() *Registry {
	reg := NewRegistry()
	h := func(context.Context, *Request) Result { return NoResponse() }
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		req := kmsg.RequestForKey(key)
		if req == nil || key == apiVersionsKey {
			continue
		}
		minVersion := int16(0)
		if key == controlledShutdownKey {
			minVersion = 1 // v0 has no client_id
		}
		reg.Register(key, minVersion, req.MaxVersion(), h)
	}
	return reg
}

// FuzzRequestDecode feeds arbitrary frames to decodeRequest: it must never panic, and
// anything it accepts must be consistent and re-encodable.
func FuzzRequestDecode(f *testing.F) {
	seed := func(req kmsg.Request, version int16) {
		req.SetVersion(version)
		f.Add(requestFrame(req, 7)[4:])
	}
	for _, v := range []int16{0, 3, 5} {
		av := kmsg.NewPtrApiVersionsRequest()
		av.ClientSoftwareName, av.ClientSoftwareVersion = "fuzz", "1"
		seed(av, v)
	}
	for _, v := range []int16{0, 4, 9, 12} {
		seed(metadataRequest(v, "topic"), v)
	}
	for _, v := range []int16{3, 7, 9, 11} {
		p := kmsg.NewPtrProduceRequest()
		p.Acks = -1
		topic := kmsg.NewProduceRequestTopic()
		topic.Topic = "t"
		part := kmsg.NewProduceRequestTopicPartition()
		part.Records = make([]byte, 61)
		topic.Partitions = append(topic.Partitions, part)
		p.Topics = append(p.Topics, topic)
		seed(p, v)
	}
	for _, v := range []int16{4, 11, 12} {
		fr := kmsg.NewPtrFetchRequest()
		topic := kmsg.NewFetchRequestTopic()
		topic.Topic = "t"
		topic.Partitions = append(topic.Partitions, kmsg.NewFetchRequestTopicPartition())
		fr.Topics = append(fr.Topics, topic)
		seed(fr, v)
	}
	for _, v := range []int16{0, 5, 9} {
		j := kmsg.NewPtrJoinGroupRequest()
		j.Group, j.ProtocolType = "g", "consumer"
		j.Protocols = append(j.Protocols, kmsg.NewJoinGroupRequestProtocol())
		seed(j, v)
	}
	seed(kmsg.NewPtrCreateTopicsRequest(), 7)
	seed(kmsg.NewPtrOffsetCommitRequest(), 8)
	seed(kmsg.NewPtrDescribeConfigsRequest(), 4)
	seed(kmsg.NewPtrInitProducerIDRequest(), 0)
	f.Add(flexibleHeaderFrame(1, "tagged"))
	f.Add([]byte{})
	f.Add([]byte{0, 18, 0x7f, 0xff, 0, 0, 0, 1, 0xff, 0xff})

	reg := fuzzRegistry()
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, err := decodeRequest(frame, reg)
		if err != nil {
			if req != nil {
				t.Fatalf("error %v with a request", err)
			}
			return
		}
		if req.Body == nil || req.Body.Key() != req.Key || req.Body.GetVersion() != req.Version {
			t.Fatalf("inconsistent request: key %d v%d, body %#v", req.Key, req.Version, req.Body)
		}
		if req.Key == apiVersionsKey && req.Version > apiVersionsMaxVersion {
			return // not decoded; answered with the downgrade reply
		}
		// The same frame after a request with the same client id shares its pointer,
		// and after another decodes the same.
		for _, prev := range []*string{req.ClientID, new(string)} {
			again, err := decodeRequestAfter(frame, reg, prev)
			switch {
			case err != nil:
				t.Fatalf("decoded once, then %v after client id %v", err, prev)
			case (again.ClientID == nil) != (req.ClientID == nil) || again.ClientID != nil && *again.ClientID != *req.ClientID:
				t.Fatalf("client id %v, then %v", req.ClientID, again.ClientID)
			case prev == req.ClientID && prev != nil && again.ClientID != prev:
				t.Fatal("the repeated client id was not shared")
			}
		}
		// What was decoded can be encoded again, and answered.
		_ = req.Body.AppendTo(nil)
		_ = appendResponse(nil, req.CorrelationID, req.Body.ResponseKind())
	})
}

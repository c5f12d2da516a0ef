package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/share"
	"github.com/petrel-broker/petrel/shareleader"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareConn is one client connection sending share requests in order.
type shareConn struct {
	t    testing.TB
	c    net.Conn
	corr int32
	f    *kmsg.RequestFormatter
}

func dialShare(t testing.TB, b *Broker) *shareConn {
	c, err := net.DialTimeout("tcp", b.Addr().String(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &shareConn{t: t, c: c, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("share-test"))}
}

// do sends req and reads its answer into resp (a flexible response).
func (s *shareConn) do(req kmsg.Request, resp kmsg.Response) {
	s.t.Helper()
	s.corr++
	s.c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := s.c.Write(s.f.AppendRequest(nil, req, s.corr)); err != nil {
		s.t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(s.c, size[:]); err != nil {
		s.t.Fatal(err)
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(s.c, frame); err != nil {
		s.t.Fatal(err)
	}
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(frame[5:]); err != nil { // correlation id, header tags
		s.t.Fatal(err)
	}
}

// shareFetch sends a ShareFetch v2 of member for the partitions named (none on an
// incremental fetch) and returns the answer.
func (s *shareConn) shareFetch(member string, epoch, maxWaitMs int32, topicID [16]byte, partitions ...int32) *kmsg.ShareFetchResponse {
	s.t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 2
	req.GroupID, req.MemberID = kmsg.StringPtr("sg"), kmsg.StringPtr(member)
	req.ShareSessionEpoch, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = epoch, maxWaitMs, 1, 1<<20
	req.MaxRecords, req.BatchSize = 500, 500
	if len(partitions) > 0 {
		t := kmsg.NewShareFetchRequestTopic()
		t.TopicID = topicID
		for _, p := range partitions {
			rp := kmsg.NewShareFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes = p, 1<<20
			t.Partitions = append(t.Partitions, rp)
		}
		req.Topics = append(req.Topics, t)
	}
	resp := kmsg.NewPtrShareFetchResponse()
	s.do(req, resp)
	return resp
}

// acquiredOf lists a ShareFetch answer's acquired ranges as "partition:first-last@count".
func acquiredOf(resp *kmsg.ShareFetchResponse) []string {
	var out []string
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			for _, a := range p.AcquiredRecords {
				out = append(out, fmt.Sprintf("%d:%d-%d@%d", p.Partition, a.FirstOffset, a.LastOffset, a.DeliveryCount))
			}
		}
	}
	return out
}

// useMemoryPersister has b's share partitions keep their state in memory.
func useMemoryPersister(b *Broker) *shareleader.MemoryPersister {
	mp := shareleader.NewMemoryPersister()
	var p shareleader.Persister = mp
	b.setPersister(p)
	return mp
}

// ShareFetch and ShareAcknowledge over the wire, v2: both advertised v1-2; a session
// opened on an empty partition starts at the log end (share.auto.offset.reset
// latest); a long-polling fetch is answered when records are produced, with the
// records and their acquired range; another member gets nothing while the locks are
// held; closing the first member's connection releases its records to the second,
// whose ACCEPT moves the durable start offset; an unknown topic id is
// UNKNOWN_TOPIC_ID.
func TestShareFetchAndAcknowledgeWire(t *testing.T) {
	b := startTestBroker(t, "", nil)
	mp := useMemoryPersister(b)
	ctx := testContext(t)
	cl := newClient(t, b, kgo.DefaultProduceTopic("q"), kgo.ProducerLinger(0))
	v, err := newAdmin(t, b).ApiVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []kmsg.Key{kmsg.ShareFetch, kmsg.ShareAcknowledge} {
		for _, bv := range v {
			if min, max, ok := bv.KeyVersions(int16(key)); !ok || min != 1 || max != 2 {
				t.Fatalf("%s advertised %v %d-%d, want 1-2", key.Name(), ok, min, max)
			}
		}
	}
	mustCreateTopic(t, newAdmin(t, b), "q", 1, nil)
	id := [16]byte(b.Image().Topic("q").ID)

	a := dialShare(t, b)
	resp := a.shareFetch("m1", 0, 0, id, 0)
	if resp.ErrorCode != 0 || len(acquiredOf(resp)) != 0 || resp.AcquisitionLockTimeoutMillis != 30000 {
		t.Fatalf("opening fetch: %v %v lock %d", kerr.ErrorForCode(resp.ErrorCode), acquiredOf(resp), resp.AcquisitionLockTimeoutMillis)
	}
	polled := make(chan *kmsg.ShareFetchResponse, 1)
	go func() {
		// The connection is used by this goroutine alone until it answers.
		polled <- a.shareFetch("m1", 1, 20000, id)
	}()
	start := time.Now()
	recs := []*kgo.Record{{Value: []byte("a")}, {Value: []byte("b")}, {Value: []byte("c")}}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var got *kmsg.ShareFetchResponse
	select {
	case got = <-polled:
	case <-ctx.Done():
		t.Fatal("the long poll was not answered")
	}
	if acq := acquiredOf(got); !slices.Equal(acq, []string{"0:0-2@1"}) || time.Since(start) > 15*time.Second {
		t.Fatalf("long poll acquired %v after %v", acq, time.Since(start))
	}
	if recs := got.Topics[0].Partitions[0].Records; len(recs) == 0 {
		t.Fatal("no records with the acquired range")
	} else {
		var batch kmsg.RecordBatch
		if err := batch.ReadFrom(recs); err != nil || batch.FirstOffset != 0 || batch.NumRecords != 3 {
			t.Fatalf("records: %v, first offset %d, %d records", err, batch.FirstOffset, batch.NumRecords)
		}
	}

	c := dialShare(t, b)
	if acq := acquiredOf(c.shareFetch("m2", 0, 0, id, 0)); len(acq) != 0 {
		t.Fatalf("m2 acquired %v while m1 holds the locks", acq)
	}
	a.c.Close()
	epoch := int32(1)
	testwait.Until(t, 20*time.Second, "m1's records released to m2", func() bool {
		r := c.shareFetch("m2", epoch, 0, id)
		epoch++
		return slices.Equal(acquiredOf(r), []string{"0:0-2@1"})
	})

	ackReq := kmsg.NewPtrShareAcknowledgeRequest()
	ackReq.Version = 2
	ackReq.GroupID, ackReq.MemberID, ackReq.ShareSessionEpoch = kmsg.StringPtr("sg"), kmsg.StringPtr("m2"), epoch
	tp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	tp.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 2, AcknowledgeTypes: []int8{1}}}
	ackReq.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: id, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{tp}}}
	ackResp := kmsg.NewPtrShareAcknowledgeResponse()
	c.do(ackReq, ackResp)
	epoch++
	if ackResp.ErrorCode != 0 || ackResp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ShareAcknowledge: %v / %v", kerr.ErrorForCode(ackResp.ErrorCode), kerr.ErrorForCode(ackResp.Topics[0].Partitions[0].ErrorCode))
	}
	st, ok := mp.State(share.Key{GroupID: "sg", TopicID: id, Partition: 0})
	if !ok || st.StartOffset != 3 {
		t.Fatalf("durable state after the ACCEPT: %+v, want start offset 3", st)
	}

	fams, err := b.metrics.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	counted := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			if m.Counter != nil {
				counted[f.GetName()] += m.Counter.GetValue()
			}
		}
	}
	if counted["petrel_share_group_records_acquired_total"] != 6 || counted["petrel_share_group_records_redelivered_total"] != 0 {
		t.Fatalf("share group metrics: %v", counted)
	}

	unknown := c.shareFetch("m2", epoch, 0, [16]byte{9, 9}, 0)
	found := false
	for _, t := range unknown.Topics {
		for _, p := range t.Partitions {
			found = found || (t.TopicID == [16]byte{9, 9} && p.ErrorCode == kerr.UnknownTopicID.Code)
		}
	}
	if !found {
		t.Fatalf("an unknown topic id was not answered UNKNOWN_TOPIC_ID: %+v", unknown.Topics)
	}
}

// ShareFetch's authorization, as Kafka 4.2: READ on the group, else
// GROUP_AUTHORIZATION_FAILED for the whole request; READ on each topic, else
// TOPIC_AUTHORIZATION_FAILED for its partitions, which acquire nothing.
func TestAuthorize_ShareFetch(t *testing.T) {
	b := authzBroker(t)
	useMemoryPersister(b)
	req := func(topic string) *kmsg.ShareFetchRequest {
		r := kmsg.NewPtrShareFetchRequest()
		r.Version = 2
		r.GroupID, r.MemberID, r.MaxRecords, r.MaxBytes = kmsg.StringPtr("sg"), kmsg.StringPtr("m"), 10, 1<<20
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = [16]byte(b.Image().Topic(topic).ID)
		rt.Partitions = []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}
		r.Topics = []kmsg.ShareFetchRequestTopic{rt}
		return r
	}
	d := b.checkRequest(as("User:alice", req("t")))
	if d.answer == nil || d.answer.(*kmsg.ShareFetchResponse).ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("without READ on the group: %+v", d)
	}
	acls := kmsg.NewPtrCreateACLsRequest()
	acls.Creations = append(acls.Creations, aclCreation("User:alice", kmsg.ACLPermissionTypeAllow, kmsg.ACLResourceTypeGroup, "sg", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationRead))
	if r := b.createACLs(testContext(t), acls).Results; r[0].ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r[0].ErrorCode))
	}
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	for _, tc := range []struct {
		topic string
		want  int16
	}{{"t", 0}, {"u", kerr.TopicAuthorizationFailed.Code}} {
		r := as("User:alice", req(tc.topic))
		if d := b.checkRequest(r); d.answer != nil {
			t.Fatalf("with READ on the group: %+v", d.answer)
		}
		r.Body.(*kmsg.ShareFetchRequest).MemberID = kmsg.StringPtr("m-" + tc.topic)
		resp := b.shares.ShareFetch(ctx, r.Body.(*kmsg.ShareFetchRequest), b.shareRequestOptions(ctx, r)).Response()
		if resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != tc.want {
			t.Fatalf("topic %s: %v / %v, want %v", tc.topic, kerr.ErrorForCode(resp.ErrorCode),
				kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode), kerr.ErrorForCode(tc.want))
		}
	}
}

// A partition answered NOT_LEADER_OR_FOLLOWER carries its leader and leader epoch,
// and the response the leader's endpoint, so that the client moves without a
// metadata refresh (Kafka's CurrentLeader and NodeEndpoints).
func TestShareFetchLeaderHints(t *testing.T) {
	b := startTestBroker(t, "", nil)
	mustCreateTopic(t, newAdmin(t, b), "h", 1, nil)
	tp := b.Image().Topic("h")
	resp := kmsg.NewPtrShareFetchResponse()
	rt := kmsg.NewShareFetchResponseTopic()
	rt.TopicID = [16]byte(tp.ID)
	rp := kmsg.NewShareFetchResponseTopicPartition()
	rp.ErrorCode = kerr.NotLeaderForPartition.Code
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	req := as("User:ANONYMOUS", kmsg.NewPtrShareFetchRequest())
	b.withShareFetchHints(req, resp)
	got := resp.Topics[0].Partitions[0].CurrentLeader
	if got.LeaderID != tp.Partitions[0].Leader || got.LeaderEpoch != tp.Partitions[0].LeaderEpoch {
		t.Fatalf("CurrentLeader %+v, want %d/%d", got, tp.Partitions[0].Leader, tp.Partitions[0].LeaderEpoch)
	}
	host, port, _ := net.SplitHostPort(b.Addr().String())
	if len(resp.NodeEndpoints) != 1 || resp.NodeEndpoints[0].NodeID != got.LeaderID || resp.NodeEndpoints[0].Host != host ||
		fmt.Sprint(resp.NodeEndpoints[0].Port) != port {
		t.Fatalf("NodeEndpoints %+v, want node %d at %s", resp.NodeEndpoints, got.LeaderID, b.Addr())
	}
}

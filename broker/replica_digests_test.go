package broker

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

func FuzzReplicaDigestsRequest(f *testing.F) {
	seed := &ReplicaDigestsRequest{ChunkBytes: 1 << 20, MaxBytes: 4 << 20, Topics: []ReplicaDigestsRequestTopic{
		{Topic: "t", Partitions: []ReplicaDigestsRequestPartition{{Partition: 0, Start: 5, End: 90}, {Partition: 3, End: 1}}}}}
	f.Add(seed.AppendTo(nil))
	f.Add(replicaDigestsBomb(1 << 12))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var r ReplicaDigestsRequest
		if err := r.ReadFrom(raw); err != nil {
			return
		}
		var back ReplicaDigestsRequest
		if err := back.ReadFrom(r.AppendTo(nil)); err != nil || !reflect.DeepEqual(back, r) {
			t.Fatalf("decoded %+v reads back as %+v, %v", r, back, err)
		}
	})
}

func FuzzReplicaDigestsResponse(f *testing.F) {
	seed := &ReplicaDigestsResponse{Topics: []ReplicaDigestsResponseTopic{{Topic: "t", Partitions: []ReplicaDigestsResponsePartition{
		{Partition: 1, HighWatermark: 9, NextOffset: 9, ScannedBytes: 700, Chunks: []replication.ChunkDigest{{BaseOffset: 0, LastOffset: 8, Batches: 3, Hash: 1 << 63, Cut: true}}}}}}}
	f.Add(seed.AppendTo(nil))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var r ReplicaDigestsResponse
		if err := r.ReadFrom(raw); err != nil {
			return
		}
		var back ReplicaDigestsResponse
		if err := back.ReadFrom(r.AppendTo(nil)); err != nil || !reflect.DeepEqual(back, r) {
			t.Fatalf("decoded %+v reads back as %+v, %v", r, back, err)
		}
	})
}

// replicaDigestsBomb is a request body of size bytes announcing as many topics as it
// has bytes, the first announcing as many partitions: refused before allocating.
func replicaDigestsBomb(size int) []byte {
	raw := make([]byte, size)
	binary.BigEndian.PutUint32(raw[8:], uint32(size))     // topics
	binary.BigEndian.PutUint32(raw[14:], uint32(size-18)) // the first topic's partitions (empty name)
	return raw
}

// TestReplicaDigestsDecodeIsBounded: announced counts past what the bytes can hold are
// refused, whatever they claim.
func TestReplicaDigestsDecodeIsBounded(t *testing.T) {
	var r ReplicaDigestsRequest
	if err := r.ReadFrom(replicaDigestsBomb(1 << 20)); err == nil {
		t.Fatalf("a bomb decoded: %d topics", len(r.Topics))
	}
}

// TestReplicaDigests_Authorization: CLUSTER_ACTION (a super user here) passes every
// topic; alice, who may read t but not u, gets t's answer
// and TOPIC_AUTHORIZATION_FAILED for u.
func TestReplicaDigests_Authorization(t *testing.T) {
	b := authzBroker(t)
	ask := func() *ReplicaDigestsRequest {
		return &ReplicaDigestsRequest{ChunkBytes: 1, MaxBytes: 1, Topics: []ReplicaDigestsRequestTopic{
			{Topic: "t", Partitions: []ReplicaDigestsRequestPartition{{End: 10}}},
			{Topic: "u", Partitions: []ReplicaDigestsRequestPartition{{End: 10}}}}}
	}
	admin := ask()
	if d := b.checkRequest(as("User:admin", admin)); d.answer != nil || d.merge != nil || len(admin.Topics) != 2 {
		t.Fatalf("the super user's request was refused: %+v", d)
	}
	req := ask()
	resp := decide(b, as("User:alice", req), &ReplicaDigestsResponse{}).(*ReplicaDigestsResponse)
	if len(req.Topics) != 1 || req.Topics[0].Topic != "t" {
		t.Fatalf("alice's request keeps %+v, want t alone", req.Topics)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].Topic != "u" || resp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice's answer for u: %+v, want TOPIC_AUTHORIZATION_FAILED", resp.Topics)
	}
	mallory := ask()
	resp = decide(b, as("User:mallory", mallory), &ReplicaDigestsResponse{}).(*ReplicaDigestsResponse)
	if len(mallory.Topics) != 0 || len(resp.Topics) != 2 {
		t.Fatalf("mallory's request keeps %+v, answer %+v", mallory.Topics, resp.Topics)
	}
	// Describe is not enough: per-batch digests confirm guessed values and make the
	// broker read up to 32 MiB a request, so they need Read, as Fetch does.
	acls := kmsg.NewPtrCreateACLsRequest()
	acls.Creations = append(acls.Creations, aclCreation("User:dave", kmsg.ACLPermissionTypeAllow, kmsg.ACLResourceTypeTopic, "u", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationDescribe))
	for _, r := range b.createACLs(testContext(t), acls).Results {
		if r.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(r.ErrorCode))
		}
	}
	testwait.ForWhat(t, 10*time.Second, "dave may describe u", func() error {
		if !b.authorized(as("User:dave", ask()), auth.OpDescribe, auth.ResourceTopic, "u") {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	dave := ask()
	resp = decide(b, as("User:dave", dave), &ReplicaDigestsResponse{}).(*ReplicaDigestsResponse)
	if len(dave.Topics) != 0 || len(resp.Topics) != 2 {
		t.Fatalf("dave (Describe on u) keeps %+v, answer %+v; want both refused", dave.Topics, resp.Topics)
	}
}

// digestsClient sends ReplicaDigests as Petrel's CLI does: a client naming itself
// OperatorCLISoftwareName, to which alone the broker advertises the API.
func digestsClient(t *testing.T, b *Broker) *kgo.Client {
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(ReplicaDigestsKey, 0) // as cli/internal/clientcmd.OperatorOptions
	return newClient(t, b, kgo.SoftwareNameAndVersion(OperatorCLISoftwareName, "test"), kgo.MaxVersions(versions))
}

// ReplicaDigests is advertised in ApiVersions to Petrel's CLI alone: a client with
// another software name (franz-go's default) is never offered it, and so never sends it.
func TestReplicaDigestsOfferedToTheCLIAlone(t *testing.T) {
	b := startTestBroker(t, "", nil)
	for _, c := range []struct {
		software string
		want     bool
	}{{"", false}, {"kgo-like", false}, {OperatorCLISoftwareName, true}} {
		opts := []kgo.Opt{}
		if c.software != "" {
			opts = append(opts, kgo.SoftwareNameAndVersion(c.software, "1.0"))
		}
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = c.software, "1.0"
		resp, err := req.RequestWith(testContext(t), newClient(t, b, opts...))
		if err != nil {
			t.Fatal(err)
		}
		offered := slices.ContainsFunc(resp.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool { return k.ApiKey == ReplicaDigestsKey })
		if offered != c.want || slices.ContainsFunc(resp.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool { return k.ApiKey == remoteLogSegmentsKey }) {
			t.Errorf("software %q: ReplicaDigests offered %v, want %v (RemoteLogSegments never)", c.software, offered, c.want)
		}
	}
}

func askDigests(t *testing.T, cl *kgo.Client, chunk, maxBytes int32, topic string, partition int32, start, end int64) ReplicaDigestsResponsePartition {
	t.Helper()
	req := &ReplicaDigestsRequest{ChunkBytes: chunk, MaxBytes: maxBytes, Topics: []ReplicaDigestsRequestTopic{
		{Topic: topic, Partitions: []ReplicaDigestsRequestPartition{{Partition: partition, Start: start, End: end}}}}}
	resp, err := cl.SeedBrokers()[0].Request(testContext(t), req)
	if err != nil {
		t.Fatal(err)
	}
	r := resp.(*ReplicaDigestsResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("answer %+v", r)
	}
	return r.Topics[0].Partitions[0]
}

// TestReplicaDigests_Answers: a replica answers below its high watermark only, whole
// batches, a digest per batch with chunk size 1, stops at its byte budget and says
// where, and answers the same digests for the same range; an unknown partition is
// UNKNOWN_TOPIC_OR_PARTITION.
func TestReplicaDigests_Answers(t *testing.T) {
	b := startTestBroker(t, "", nil)
	mustCreateTopic(t, newAdmin(t, b), "d", 1, nil)
	cl := newClient(t, b, kgo.DefaultProduceTopic("d"))
	for i := range 10 {
		if err := cl.ProduceSync(testContext(t), &kgo.Record{Key: []byte(recordKey(i)), Value: make([]byte, 100)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	dc := digestsClient(t, b)
	all := askDigests(t, dc, 1, 1<<20, "d", 0, 0, 1000)
	if all.ErrorCode != 0 || all.HighWatermark != 10 || all.NextOffset != 10 || !all.IsLeader || len(all.Chunks) != 10 {
		t.Fatalf("digests of [0, 1000): %+v", all)
	}
	for i, c := range all.Chunks {
		if c.BaseOffset != int64(i) || c.LastOffset != int64(i) || c.Batches != 1 {
			t.Fatalf("chunk %d: %+v", i, c)
		}
	}
	if again := askDigests(t, dc, 1, 1<<20, "d", 0, 0, 1000); !reflect.DeepEqual(again, all) {
		t.Fatalf("the same range digests differently: %+v then %+v", all, again)
	}
	one := askDigests(t, dc, 1, 1, "d", 0, 3, 1000)
	if one.NextOffset != 4 || len(one.Chunks) != 1 || one.Chunks[0].BaseOffset != 3 || one.Chunks[0] != all.Chunks[3] {
		t.Fatalf("a one-byte budget from 3: %+v, want batch 3 alone", one)
	}
	// The budget ends a request after the chunk that reaches it: a chunk is never cut
	// by the budget alone, only by the range's end.
	rest := askDigests(t, dc, 1<<20, 1, "d", 0, 3, 1000)
	if rest.NextOffset != 10 || len(rest.Chunks) != 1 || !rest.Chunks[0].Cut || rest.Chunks[0].Batches != 7 {
		t.Fatalf("a one-byte budget with 1 MiB chunks from 3: %+v, want batches 3-9, cut at the end", rest)
	}
	whole := askDigests(t, dc, 1<<20, 1<<20, "d", 0, 0, 1000)
	if len(whole.Chunks) != 1 || whole.Chunks[0].Batches != 10 || whole.Chunks[0].Hash == all.Chunks[0].Hash {
		t.Fatalf("one chunk of everything: %+v", whole)
	}
	if c := CompareReplicaDigests(0, whole, whole); c.Diverged || c.Agreed != 10 {
		t.Fatalf("a replica compared with itself: %+v", c)
	}
	if u := askDigests(t, dc, 1, 1, "d", 7, 0, 10); u.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown partition: %+v", u)
	}
}

// TestReplicaDigests_CleanedLogStaysCompacted: a log the cleaner has cleaned is
// answered Compacted (skipped by verification) whatever cleanup.policy says, even when
// the policy became delete while the clean ran: each replica's cleaner ran at its own
// time, so their bytes may differ.
func TestReplicaDigests_CleanedLogStaysCompacted(t *testing.T) {
	b := startTestBroker(t, "", nil)
	mustCreateTopic(t, newAdmin(t, b), "cleaned", 1, nil)
	cl := newClient(t, b, kgo.DefaultProduceTopic("cleaned"))
	if err := cl.ProduceSync(testContext(t), &kgo.Record{Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	dc := digestsClient(t, b)
	if d := askDigests(t, dc, 1<<20, 1<<20, "cleaned", 0, 0, 10); d.ErrorCode != 0 || d.Compacted {
		t.Fatalf("a delete-policy log never cleaned: %+v", d)
	}
	lp := b.partitions.get("cleaned", 0)
	// A clean committing after an alter to delete applied its settings.
	b.partitions.markCompacted(segment.TopicPartition{Topic: "cleaned", Partition: 0}, lp)
	if d := askDigests(t, dc, 1<<20, 1<<20, "cleaned", 0, 0, 10); d.ErrorCode != 0 || !d.Compacted || len(d.Chunks) != 0 {
		t.Fatalf("a cleaned log under cleanup.policy=delete: %+v, want Compacted without chunks", d)
	}
}

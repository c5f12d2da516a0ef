package rpc

import (
	"bytes"
	"context"
	"crypto/rand"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// forceScribble turns on the overwriting of released frames for the test.
func forceScribble(t *testing.T) {
	was := scribbleReleasedFrames.Load()
	scribbleReleasedFrames.Store(true)
	t.Cleanup(func() { scribbleReleasedFrames.Store(was) })
}

func TestFrameClasses(t *testing.T) {
	for _, c := range []struct{ size, capacity int }{
		{4, 1 << 10}, {1 << 10, 1 << 10}, {1<<10 + 1, 2 << 10}, {17 << 10, 32 << 10}, {1<<20 + 1, 2 << 20}, {8 << 20, 8 << 20}, {8<<20 + 1, 0},
	} {
		p := getFrame(c.size)
		switch {
		case c.capacity == 0 && p != nil:
			t.Fatalf("a %d-byte frame was pooled (cap %d)", c.size, cap(*p))
		case c.capacity == 0:
			continue
		case p == nil || len(*p) != c.size || cap(*p) != c.capacity:
			t.Fatalf("getFrame(%d): %v, want len %d cap %d", c.size, p, c.size, c.capacity)
		}
		putFrame(p)
	}
	// A buffer of no class's capacity is never pooled: the pools hand out exact classes.
	odd := make([]byte, 1500)
	putFrame(&odd)
	for range 100 {
		if p := getFrame(1500); cap(*p) != 2<<10 {
			t.Fatalf("got a buffer of capacity %d from the 2 KiB class", cap(*p))
		}
	}
	putFrame(nil)
}

// produceWith returns a Produce request (v9, acks=1) carrying records as one partition.
func produceWith(records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, 1, 1000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestReleasedRequestFrameIsReused checks the release point of the ownership rule: the
// frame of an api registered with ReleaseFrameAfterHandler is released (overwritten)
// once its handler returns, so a handler that kept its records would see them change;
// the frame of any other api is never released, so what its handler keeps stays.
func TestReleasedRequestFrameIsReused(t *testing.T) {
	forceScribble(t)
	kept := make(chan []byte, 2)
	reg := NewRegistry()
	reg.Register(int16(kmsg.Produce), 3, 11, func(_ context.Context, req *Request) Result {
		rp := req.Body.(*kmsg.ProduceRequest).Topics[0].Partitions[0]
		kept <- rp.Records // breaks the rule on purpose
		resp := req.Body.ResponseKind().(*kmsg.ProduceResponse)
		return Respond(resp)
	})
	reg.ReleaseFrameAfterHandler(int16(kmsg.Produce))
	reg.Register(int16(kmsg.SyncGroup), 0, 5, func(_ context.Context, req *Request) Result {
		kept <- req.Body.(*kmsg.SyncGroupRequest).GroupAssignment[0].MemberAssignment
		return Respond(req.Body.ResponseKind())
	})
	synced := make(chan struct{}, 1)
	reg.Register(int16(kmsg.Metadata), 0, 12, func(_ context.Context, req *Request) Result {
		synced <- struct{}{}
		return Respond(req.Body.ResponseKind())
	})
	srv := startServer(t, ServerConfig{}, reg)
	cl := dialClient(t, srv.addr)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	records := make([]byte, 16<<10)
	rand.Read(records)
	if _, err := cl.Do(ctx, produceWith(records)); err != nil {
		t.Fatal(err)
	}
	produced := <-kept
	assignment := make([]byte, 3000)
	rand.Read(assignment)
	sg := kmsg.NewPtrSyncGroupRequest()
	sg.Version, sg.Group, sg.MemberID = 3, "g", "m"
	sg.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: "m", MemberAssignment: assignment}}
	if _, err := cl.Do(ctx, sg); err != nil {
		t.Fatal(err)
	}
	synced2 := <-kept
	// The reader goroutine released both frames (where it does) before it ran the next
	// handler: this request orders the checks below after the releases.
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	if _, err := cl.Do(ctx, md); err != nil {
		t.Fatal(err)
	}
	<-synced
	if !bytes.Equal(produced, bytes.Repeat([]byte{scribbleByte}, len(produced))) {
		t.Fatal("the Produce frame was not released (overwritten) after its handler returned")
	}
	if !bytes.Equal(synced2, assignment) {
		t.Fatal("the SyncGroup frame was released: a handler's kept assignment changed")
	}
}

// TestDoPooledRelease checks that a DoPooled response aliases its frame until Release
// and that Do's responses are never released.
func TestDoPooledRelease(t *testing.T) {
	forceScribble(t)
	value := make([]byte, 20000)
	rand.Read(value)
	reg := NewRegistry()
	reg.Register(int16(kmsg.Fetch), 0, 12, func(_ context.Context, req *Request) Result {
		resp := req.Body.ResponseKind().(*kmsg.FetchResponse)
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = "t"
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.RecordBatches = value
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		return Respond(resp)
	})
	srv := startServer(t, ServerConfig{}, reg)
	cl := dialClient(t, srv.addr)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	fetch := func() *kmsg.FetchRequest {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 12
		return req
	}
	resp, frame, err := cl.DoPooled(ctx, fetch())
	if err != nil {
		t.Fatal(err)
	}
	got := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches
	if !bytes.Equal(got, value) {
		t.Fatal("DoPooled response differs from what was sent")
	}
	frame.Release()
	if !bytes.Equal(got, bytes.Repeat([]byte{scribbleByte}, len(got))) {
		t.Fatal("Release did not hand the frame back (it was not overwritten)")
	}
	plain, err := cl.Do(ctx, fetch())
	if err != nil {
		t.Fatal(err)
	}
	kept := plain.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches
	for range 4 { // cycle the pools: Do's frame must not be among what they hand out
		r, f, err := cl.DoPooled(ctx, fetch())
		if err != nil {
			t.Fatal(err)
		}
		_ = r
		f.Release()
	}
	if !bytes.Equal(kept, value) {
		t.Fatal("a Do response changed: its frame was released")
	}
}

func TestBodyAliasesFrame(t *testing.T) {
	for _, c := range []struct {
		req     kmsg.Request
		aliases bool
	}{
		{kmsg.NewPtrProduceRequest(), true},
		{kmsg.NewPtrJoinGroupRequest(), true},
		{kmsg.NewPtrSyncGroupRequest(), true},
		{kmsg.NewPtrSASLAuthenticateRequest(), true},
		{kmsg.NewPtrFetchRequest(), false},
		{kmsg.NewPtrMetadataRequest(), false},
		{kmsg.NewPtrOffsetCommitRequest(), false},
		{kmsg.NewPtrListOffsetsRequest(), false},
	} {
		if got := bodyAliasesFrame(c.req); got != c.aliases {
			t.Errorf("%s: bodyAliasesFrame %v, want %v", kmsg.NameForKey(c.req.Key()), got, c.aliases)
		}
	}
}

// TestFramesAcrossPooledChunks checks that request frames read in growing pooled
// chunks (above initialFrameBuffer) and above the largest class arrive intact.
func TestFramesAcrossPooledChunks(t *testing.T) {
	forceScribble(t)
	want := make(chan []byte, 1)
	reg := NewRegistry()
	reg.Register(int16(kmsg.Produce), 3, 11, func(_ context.Context, req *Request) Result {
		resp := req.Body.ResponseKind().(*kmsg.ProduceResponse)
		rt := kmsg.NewProduceResponseTopic()
		rp := kmsg.NewProduceResponseTopicPartition()
		if !bytes.Equal(req.Body.(*kmsg.ProduceRequest).Topics[0].Partitions[0].Records, <-want) {
			rp.ErrorCode = 2 // CORRUPT_MESSAGE
		}
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		return Respond(resp)
	})
	reg.ReleaseFrameAfterHandler(int16(kmsg.Produce))
	srv := startServer(t, ServerConfig{MaxRequestBytes: 32 << 20}, reg)
	cl := dialClient(t, srv.addr)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for _, size := range []int{100, 1 << 20, 3<<20 + 7, 9 << 20} {
		records := make([]byte, size)
		rand.Read(records)
		want <- records
		resp, err := cl.Do(ctx, produceWith(records))
		if err != nil {
			t.Fatal(err)
		}
		if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("a %d-byte batch arrived changed", size)
		}
	}
}

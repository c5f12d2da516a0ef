package rpc

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOnResponse_ThrottleMutes: a response whose OnResponse asks for a throttle
// carries it as throttle_time_ms, and the next request on the connection is not read
// (its handler not run) before the throttle has passed; the function may change the
// response, immediate or later.
func TestOnResponse_ThrottleMutes(t *testing.T) {
	const throttle = 300 * time.Millisecond
	var handled atomic.Int64 // UnixNano of the second request's handling
	var calls atomic.Int32
	reg := metadataRegistry(func(_ context.Context, req *Request) Result {
		if calls.Add(1) == 2 {
			handled.Store(time.Now().UnixNano())
		}
		ch := make(chan kmsg.Response, 1)
		ch <- echoResponse(req)
		return RespondLater(ch).OnResponse(func(resp kmsg.Response) time.Duration {
			resp.(*kmsg.MetadataResponse).ClusterID = kmsg.StringPtr("changed-" + requestTag(req))
			if requestTag(req) == "slow" {
				return throttle
			}
			return 0
		})
	})
	s := startServer(t, ServerConfig{}, reg)
	c := dialRaw(t, s.addr)
	sendRequest(t, c, metadataRequest(9, "slow"), 1)
	_, body := readResponse(t, c)
	written := time.Now()
	resp := parseMetadata(t, body, 9)
	if resp.ThrottleMillis != int32(throttle.Milliseconds()) || resp.ClusterID == nil || *resp.ClusterID != "changed-slow" {
		t.Fatalf("throttle %d ms, cluster id %v", resp.ThrottleMillis, resp.ClusterID)
	}
	sendRequest(t, c, metadataRequest(9, "next"), 2)
	_, body = readResponse(t, c)
	if resp := parseMetadata(t, body, 9); resp.ThrottleMillis != 0 {
		t.Errorf("unthrottled response carries %d ms", resp.ThrottleMillis)
	}
	// The mute started before the first response was written, so the second request
	// is handled at least a throttle after its start, which is before written.
	if gap := time.Unix(0, handled.Load()).Sub(written); gap < throttle-100*time.Millisecond {
		t.Errorf("the next request was handled %s after the throttled response, want about %s", gap, throttle)
	}
}

package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestForwardHelpers: an answer counts as "no controller" only when every topic of it
// is NOT_CONTROLLER; a forward waits for the request's own timeout, 30 s without one;
// the leader watch wakes every waiter at each change.
func TestForwardHelpers(t *testing.T) {
	ct := func(codes ...int16) *kmsg.CreateTopicsResponse {
		r := kmsg.NewPtrCreateTopicsResponse()
		for _, c := range codes {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.ErrorCode = c
			r.Topics = append(r.Topics, rt)
		}
		return r
	}
	nc := kerr.NotController.Code
	for _, tc := range []struct {
		resp kmsg.Response
		want bool
	}{
		{ct(nc, nc), true},
		{ct(nc, 0), false},
		{ct(), false},
		{ct(kerr.TopicAlreadyExists.Code), false},
		{kmsg.NewPtrBrokerHeartbeatResponse(), false},
		{&kmsg.BrokerHeartbeatResponse{ErrorCode: nc}, true},
	} {
		if got := isNotController(tc.resp); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc.resp, got, tc.want)
		}
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 1500
	if d := forwardTimeout(req); d != 1500*time.Millisecond {
		t.Errorf("CreateTopics timeout 1500 ms: %s", d)
	}
	if d := forwardTimeout(kmsg.NewPtrDescribeQuorumRequest()); d != forwardDefaultTimeout {
		t.Errorf("DescribeQuorum: %s", d)
	}
	w := newLeaderWatch()
	a, b := w.changed(), w.changed()
	w.notify()
	for _, ch := range []<-chan struct{}{a, b} {
		select {
		case <-ch:
		default:
			t.Fatal("a waiter was not woken by the leader change")
		}
	}
	select {
	case <-w.changed():
		t.Fatal("the next change is signalled before it happens")
	default:
	}
}

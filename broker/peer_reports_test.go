package broker

import (
	"slices"
	"testing"
	"time"
)

// A broker reports each refused peer once per interval, in the next heartbeat, and a
// report whose heartbeat failed is sent again.
func TestPeerRefusalsReportOncePerInterval(t *testing.T) {
	r := newPeerRefusals()
	now := time.Unix(1000, 0)
	r.refused(2, 10, now)
	select {
	case <-r.notify:
	default:
		t.Fatal("a refusal did not wake the lifecycle loop")
	}
	r.refused(1, 4, now)
	got := r.take(now)
	if want := []peerRefusal{{BrokerID: 1, BrokerEpoch: 4}, {BrokerID: 2, BrokerEpoch: 10}}; !slices.Equal(got, want) {
		t.Fatalf("took %v, want %v", got, want)
	}
	if got := r.take(now); got != nil {
		t.Fatalf("took %v twice", got)
	}
	r.refused(2, 10, now.Add(peerReportInterval/2)) // reported just now
	if got := r.take(now.Add(peerReportInterval / 2)); got != nil {
		t.Fatalf("reported again within the interval: %v", got)
	}
	r.refused(2, 10, now.Add(peerReportInterval))
	if got := r.take(now.Add(peerReportInterval)); !slices.Equal(got, []peerRefusal{{BrokerID: 2, BrokerEpoch: 10}}) {
		t.Fatalf("not reported again after the interval: %v", got)
	}
	r.requeue([]peerRefusal{{BrokerID: 2, BrokerEpoch: 10}}) // its heartbeat failed
	if got := r.take(now.Add(peerReportInterval)); !slices.Equal(got, []peerRefusal{{BrokerID: 2, BrokerEpoch: 10}}) {
		t.Fatalf("a failed report was not sent again: %v", got)
	}
}

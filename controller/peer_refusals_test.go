package controller

import (
	"slices"
	"testing"
	"time"
)

// A broker reports each refused peer once per interval, in the next heartbeat, and a
// report whose heartbeat failed is sent again.
func TestPeerRefusalsReportOncePerInterval(t *testing.T) {
	r := NewRefusals()
	now := time.Unix(1000, 0)
	r.Refused(2, 10, now)
	select {
	case <-r.Notify():
	default:
		t.Fatal("a refusal did not wake the lifecycle loop")
	}
	r.Refused(1, 4, now)
	got := r.Take(now)
	if want := []PeerRefusal{{BrokerID: 1, BrokerEpoch: 4}, {BrokerID: 2, BrokerEpoch: 10}}; !slices.Equal(got, want) {
		t.Fatalf("took %v, want %v", got, want)
	}
	if got := r.Take(now); got != nil {
		t.Fatalf("took %v twice", got)
	}
	r.Refused(2, 10, now.Add(PeerReportInterval/2)) // reported just now
	if got := r.Take(now.Add(PeerReportInterval / 2)); got != nil {
		t.Fatalf("reported again within the interval: %v", got)
	}
	r.Refused(2, 10, now.Add(PeerReportInterval))
	if got := r.Take(now.Add(PeerReportInterval)); !slices.Equal(got, []PeerRefusal{{BrokerID: 2, BrokerEpoch: 10}}) {
		t.Fatalf("not reported again after the interval: %v", got)
	}
	r.Requeue([]PeerRefusal{{BrokerID: 2, BrokerEpoch: 10}}) // its heartbeat failed
	if got := r.Take(now.Add(PeerReportInterval)); !slices.Equal(got, []PeerRefusal{{BrokerID: 2, BrokerEpoch: 10}}) {
		t.Fatalf("a failed report was not sent again: %v", got)
	}
}

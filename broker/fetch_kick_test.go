package broker

import (
	"context"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kickParked parks a follower fetch of lp for a minute, answered at k's next kick, and
// returns the channel its answer arrives on.
func kickParked(lp *localPartition, k *followerFetchKick) chan kmsg.Response {
	ch := make(chan kmsg.Response, 2)
	r := kmsg.NewPtrFetchRequest()
	r.MinBytes = 1
	f := &delayedFollowerFetch{r: r, out: chanResponder(ch), readFetch: func() (*fetchAnswer, int, bool) {
		return &fetchAnswer{FetchResponse: kmsg.NewPtrFetchResponse()}, 0, false
	}}
	f.start(context.Background(), context.Background(), []*localPartition{lp}, time.Minute, lp.Changes(), false)
	f.expireOnKick(k)
	return ch
}

// A follower fetch parked for a minute is answered at once when this broker becomes a
// leader (the kick), and a second leadership within followerFetchKickGap still answers
// the fetch parked after the first: kicks are coalesced, never lost.
func TestFollowerFetchKickAnswersParkedFetches(t *testing.T) {
	lp := dpPartition(t, 0)
	k := newFollowerFetchKick()
	first := kickParked(lp, k)
	if len(first) != 0 {
		t.Fatal("answered before any kick")
	}
	k.kick()
	testwait.Until(t, 30*time.Second, "the parked fetch answered by the kick", func() bool { return len(first) == 1 })

	second := kickParked(lp, k)
	k.kick() // within the gap of the first: scheduled after it, not dropped
	testwait.Until(t, 30*time.Second, "the fetch parked after the first kick answered by the late one", func() bool { return len(second) == 1 })
	if len(first) != 1 {
		t.Fatal("the first fetch answered twice")
	}
}

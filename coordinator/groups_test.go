package coordinator

import (
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/group"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Effects are carried out in group.Effects' order: Committed with the write's outcome
// (which may change the responses), then the replies, then the further Effects.
func TestEffectsBecomeResultsInOrder(t *testing.T) {
	g := &groupShard{gc: &GroupCoordinator{}, s: group.NewShard(group.Config{NewMemberID: RandomUUID})}
	var order []string
	resp := kmsg.NewPtrHeartbeatResponse()
	eff := group.Effects{
		Timers:  []group.Timer{{Key: "session", At: time.Unix(10, 0)}},
		Records: []group.Record{{Key: []byte("k"), Value: []byte("v")}, {Key: []byte("t")}},
		Committed: func(code int16) group.Effects {
			order = append(order, fmt.Sprint("committed ", code))
			resp.ErrorCode = code
			return group.Effects{Records: []group.Record{{Key: []byte("next")}}}
		},
		Replies: []group.Reply{{Send: func(r kmsg.Response) {
			order = append(order, fmt.Sprint("reply ", r.(*kmsg.HeartbeatResponse).ErrorCode))
		}, Response: resp}},
	}
	res := g.convert(eff)
	if len(res.Timers) != 1 || res.Timers[0].Key != "session" || len(res.Records) != 2 || res.Records[1].Value != nil {
		t.Fatalf("result %+v", res)
	}
	next := res.Committed(time.Now(), kerr.NotCoordinator.Code)
	if fmt.Sprint(order) != fmt.Sprintf("[committed %d reply %d]", kerr.NotCoordinator.Code, kerr.NotCoordinator.Code) {
		t.Fatalf("order %v", order)
	}
	if len(next.Records) != 1 || string(next.Records[0].Key) != "next" {
		t.Fatalf("further effects %+v", next)
	}
	if none := g.convert(group.Effects{}); none.Committed != nil || len(none.Records) != 0 {
		t.Fatal("the zero Effects does something")
	}
}

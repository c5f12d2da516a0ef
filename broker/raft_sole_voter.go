package broker

import (
	"time"

	"github.com/hashicorp/raft"
)

// A quorum of one voter has nobody to wait for: its node may campaign as soon as Raft
// starts. hashicorp/raft makes every follower wait a random 1-2 times HeartbeatTimeout
// without a leader first, which made a restarted single node wait 0.5-2 s before it
// could register and serve (docs/replication.md, "Restart"). electSoleVoterAtOnce
// ends that wait: lowering HeartbeatTimeout through ReloadConfig makes a follower
// re-arm its timer at once (raft's followerNotifyCh), and a node that never heard from
// a leader campaigns when the timer fires; the timeout is then set back. The vote is
// won by the node's own ballot, so this changes no safety property: a configuration
// whose only voter is this node has no other node that could be leader.

// soleVoterByFlags reports a node started as the only voter of its quorum (no --voters,
// or only itself): its LeaderLeaseTimeout is lowered below HeartbeatTimeout so that
// the brief HeartbeatTimeout of electSoleVoterAtOnce is valid. With one voter the
// lease never lapses (the leader is its own quorum), so the value changes nothing else.
func soleVoterByFlags(cfg *Config) bool {
	if isObserver(cfg) {
		return false
	}
	return len(cfg.Voters) == 0 || len(cfg.Voters) == 1 && cfg.Voters[0].ID == cfg.NodeID
}

// soleVoterLease lowers rc's LeaderLeaseTimeout for a sole voter (see soleVoterByFlags),
// when HeartbeatTimeout leaves room for it.
func soleVoterLease(cfg *Config, rc *raft.Config) {
	if soleVoterByFlags(cfg) && rc.HeartbeatTimeout >= 10*time.Millisecond {
		rc.LeaderLeaseTimeout = rc.HeartbeatTimeout / 2
	}
}

// electSoleVoterAtOnce makes r campaign now when its latest configuration's only voter
// is itself. It reports whether it did.
func electSoleVoterAtOnce(r *raft.Raft, self raft.ServerID) bool {
	f := r.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	voters := 0
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			if s.ID != self {
				return false
			}
			voters++
		}
	}
	if voters != 1 || r.State() != raft.Follower {
		return false
	}
	rc := r.ReloadableConfig()
	brief := rc
	brief.HeartbeatTimeout = rc.HeartbeatTimeout / 2
	if r.ReloadConfig(brief) != nil { // a lease above the brief timeout: wait as before
		return false
	}
	// The follower loop has been notified; the timeout it reads when its timer fires
	// does not matter (it never heard from a leader), so it is restored at once.
	_ = r.ReloadConfig(rc)
	return true
}

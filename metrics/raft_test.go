package metrics

import "testing"

// TestRaftStateFromStats reads hashicorp/raft's Stats: indexes as numbers, last
// contact as -1 (never), 0 (the leader) or a duration in seconds.
func TestRaftStateFromStats(t *testing.T) {
	cases := []struct {
		name  string
		stats map[string]string
		want  RaftState
	}{
		{"follower", map[string]string{"term": "3", "commit_index": "10", "applied_index": "9", "last_log_index": "11",
			"last_contact": "1.5s"}, RaftState{Term: 3, CommitIndex: 10, AppliedIndex: 9, LastLogIndex: 11, LastContactSeconds: 1.5}},
		{"leader", map[string]string{"term": "4", "last_contact": "0"}, RaftState{Term: 4}},
		{"never", map[string]string{"last_contact": "never"}, RaftState{LastContactSeconds: -1}},
		{"empty", nil, RaftState{LastContactSeconds: -1}},
		{"garbage", map[string]string{"term": "x", "last_contact": "soon"}, RaftState{LastContactSeconds: -1}},
	}
	for _, c := range cases {
		if got := RaftStateFromStats(c.stats); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

package replication

import "testing"

// TestSetRemoteLogState: the remote log state reads -1, -1 until set, then the values
// set last.
func TestSetRemoteLogState(t *testing.T) {
	p := &Partition{}
	if h, s := p.RemoteLogState(); h != -1 || s != -1 {
		t.Fatalf("before any set: %d, %d", h, s)
	}
	p.SetRemoteLogState(99, 0)
	p.SetRemoteLogState(199, 100)
	if h, s := p.RemoteLogState(); h != 199 || s != 100 {
		t.Fatalf("after sets: %d, %d", h, s)
	}
}

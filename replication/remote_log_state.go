package replication

// remoteLogState is what the partition knows of its remote log (KIP-405), set from the
// metadata image (SetRemoteLogState).
type remoteLogState struct {
	highestCopiedOffset  int64
	remoteLogStartOffset int64
}

// RemoteLogState returns the values of the last SetRemoteLogState (tiered.go) as
// given, -1 and -1 before one.
func (p *Partition) RemoteLogState() (highestCopiedOffset, remoteLogStartOffset int64) {
	if s := p.remoteLog.Load(); s != nil {
		return s.highestCopiedOffset, s.remoteLogStartOffset
	}
	return -1, -1
}

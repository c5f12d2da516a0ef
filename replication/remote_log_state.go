package replication

// remoteLogState is what the partition knows of its remote log (KIP-405), set from the
// metadata image (SetRemoteLogState).
type remoteLogState struct {
	highestCopiedOffset  int64
	remoteLogStartOffset int64
}

// SetRemoteLogState records the partition's remote log as the metadata image has it:
// the highest offset copied to remote storage and the remote log start offset (the
// first offset of the oldest copied segment), each -1 when nothing is copied. Tiered
// storage's local retention (nothing deleted locally before it is copied) and remote
// reads use them. Safe for concurrent use; it takes no lock.
func (p *Partition) SetRemoteLogState(highestCopiedOffset, remoteLogStartOffset int64) {
	p.remoteLog.Store(&remoteLogState{highestCopiedOffset, remoteLogStartOffset})
}

// RemoteLogState returns the values of the last SetRemoteLogState, -1 and -1 before
// one.
func (p *Partition) RemoteLogState() (highestCopiedOffset, remoteLogStartOffset int64) {
	if s := p.remoteLog.Load(); s != nil {
		return s.highestCopiedOffset, s.remoteLogStartOffset
	}
	return -1, -1
}

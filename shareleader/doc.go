// Package shareleader is the partition leader's side of KIP-932 share groups, Kafka
// 4.2's kafka.server.share.SharePartitionManager: the share.Partition of every
// (share group, topic-partition) this broker leads, loaded from and written to the
// share coordinator through a Persister, the share sessions of ShareFetch (key 78) and
// ShareAcknowledge (key 79), and the acquisition-lock timers.
//
// The decisions (what to acquire, what an acknowledgement does, when a lock expires)
// are share's; this package owns the goroutines, the clock, the locks and the reads
// of the log.
package shareleader

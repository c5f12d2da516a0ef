// Package replication is a partition's replica state on the data plane: the leader side
// (follower LogEndOffsets, ISR, high watermark, delayed produce and fetch) and the
// follower side (one fetcher per source broker, truncation by leader epoch). It reaches
// Raft only through a small interface it defines.
package replication

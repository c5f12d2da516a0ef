// Package fsm implements hashicorp/raft's FSM over the metadata image: it decodes a
// record, applies it to the image deterministically, snapshots and restores the whole
// image, and tells subscribers what changed. Apply has no side effects.
package fsm

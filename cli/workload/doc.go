// Package workload is the checker behind `petrel verify workload`: a Jepsen-style
// workload run against any Kafka cluster through standard client APIs only (franz-go's
// kgo and kadm), followed by an analysis of what the cluster acknowledged against what
// it served.
//
// Run drives the workload: N idempotent acks=all producers (optionally transactional,
// aborting a fraction of their transactions on purpose) write keyed records whose values
// name their producer, key and per-key sequence; M consumers in a group read them and
// commit offsets; an optional fault hook runs at chosen moments; at the end a fresh
// read_committed consumer drains every partition from the earliest offset to the end
// offsets. Every produce outcome, every committed offset and every record read is kept
// in a History.
//
// Analyze is pure: it turns a History into the violations (acknowledged records lost or
// read at another offset, duplicated, reordered within a key, aborted records read,
// acknowledged records the group never received, committed offsets that went
// backwards) and the counts. It sees only the records this run produced (values carry
// the run's id); what it can and cannot prove is in docs/verify.md.
package workload

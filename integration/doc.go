// Package integration holds multi-node tests that run whole Petrel clusters inside one
// test process and drive them with real Kafka clients. It has no non-test code.
//
// A test that starts its own cluster (listeners on 127.0.0.1:0, its own temporary
// directories) and reads no process-wide state calls t.Parallel; TestMain runs up to
// four of them at once unless -parallel is given, as they mostly wait on sessions,
// timers and other nodes. A test stays serial when it measures the whole process
// (heap, allocations, goroutines: TestHostile, TestBadInput) or bounds how long
// something may take (a failover within 5 s, a fetch answered at once, quota rates):
// serial tests all run before the parallel ones start.
package integration

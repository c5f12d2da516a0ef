package broker

import "time"

// Read-your-writes across brokers. Once an admin change is answered, every live
// broker's answers reflect it: the controller answers an admin request only once every
// registered, unfenced broker with a live session has applied the metadata log up to the
// change (its heartbeats report its applied offset, and a broker sends one as soon as it
// applies something new, at most every appliedReportGap). A broker that does not report
// in time (stuck, partitioned; its session will fence it) holds the answer at most
// 5 s (controller.AwaitApplied). The APIs that wait say so in their file
// (apiOpts.adminChange). Kafka answers before other brokers have the change, so clients and test suites
// written against it sleep or retry; with Petrel they need not.

// appliedReportGap is the shortest time between two heartbeats that report a newly
// applied metadata offset.
const appliedReportGap = 10 * time.Millisecond

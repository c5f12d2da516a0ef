#!/bin/sh
# Catch-up read throughput from the object store against local disk, in one run
# (P23 part C): one broker, versitygw (internal/s3test) as the store, 64 MiB of 1 KiB
# records to a tiered topic whose local log keeps only its active segment and to a
# topic without remote storage; a new franz-go consumer reads each from offset 0.
#   local          the same data from local disk
#   tiered         cold: from the store (chunk cache empty, read-ahead on)
#   tiered-cached  the same read again, from the chunk cache on local disk
# Compare the MB/s of the three lines (same run, same machine); give `uptime` beside.
# Then the local disk against local.retention.bytes (TestCluster_TieredGiB): 1 GiB
# through a tiered topic whose local log is bounded at 50 MiB, its *.log files summed
# every 100 ms (max and final).
set -eu
cd "$(dirname "$0")/../.."
uptime
go test -count 1 -run '^$' -bench 'BenchmarkTieredCatchUp' -benchtime=1x ./integration/ 2>&1 |
	grep -E '^(Benchmark|ok|FAIL|---)|tiered: local log'
uptime
go test -count 1 -run 'TestCluster_TieredGiB' -v ./integration/ 2>&1 |
	grep -E '^(ok|FAIL|---)|tiered_gib_test'
uptime

#!/usr/bin/env bash
# Where one record's microseconds go, with one record in flight (acks=all, RF 3,
# min.insync.replicas=2, 1 KiB random records), reproducible with one command:
#   bash docs/bench/one-in-flight-trace.sh [records] [git-rev]
# It copies the source tree at git-rev (default HEAD) into a scratch directory, inserts
# trace points there (docs/bench/lattrace/: the produce handler, the leader's append and
# fsync, the parked follower fetches, the followers' fetcher, the high watermark), builds
# it, runs three `petrel server` processes on loopback with PETREL_LATTRACE set, sends
# [records] records one at a time with the fsync default and then as many in page-cache
# mode (flush.messages=9223372036854775807), and prints the median time of each step
# after the leader read the produce request (the processes share one clock). The trace
# points are never part of a Petrel build. Run it for two revisions back to back to
# compare them.
set -euo pipefail
cd "$(dirname "$0")/../.."
records=${1:-3000}
rev=${2:-HEAD}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
mkdir "$work/src"
git archive "$rev" | tar -x -C "$work/src"
python3 docs/bench/lattrace/addtrace.py "$work/src"
cp docs/bench/lattrace/trace.go.in "$work/src/replication/zz_trace.go"
(cd "$work/src" && go build -o "$work/petrel-trace" .)
bin=$work/petrel
go build -o "$bin" . # the client: this tree's

source docs/bench/ports.sh # free_ports
wait_for() {
  for _ in $(seq 1 600); do grep -q "$2" "$1" && return; sleep 0.1; done
  echo "timed out waiting for '$2' in $1" >&2; tail -20 "$1" >&2; exit 1
}
read -r -a ports <<<"$(free_ports 9)"
kp=("${ports[@]:0:3}"); rp=("${ports[@]:3:3}"); mp=("${ports[@]:6:3}"); voters=""
for i in 0 1 2; do voters+="${voters:+,}$i@127.0.0.1:${rp[$i]}"; done
for i in 0 1 2; do
  PETREL_LATTRACE="$work/trace" "$work/petrel-trace" server --node-id "$i" --data-dir "$work/n$i" --listen "127.0.0.1:${kp[$i]}" \
    --raft-listen "127.0.0.1:${rp[$i]}" --voters "$voters" --metrics-listen "127.0.0.1:${mp[$i]}" >"$work/n$i.log" 2>&1 &
  pids+=($!)
done
for i in 0 1 2; do wait_for "$work/n$i.log" "registered with the controller"; done
addr="127.0.0.1:${kp[0]},127.0.0.1:${kp[1]},127.0.0.1:${kp[2]}"
for _ in $(seq 1 100); do
  [ "$("$bin" cluster describe --bootstrap-server "$addr" 2>/dev/null | grep -c ' active$')" = 3 ] && break
  sleep 0.2
done
"$bin" topics create lat --partitions 1 --replication-factor 3 --config min.insync.replicas=2 --bootstrap-server "$addr" >/dev/null
"$bin" topics create latpc --partitions 1 --replication-factor 3 --config min.insync.replicas=2 \
  --config flush.messages=9223372036854775807 --bootstrap-server "$addr" >/dev/null
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for t in lat latpc; do
  "$bin" perf produce "$t" --records "$records" --record-size 1024 --acks all --max-buffered-records 1 \
    --bootstrap-server "$addr" --json 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); l=d["latency_ms"]; print("'"$t"': %.0f records/s, client p50 %.3f ms, p99 %.3f ms" % (d["records_per_second"], l["p50"], l["p99"]))'
done
sleep 1 # the trace files are written every 0.5 s
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; pids=()
echo "revision $(git rev-parse --short "$rev"); load average before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
python3 docs/bench/lattrace/analyse.py "$work/trace" "$records"

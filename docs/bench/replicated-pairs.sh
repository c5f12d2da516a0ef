#!/usr/bin/env bash
# Replicated produce throughput, this tree against another build, in alternating pairs:
#   bash docs/bench/replicated-pairs.sh [records] [pairs] <other-petrel-binary>
#   PAIRS_RECORD_SIZE=100 bash docs/bench/replicated-pairs.sh ...   # records of another size (default 1024 bytes)
# For each pair, one run of each build (this tree's first): three `petrel server`
# processes on loopback (a fresh cluster and data directory per run), a 6-partition
# topic, RF 3, min.insync.replicas=2, Petrel's default fsync, then `petrel perf produce`
# of [records] random records of 1 KiB (PAIRS_RECORD_SIZE bytes when set; this tree's
# client for both builds) at acks=all. Each produce writes into pages just freed
# (recycle_pages, docs/bench/pages.sh, of the three copies' bytes before it), as
# replicated.sh's runs do. Prints one Markdown row per run: MB/s, records/s, p50/p99 and
# the load average. Shorter than replicated.sh (no NATS, no
# raw disk baseline): for a before/after question about the brokers alone.
set -euo pipefail
cd "$(dirname "$0")/../.."
records=${1:-1000000}
pairs=${2:-3}
other=${3:?usage: replicated-pairs.sh [records] [pairs] <other-petrel-binary>}
work=$(mktemp -d)
bin=$work/petrel
go build -o "$bin" .
. docs/bench/cpu.sh
. docs/bench/pages.sh
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
run() { # $1 server binary, $2 name
  local dir=$work/run
  rm -rf "$dir"; mkdir -p "$dir"
  source docs/bench/cluster3.sh
  pids=()
  for i in 0 1 2; do
    "$1" server --node-id "$i" --data-dir "$dir/n$i" --listen "127.0.0.1:${kp[$i]}" \
      --raft-listen "127.0.0.1:${rp[$i]}" --voters "$voters" --metrics-listen "127.0.0.1:${mp[$i]}" >"$dir/n$i.log" 2>&1 &
    pids+=($!)
  done
  for i in 0 1 2; do wait_log "$dir/n$i.log" "registered with the controller" 60; done
  local addr="127.0.0.1:${kp[0]},127.0.0.1:${kp[1]},127.0.0.1:${kp[2]}"
  for _ in $(seq 1 100); do
    [ "$("$bin" cluster describe --bootstrap-server "$addr" 2>/dev/null | grep -c ' active$')" = 3 ] && break
    sleep 0.2
  done
  "$bin" topics create r3 --partitions 6 --replication-factor 3 --config min.insync.replicas=2 --bootstrap-server "$addr" >/dev/null
  recycle_pages "$dir" $((records * 1100 * 3)) >/dev/null
  "$bin" perf produce r3 --records "$records" --record-size "${PAIRS_RECORD_SIZE:-1024}" --acks all --bootstrap-server "$addr" --json >"$dir/perf.json" 2>/dev/null
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); l=d["latency_ms"]
print("| %s | %.1f | %.0f | %.1f / %.1f | %s |" % (sys.argv[2], d["mb_per_second"], d["records_per_second"], l["p50"], l["p99"], open("/proc/loadavg").read().split()[0]))' "$dir/perf.json" "$2"
  for p in "${pids[@]}"; do kill "$p"; done
  wait 2>/dev/null || true
  pids=()
}
echo "| build | MB/s | records/s | p50 / p99 ms | load |"
echo "|---|---:|---:|---|---|"
for _ in $(seq 1 "$pairs"); do
  run "$bin" "this tree"
  run "$other" "$(basename "$other")"
done

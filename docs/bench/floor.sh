#!/usr/bin/env bash
# One record in flight against its floor, in one run:
#   bash docs/bench/floor.sh [records] [rounds]
# Three `petrel server` processes on loopback; `petrel perf produce --max-buffered-records
# 1` of 1 KiB records, acks=all, RF 3 (min.insync.replicas=2), with the fsync default and
# in page-cache mode (flush.messages=9223372036854775807); each produce row is followed
# by its floor, `petrel perf floor` (the same message pattern between a leader and two
# follower processes, with an fsync of each 1 KiB append where the broker fsyncs, and
# no broker work), on the same disk. Rounds alternate the four rows so that load
# changes touch all of them. Prints one Markdown table and, per mode, the produce p50
# minus the floor p50: what the broker adds. PETREL_SERVER_BIN=path runs the servers
# from another petrel binary (the clients and the floor stay this one).
set -euo pipefail
cd "$(dirname "$0")/../.."
records=${1:-5000}
rounds=${2:-2}
work=$(mktemp -d)
bin=$work/petrel
go build -o "$bin" .
server_bin=${PETREL_SERVER_BIN:-$bin}
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
source docs/bench/cluster3.sh
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for i in 0 1 2; do
  "$server_bin" server --node-id "$i" --data-dir "$work/n$i" --listen "127.0.0.1:${kp[$i]}" \
    --raft-listen "127.0.0.1:${rp[$i]}" --voters "$voters" --metrics-listen "127.0.0.1:${mp[$i]}" >"$work/n$i.log" 2>&1 &
  pids+=($!)
done
for i in 0 1 2; do
  for _ in $(seq 1 600); do grep -q "registered with the controller" "$work/n$i.log" && break; sleep 0.1; done
done
addr="127.0.0.1:${kp[0]},127.0.0.1:${kp[1]},127.0.0.1:${kp[2]}"
for _ in $(seq 1 100); do # wait for three active (unfenced) brokers
  [ "$("$bin" cluster describe --bootstrap-server "$addr" 2>/dev/null | grep -c ' active$')" = 3 ] && break
  sleep 0.2
done
"$bin" topics create lat --partitions 1 --replication-factor 3 --config min.insync.replicas=2 --bootstrap-server "$addr" >/dev/null
"$bin" topics create latpc --partitions 1 --replication-factor 3 --config min.insync.replicas=2 \
  --config flush.messages=9223372036854775807 --bootstrap-server "$addr" >/dev/null
summary='import json,sys; d=json.load(sys.stdin); l=d["latency_ms"]; print("%.0f %.3f %.3f" % (d["records_per_second"], l["p50"], l["p99"]))'
produce() { "$bin" perf produce "$1" --records "$records" --record-size 1024 --acks all --max-buffered-records 1 --bootstrap-server "$addr" --json 2>/dev/null | python3 -c "$summary"; }
floor() { "$bin" perf floor --records "$records" --record-size 1024 --replicas 3 --dir "$work" "$@" --json 2>/dev/null | python3 -c "$summary"; }
rows=()
for r in $(seq 1 "$rounds"); do
  read -r rps p50 p99 < <(produce lat); rows+=("$r|Petrel produce, fsync|$rps|$p50|$p99")
  read -r rps p50 p99 < <(floor --fsync); rows+=("$r|floor, fsync|$rps|$p50|$p99")
  read -r rps p50 p99 < <(produce latpc); rows+=("$r|Petrel produce, page cache|$rps|$p50|$p99")
  read -r rps p50 p99 < <(floor); rows+=("$r|floor, page cache|$rps|$p50|$p99")
done
echo "load average before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg); $records records of 1 KiB per row, acks=all, RF 3, one in flight"
echo
echo "| round | what | records/s | p50 ms | p99 ms |"
echo "|---:|---|---:|---:|---:|"
for row in "${rows[@]}"; do IFS='|' read -r r what rps p50 p99 <<<"$row"; echo "| $r | $what | $rps | $p50 | $p99 |"; done
echo
printf '%s\n' "${rows[@]}" | python3 -c '
import sys, statistics
p = {}
for line in sys.stdin:
    r, what, rps, p50, p99 = line.strip().split("|")
    p.setdefault(what, []).append(float(p50))
for mode in ("fsync", "page cache"):
    prod, fl = statistics.median(p["Petrel produce, " + mode]), statistics.median(p["floor, " + mode])
    print("%s: produce p50 %.3f ms - floor p50 %.3f ms = %.3f ms added by the broker (medians over the rounds)" % (mode, prod, fl, prod - fl))'

#!/usr/bin/env bash
# One record in flight against its floor, in one run:
#   bash docs/bench/floor.sh [records] [rounds]
# Three `petrel server` processes on loopback; `petrel perf produce --max-buffered-records
# 1` of 1 KiB records, acks=all, RF 3 (min.insync.replicas=2), with the fsync default and
# in page-cache mode (flush.messages=9223372036854775807), and RF 1 in page-cache mode
# (the client and one broker: the request path without replication, against a floor of
# one process); each produce row is followed
# by its floor, `petrel perf floor` (the same message pattern between a leader and two
# follower processes, with an fsync of each 1 KiB append where the broker fsyncs, and
# no broker work), on the same disk, and by the same floor with the kgo producer of the
# produce rows in place of the floor's own client (`petrel perf produce-ceiling --floor`:
# the leader answers its Kafka Produce), whose difference from Petrel is the broker's
# own share. A last row, `petrel perf produce-ceiling`, is
# the same kgo producer against a canned broker in the client's process that acknowledges at
# once: the client's own share. Rounds alternate the rows so that load changes touch
# all of them. Prints one Markdown table and, per mode, the produce p50
# minus each floor's p50: what the broker and the Kafka client add, and what the broker
# alone adds, and the context
# switches per record of the three processes. PETREL_SERVER_BIN=path runs the servers
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
"$bin" topics create latrf1 --partitions 1 --replication-factor 1 \
  --config flush.messages=9223372036854775807 --bootstrap-server "$addr" >/dev/null
# "switches": voluntary context switches per record of the three server processes
# (every thread, /proc/PID/task/*/status), or of the floor's three node processes: the
# threads' sleeps and wake-ups, a figure that barely depends on the machine's load.
summary='import json,sys; d=json.load(sys.stdin); l=d["latency_ms"]; print("%.0f %.3f %.3f %.1f" % (d["records_per_second"], l["p50"], l["p99"], sum(d.get("node_context_switches_per_record", []))))'
switches() { for p in "${pids[@]}"; do cat /proc/"$p"/task/*/status; done 2>/dev/null | awk '/^voluntary_ctxt_switches/ {n += $2} END {print n}'; }
produce() {
  local s0 s1; s0=$(switches)
  read -r rps p50 p99 _ < <("$bin" perf produce "$1" --records "$records" --record-size 1024 --acks all --max-buffered-records 1 --bootstrap-server "$addr" --json 2>/dev/null | python3 -c "$summary")
  s1=$(switches)
  echo "$rps $p50 $p99 $(python3 -c "print('%.1f' % (($s1 - $s0) / $records))")"
}
floor() { "$bin" perf floor --records "$records" --record-size 1024 --replicas 3 --dir "$work" "$@" --json 2>/dev/null | python3 -c "$summary"; }
kgofloor() { "$bin" perf produce-ceiling --floor --records "$records" --record-size 1024 --acks all --max-buffered-records 1 --replicas 3 "$@" --json 2>/dev/null | python3 -c "$summary"; }
rows=()
for r in $(seq 1 "$rounds"); do
  read -r rps p50 p99 sw < <(produce lat); rows+=("$r|Petrel produce, fsync|$rps|$p50|$p99|$sw")
  read -r rps p50 p99 sw < <(floor --fsync); rows+=("$r|floor, fsync|$rps|$p50|$p99|$sw")
  read -r rps p50 p99 _ < <(kgofloor --fsync-dir "$work"); rows+=("$r|floor with kgo, fsync|$rps|$p50|$p99|")
  read -r rps p50 p99 sw < <(produce latpc); rows+=("$r|Petrel produce, page cache|$rps|$p50|$p99|$sw")
  read -r rps p50 p99 sw < <(floor); rows+=("$r|floor, page cache|$rps|$p50|$p99|$sw")
  read -r rps p50 p99 _ < <(kgofloor); rows+=("$r|floor with kgo, page cache|$rps|$p50|$p99|")
  read -r rps p50 p99 sw < <(produce latrf1); rows+=("$r|Petrel produce, RF 1, page cache|$rps|$p50|$p99|$sw")
  read -r rps p50 p99 sw < <(floor --replicas 1); rows+=("$r|floor, 1 process, page cache|$rps|$p50|$p99|$sw")
  read -r rps p50 p99 _ < <(kgofloor --replicas 1); rows+=("$r|floor with kgo, 1 process, page cache|$rps|$p50|$p99|")
  read -r rps p50 p99 _ < <("$bin" perf produce-ceiling --records "$records" --record-size 1024 --acks all --max-buffered-records 1 --json 2>/dev/null | python3 -c "$summary")
  rows+=("$r|kgo alone: produce-ceiling (canned broker in the client's process)|$rps|$p50|$p99|")
done
echo "load average before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg); $records records of 1 KiB per row, acks=all, RF 3, one in flight"
echo
echo "| round | what | records/s | p50 ms | p99 ms | voluntary switches per record (3 processes) |"
echo "|---:|---|---:|---:|---:|---:|"
for row in "${rows[@]}"; do IFS='|' read -r r what rps p50 p99 sw <<<"$row"; echo "| $r | $what | $rps | $p50 | $p99 | $sw |"; done
echo
printf '%s\n' "${rows[@]}" | python3 -c '
import sys, statistics
p = {}
for line in sys.stdin:
    r, what, rps, p50, p99, sw = line.strip().split("|")
    p.setdefault(what, []).append(float(p50))
for mode in ("fsync", "page cache", "RF 1, page cache"):
    prod = statistics.median(p["Petrel produce, " + mode])
    fl = statistics.median(p["floor, " + mode.replace("RF 1", "1 process")])
    kf = statistics.median(p["floor with kgo, " + mode.replace("RF 1", "1 process")])
    print("%s: produce p50 %.3f ms - floor p50 %.3f ms = %.3f ms added by the broker and kgo; - the floor with kgo %.3f ms = %.3f ms by the broker (medians over the rounds)" % (mode, prod, fl, prod - fl, kf, prod - kf))'

#!/usr/bin/env bash
# Goroutine hand-offs with one record in flight, before against after, in one run:
#   bash docs/bench/handoffs.sh [records] [rounds] [before-binary]
# Starts one three-node cluster (loopback) from this tree's petrel and, when given,
# one from before-binary (for example main's build), creates on each a topic of 1
# partition, RF 3, min.insync.replicas=2, in page-cache mode
# (flush.messages=9223372036854775807), and alternates `petrel perf produce
# --max-buffered-records 1` of 1 KiB records, acks=all, between them for [rounds]
# rounds: back-to-back pairs under the same load. Prints one Markdown table: p50/p99
# and the voluntary context switches per record of each node (every thread,
# /proc/PID/task/*/status), the leader first. With PERF=1 it also records
# sched_switch/sched_wakeup (perf, root) during the last round of each cluster and
# prints per record why threads slept and which code woke them
# (docs/bench/handoffs-perf.py): the Go runtime's sysmon, idle threads parking in
# futex or epoll, and the goroutine hand-offs that woke a parked thread.
set -euo pipefail
cd "$(dirname "$0")/../.."
records=${1:-3000}
rounds=${2:-3}
work=$(mktemp -d)
bin=$work/petrel
go build -o "$bin" .
bins=("$bin")
names=("this tree")
if [ -n "${3:-}" ]; then bins+=("$3"); names+=("before ($(basename "$3"))"); fi
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
declare -A addrs nodes leaderpid
for bi in "${!bins[@]}"; do
  source docs/bench/cluster3.sh
  pl=()
  for i in 0 1 2; do
    "${bins[$bi]}" server --node-id "$i" --data-dir "$work/c$bi/n$i" --listen "127.0.0.1:${kp[$i]}" \
      --raft-listen "127.0.0.1:${rp[$i]}" --voters "$voters" --metrics-listen "127.0.0.1:${mp[$i]}" >"$work/c$bi.n$i.log" 2>&1 &
    pids+=($!); pl+=($!)
  done
  for i in 0 1 2; do for _ in $(seq 1 600); do grep -q "registered with the controller" "$work/c$bi.n$i.log" && break; sleep 0.1; done; done
  a="127.0.0.1:${kp[0]},127.0.0.1:${kp[1]},127.0.0.1:${kp[2]}"
  addrs[$bi]=$a
  for _ in $(seq 1 100); do [ "$("$bin" cluster describe --bootstrap-server "$a" 2>/dev/null | grep -c ' active$')" = 3 ] && break; sleep 0.2; done
  "$bin" topics create hand --partitions 1 --replication-factor 3 --config min.insync.replicas=2 \
    --config flush.messages=9223372036854775807 --bootstrap-server "$a" >/dev/null
  "$bin" perf produce hand --records 500 --record-size 1024 --acks all --max-buffered-records 1 --bootstrap-server "$a" >/dev/null 2>&1
  # The leader's node first (by its Kafka port in the topic's description).
  leader=$("$bin" topics describe hand --bootstrap-server "$a" 2>/dev/null | grep -o 'Leader: *[0-9]*' | grep -o '[0-9]*$' || echo 0)
  ordered="${pl[$leader]}"
  for i in 0 1 2; do [ "$i" = "$leader" ] || ordered+=" ${pl[$i]}"; done
  nodes[$bi]=$ordered
done
sw() { for p in $1; do cat /proc/"$p"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches/ {n += $2} END {printf "%d ", n}'; done; }
summary='import json,sys; d=json.load(sys.stdin); l=d["latency_ms"]; print("%.0f %.3f %.3f" % (d["records_per_second"], l["p50"], l["p99"]))'
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
rows=()
for r in $(seq 1 "$rounds"); do
  for bi in "${!bins[@]}"; do
    perfpid=""
    if [ -n "${PERF:-}" ] && [ "$r" = "$rounds" ]; then
      perf record -q -e sched:sched_switch,sched:sched_wakeup -g -o "$work/perf.$bi.data" -p "$(echo ${nodes[$bi]} | tr ' ' ,)" >/dev/null 2>&1 &
      perfpid=$!; sleep 0.5
    fi
    s0=$(sw "${nodes[$bi]}")
    read -r rps p50 p99 < <("$bin" perf produce hand --records "$records" --record-size 1024 --acks all --max-buffered-records 1 \
      --bootstrap-server "${addrs[$bi]}" --json 2>/dev/null | python3 -c "$summary")
    s1=$(sw "${nodes[$bi]}")
    [ -n "$perfpid" ] && { kill -INT "$perfpid"; wait "$perfpid" || true; }
    per=$(python3 -c "import sys; a=[int(x) for x in sys.argv[1].split()]; b=[int(x) for x in sys.argv[2].split()]; d=[(y-x)/$records for x,y in zip(a,b)]; print('%.1f | %s' % (sum(d), ' / '.join('%.1f' % v for v in d)))" "$s0" "$s1")
    rows+=("| $r | ${names[$bi]} | $rps | $p50 | $p99 | $per | $(cut -d' ' -f1 /proc/loadavg) |")
  done
done
echo "load average before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg); $records records of 1 KiB per row, acks=all, RF 3, page cache, one in flight"
echo
echo "| round | servers | records/s | p50 ms | p99 ms | voluntary switches per record (3 nodes) | leader / followers | load |"
echo "|---:|---|---:|---:|---:|---:|---|---:|"
printf '%s\n' "${rows[@]}"
if [ -n "${PERF:-}" ]; then
  for bi in "${!bins[@]}"; do
    echo; echo "${names[$bi]}, last round (per record):"
    perf script -i "$work/perf.$bi.data" 2>/dev/null | python3 docs/bench/handoffs-perf.py "$records"
  done
fi

#!/usr/bin/env bash
# Single-node produce benchmark, reproducible with one command:
#   bash docs/bench/single-node.sh [records]
# Starts its own throwaway broker(s) on free ports, measures the loopback TCP baseline,
# then `petrel perf produce` with 1 KiB records at acks=1 and acks=all, first with
# Petrel's default (flush.messages=1: fsync before acknowledging), then with Kafka's
# page-cache default. Prints a Markdown table with MB/s as a ratio of loopback.
set -euo pipefail
cd "$(dirname "$0")/../.."
records=${1:-200000}
bin=$(mktemp -d)/petrel
go build -o "$bin" .

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

run_broker() { # $1: extra --set flags; sets $addr and $broker_pid
  local port; port=$(free_port)
  local log; log=$(mktemp)
  "$bin" dev --port "$port" $1 >"$log" 2>&1 &
  broker_pid=$!
  for _ in $(seq 1 300); do
    if grep -q "bootstrap" "$log"; then addr="127.0.0.1:$port"; return; fi
    sleep 0.1
  done
  echo "broker did not start:" >&2; cat "$log" >&2; exit 1
}

json_field() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

loopback=$("$bin" perf loopback --duration 3s --json | json_field 'round(d["mb_per_second"],1)')
echo "| mode | acks | records/s | MB/s | × loopback | p50 ms | p99 ms | p99.9 ms |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
echo "| loopback TCP (1 MiB writes) | | | $loopback | 1.00 | | | |"
for mode in "fsync (default)|" "page cache (Kafka default)|--set log.flush.interval.messages=9223372036854775807"; do
  name=${mode%%|*}; flags=${mode#*|}
  run_broker "$flags"
  "$bin" topics create bench --partitions 3 --bootstrap-server "$addr" >/dev/null
  for run in "1|" "all|" "1|5000" "all|5000"; do
    acks=${run%%|*}; rate=${run#*|}
    limit=(); label="$acks"
    if [ -n "$rate" ]; then limit=(--throughput-limit "$rate"); label="$acks @ $rate rec/s"; fi
    n=$records; [ -n "$rate" ] && n=$((rate * 5))
    out=$("$bin" perf produce bench --records "$n" --record-size 1024 --acks "$acks" "${limit[@]}" --bootstrap-server "$addr" --json 2>/dev/null)
    echo "$out" | python3 -c "
import json,sys
d=json.load(sys.stdin); l=d['latency_ms']
print('| $name | $label | %.0f | %.1f | %.2f | %.1f | %.1f | %.1f |' % (d['records_per_second'], d['mb_per_second'], d['mb_per_second']/$loopback, l['p50'], l['p99'], l['p999']))"
  done
  kill "$broker_pid"; wait "$broker_pid" 2>/dev/null || true
done

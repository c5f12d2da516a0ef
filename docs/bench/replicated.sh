#!/usr/bin/env bash
# Replicated produce benchmark, reproducible with one command:
#   bash docs/bench/replicated.sh [records]
# Three nodes in one process (`petrel dev --nodes 3`) and three `petrel server`
# processes on loopback. In each: 1 KiB records, 6 partitions, acks=all with
# replication factor 3 (min.insync.replicas=2), beside acks=1 with replication factor 1,
# in the same run, with the loopback TCP baseline; then 5 s at a fixed 5,000 records/s
# of each for latency. Prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/../.."
records=${1:-100000}
work=$(mktemp -d)
bin=$work/petrel
go build -o "$bin" .
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
free_block() { # a base port with $1 consecutive free ports (petrel dev uses consecutive ports)
  python3 - "$1" <<'PY'
import random, socket, sys
n = int(sys.argv[1])
for _ in range(200):
    base = random.randrange(20000, 30000, 2)
    socks = []
    try:
        for p in range(base, base + n):
            s = socket.socket(); s.bind(("127.0.0.1", p)); socks.append(s)
        print(base); break
    except OSError:
        pass
    finally:
        for s in socks: s.close()
PY
}
wait_for() { # $1 log file, $2 pattern
  for _ in $(seq 1 600); do grep -q "$2" "$1" && return; sleep 0.1; done
  echo "timed out waiting for '$2' in $1" >&2; cat "$1" >&2; exit 1
}

run() { # $1 label, $2 bootstrap
  local label=$1 addr=$2
  for _ in $(seq 1 100); do # wait for three active (unfenced) brokers
    [ "$("$bin" cluster describe --bootstrap-server "$addr" 2>/dev/null | grep -c ' active$')" = 3 ] && break
    sleep 0.2
  done
  "$bin" topics create r3 --partitions 6 --replication-factor 3 --config min.insync.replicas=2 --bootstrap-server "$addr" >/dev/null
  "$bin" topics create r1 --partitions 6 --replication-factor 1 --bootstrap-server "$addr" >/dev/null
  for spec in "r3|all|RF 3, acks=all|" "r1|1|RF 1, acks=1|" "r3|all|RF 3, acks=all @ 5000 rec/s|5000" "r1|1|RF 1, acks=1 @ 5000 rec/s|5000"; do
    IFS='|' read -r topic acks what rate <<<"$spec"
    limit=(); n=$records
    if [ -n "$rate" ]; then limit=(--throughput-limit "$rate"); n=$((rate * 5)); fi
    "$bin" perf produce "$topic" --records "$n" --record-size 1024 --acks "$acks" "${limit[@]}" --bootstrap-server "$addr" --json 2>/dev/null |
      python3 -c "
import json,sys
d=json.load(sys.stdin); l=d['latency_ms']
print('| $label | $what | %.0f | %.1f | %.2f | %.1f | %.1f |' % (d['records_per_second'], d['mb_per_second'], d['mb_per_second']/$loopback, l['p50'], l['p99']))"
  done
}

loopback=$("$bin" perf loopback --duration 3s --json | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["mb_per_second"],1))')
echo "| cluster | topic | records/s | MB/s | × loopback | p50 ms | p99 ms |"
echo "|---|---|---:|---:|---:|---:|---:|"
echo "| loopback TCP (1 MiB writes) | | | $loopback | 1.00 | | |"

# Three nodes in one process.
p=$(free_block 6)
"$bin" dev --nodes 3 --port "$p" >"$work/dev.log" 2>&1 &
pids+=($!)
wait_for "$work/dev.log" bootstrap
run "3 nodes, 1 process" "127.0.0.1:$p"
kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true

# Three processes.
kp=(); rp=(); voters=""
for i in 0 1 2; do kp+=("$(free_port)"); rp+=("$(free_port)"); voters+="${voters:+,}$i@127.0.0.1:${rp[$i]}"; done
for i in 0 1 2; do
  "$bin" server --node-id "$i" --data-dir "$work/n$i" --listen "127.0.0.1:${kp[$i]}" \
    --raft-listen "127.0.0.1:${rp[$i]}" --voters "$voters" >"$work/n$i.log" 2>&1 &
  pids+=($!)
done
for i in 0 1 2; do wait_for "$work/n$i.log" "registered with the controller"; done
run "3 processes" "127.0.0.1:${kp[0]},127.0.0.1:${kp[1]},127.0.0.1:${kp[2]}"

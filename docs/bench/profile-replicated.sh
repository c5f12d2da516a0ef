#!/usr/bin/env bash
# Profiles the replicated produce path of docs/bench/replicated.sh:
#   bash docs/bench/profile-replicated.sh [out-dir] [max-buffered-records]
# Three `petrel server` processes with PETREL_PPROF=1 (profiles on the metrics
# listener), a 6-partition RF 3 topic (min.insync.replicas=2), one `petrel perf produce`
# of 1 KiB records with acks=all for 25 s (one record in flight when the second
# argument is 1). From second 5: a 10 s CPU profile, 10 s block, mutex and allocation
# profile deltas of every node, and a 2 s execution trace of node 0. Writes them to out-dir and prints
# the top of each; read them with `go tool pprof -top` or `go tool trace`.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-/tmp/petrel-profiles}
buffered=${2:-0}
mkdir -p "$out"
work=$(mktemp -d)
bin=$work/petrel
go build -o "$bin" .
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
source docs/bench/ports.sh # free_ports
wait_for() {
  for _ in $(seq 1 600); do grep -q "$2" "$1" && return; sleep 0.1; done
  echo "timed out waiting for '$2' in $1" >&2; cat "$1" >&2; exit 1
}
read -r -a ports <<<"$(free_ports 9)"
kp=("${ports[@]:0:3}"); rp=("${ports[@]:3:3}"); mp=("${ports[@]:6:3}"); voters=""
for i in 0 1 2; do voters+="${voters:+,}$i@127.0.0.1:${rp[$i]}"; done
for i in 0 1 2; do
  PETREL_PPROF=1 "$bin" server --node-id "$i" --data-dir "$work/n$i" --listen "127.0.0.1:${kp[$i]}" \
    --raft-listen "127.0.0.1:${rp[$i]}" --voters "$voters" --metrics-listen "127.0.0.1:${mp[$i]}" >"$work/n$i.log" 2>&1 &
  pids+=($!)
done
for i in 0 1 2; do wait_for "$work/n$i.log" "registered with the controller"; done
addr="127.0.0.1:${kp[0]},127.0.0.1:${kp[1]},127.0.0.1:${kp[2]}"
for _ in $(seq 1 100); do
  [ "$("$bin" cluster describe --bootstrap-server "$addr" 2>/dev/null | grep -c ' active$')" = 3 ] && break
  sleep 0.2
done
"$bin" topics create r3 --partitions 6 --replication-factor 3 --config min.insync.replicas=2 --bootstrap-server "$addr" >/dev/null
"$bin" perf produce r3 --duration 25s --record-size 1024 --acks all --max-buffered-records "$buffered" \
  --bootstrap-server "$addr" --json >"$out/perf.json" 2>/dev/null &
perfpid=$!
sleep 5
curls=()
for i in 0 1 2; do
  base="http://127.0.0.1:${mp[$i]}/debug/pprof"
  curl -s -o "$out/cpu$i.pprof" "$base/profile?seconds=10" & curls+=($!)
  curl -s -o "$out/block$i.pprof" "$base/block?seconds=10" & curls+=($!)
  curl -s -o "$out/mutex$i.pprof" "$base/mutex?seconds=10" & curls+=($!)
  curl -s -o "$out/allocs$i.pprof" "$base/allocs?seconds=10" & curls+=($!)
done
curl -s -o "$out/trace0.out" "http://127.0.0.1:${mp[0]}/debug/pprof/trace?seconds=2" & curls+=($!)
for c in "${curls[@]}"; do wait "$c" || true; done
wait "$perfpid" || true
cp "$bin" "$out/petrel"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 -c 'import json; d=json.load(open("'"$out"'/perf.json")); print("produced %.1f MB/s, %.0f records/s, p50 %.2f ms, p99 %.2f ms" % (d["mb_per_second"], d["records_per_second"], d["latency_ms"]["p50"], d["latency_ms"]["p99"]))'
for i in 0 1 2; do
  echo "== node $i CPU"; go tool pprof -top -nodecount 25 "$out/petrel" "$out/cpu$i.pprof" 2>/dev/null | sed -n 4,32p
done
echo "== node 0 block"; go tool pprof -top -nodecount 15 "$out/petrel" "$out/block0.pprof" 2>/dev/null | sed -n 4,22p
echo "== node 0 mutex"; go tool pprof -top -nodecount 15 "$out/petrel" "$out/mutex0.pprof" 2>/dev/null | sed -n 4,22p
echo "== node 0 allocations (alloc_space)"; go tool pprof -sample_index=alloc_space -top -nodecount 15 "$out/petrel" "$out/allocs0.pprof" 2>/dev/null | sed -n 4,22p

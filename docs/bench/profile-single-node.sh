#!/usr/bin/env bash
# Profiles one broker's produce path (fsync on) and catch-up fetch path under load:
#   bash docs/bench/profile-single-node.sh [out-dir] [petrel-binary]
# A `petrel dev` broker with PETREL_PPROF=1 (profiles on its metrics listener; the
# binary given, or this tree built): first Petrel's default (flush.messages=1), a
# 3-partition topic, one `petrel perf produce` of 1 KiB records at acks=all for 14 s,
# profiled from second 3 for 8 s (CPU, block, mutex); then, in page-cache mode, 1 GiB
# loaded into a 1-partition topic and read from the start again and again by `petrel
# perf fetch` (the follower-style catch-up fetch) while a second 8 s CPU profile runs.
# Beside each profile: the broker's user and system CPU seconds over the same window
# (/proc/PID/stat), the split between Go and the kernel. Prints the top of each profile;
# read them again with `go tool pprof -top out-dir/petrel out-dir/<name>.pprof`.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-/tmp/petrel-profiles-single}
mkdir -p "$out"
work=$(mktemp -d)
if [ -n "${2:-}" ]; then cp "$2" "$out/petrel"; else go build -o "$out/petrel" .; fi
bin=$out/petrel
. docs/bench/dev-broker.sh
cleanup() { [ -n "$broker_pid" ] && kill "$broker_pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
cpu() { awk '{print $14, $15}' "/proc/$broker_pid/stat"; } # utime stime, in clock ticks
profile() { # name: 8 s CPU (and block, mutex) profile with the user/system split
  local name=$1 u0 s0 u1 s1 tck
  tck=$(getconf CLK_TCK)
  read -r u0 s0 < <(cpu)
  curl -s -o "$out/$name-block.pprof" "$pprof/block?seconds=8" &
  local block=$!
  curl -s -o "$out/$name-mutex.pprof" "$pprof/mutex?seconds=8" &
  local mutex=$!
  curl -s -o "$out/$name-cpu.pprof" "$pprof/profile?seconds=8"
  read -r u1 s1 < <(cpu)
  wait "$block" "$mutex" || true
  echo "== $name: broker CPU over the profile: user $(( (u1 - u0) * 100 / tck ))0 ms, system $(( (s1 - s0) * 100 / tck ))0 ms; load $(cut -d' ' -f1-3 /proc/loadavg)"
  go tool pprof -top -nodecount 30 "$bin" "$out/$name-cpu.pprof" 2>/dev/null | sed -n 4,36p
  echo "== $name: block"
  go tool pprof -top -nodecount 8 "$bin" "$out/$name-block.pprof" 2>/dev/null | sed -n 4,14p
}

PETREL_PPROF=1 run_broker "$bin"
pprof="http://$metrics/debug/pprof"
"$bin" topics create bench --partitions 3 --bootstrap-server "$addr" >/dev/null
"$bin" perf produce bench --record-size 1024 --acks all --duration 14s --bootstrap-server "$addr" --json >"$out/produce.json" 2>/dev/null &
producer=$!
sleep 3
profile produce
wait "$producer"
echo "produce: $(cat "$out/produce.json")"
stop_broker

PETREL_PPROF=1 run_broker "$bin" "--set log.flush.interval.messages=9223372036854775807"
pprof="http://$metrics/debug/pprof"
"$bin" topics create catchup --partitions 1 --bootstrap-server "$addr" >/dev/null
"$bin" perf produce catchup --records 1048576 --record-size 1024 --acks 1 --bootstrap-server "$addr" >/dev/null 2>&1
( end=$((SECONDS + 12)); while [ $SECONDS -lt $end ]; do
  "$bin" perf fetch catchup --duration 4s --bootstrap-server "$addr" --json >>"$out/fetch.json" 2>/dev/null || true
done ) &
reader=$!
sleep 2
profile fetch
wait "$reader"
echo "fetch: $(head -c 400 "$out/fetch.json")"

#!/usr/bin/env bash
# Single-node produce benchmark, reproducible with one command:
#   bash docs/bench/single-node.sh [records] [pairs]
# Starts its own throwaway broker(s) (`petrel dev`, free ports) and measures, in one run:
#   - `petrel perf produce` with 1 KiB random records to 3 partitions, kgo defaults, at
#     acks=1 and acks=all, as fast as possible and at 5,000 records/s, first with Petrel's
#     default (flush.messages=1: fsync before acknowledging), then with Kafka's page-cache
#     default;
#   - the ceilings beside them: loopback TCP (petrel perf loopback), the same producer
#     against a broker that costs nothing (petrel perf produce-ceiling), and the disk's
#     raw fsynced sequential write rate (docs/bench/fsyncrate.go, a write and an fsync at a
#     time, as dd oflag=dsync does) at 1 MiB and at the broker's mean bytes per fsync in
#     the fsync acks=all run;
#   - with PETREL_SERVER_BIN=/path/to/older/petrel: [pairs] (default 3) alternating
#     before/after runs of fsync acks=all, the broker's CPU seconds per MiB (utime+stime
#     from /proc) and its mean bytes per fsync beside each, each pair after its own
#     produce-ceiling run, the load average per row.
# Prints Markdown tables; MB is MiB, as Kafka's perf tools count.
set -euo pipefail
cd "$(dirname "$0")/../.."
records=${1:-200000}
pairs=${2:-3}
work=$(mktemp -d)
bin=$work/petrel
go build -o "$bin" .
. docs/bench/dev-broker.sh
cleanup() { [ -n "$broker_pid" ] && kill "$broker_pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }
scrape() { # bytes appended, fsyncs, broker CPU seconds
  curl -s "http://$metrics/metrics" | python3 -c '
import os, sys
b = f = 0.0
for line in sys.stdin:
    if line.startswith("kafka_server_brokertopicmetrics_bytesin_total"):
        b += float(line.split()[-1])
    elif line.startswith("kafka_log_logflushstats_logflushrateandtimems_count"):
        f += float(line.split()[-1])
st = open("/proc/'"$broker_pid"'/stat").read().rsplit(")", 1)[1].split()
print(int(b), int(f), (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK"))'
}
produce() { # records acks [flags...] -> JSON
  local n=$1 acks=$2; shift 2
  "$bin" perf produce bench --records "$n" --record-size 1024 --acks "$acks" "$@" --bootstrap-server "$addr" --json 2>/dev/null
}
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

loopback=$("$bin" perf loopback --duration 3s --json | field 'round(d["mb_per_second"],1)')
ceiling=$("$bin" perf produce-ceiling --records "$records" --record-size 1024 --json 2>/dev/null | field 'round(d["mb_per_second"],1)')
echo "load average: $(load)"
echo
echo "| mode | acks | records/s | MB/s | × loopback | × produce-ceiling | p50 ms | p99 ms | p99.9 ms |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
echo "| loopback TCP (1 MiB writes) | | | $loopback | 1.00 | | | | |"
echo "| produce-ceiling (kgo, broker costs nothing) | all | | $ceiling | | 1.00 | | | |"
fsync_size=1048576; fsync_all=0
for mode in "fsync (default)|" "page cache (Kafka default)|--set log.flush.interval.messages=9223372036854775807"; do
  name=${mode%%|*}; flags=${mode#*|}
  run_broker "$bin" "$flags"
  "$bin" topics create bench --partitions 3 --bootstrap-server "$addr" >/dev/null
  for run in "1|" "all|" "1|5000" "all|5000"; do
    acks=${run%%|*}; rate=${run#*|}
    limit=(); label="$acks"
    if [ -n "$rate" ]; then limit=(--throughput-limit "$rate"); label="$acks @ $rate rec/s"; fi
    n=$records; [ -n "$rate" ] && n=$((rate * 5))
    read -r b0 f0 _ < <(scrape)
    out=$(produce "$n" "$acks" "${limit[@]}")
    read -r b1 f1 _ < <(scrape)
    if [ "$name" = "fsync (default)" ] && [ "$label" = all ]; then
      fsync_size=$(( (b1 - b0) / (f1 - f0 > 0 ? f1 - f0 : 1) ))
      fsync_all=$(echo "$out" | field 'd["mb_per_second"]')
    fi
    echo "$out" | python3 -c "
import json,sys
d=json.load(sys.stdin); l=d['latency_ms']
print('| $name | $label | %.0f | %.1f | %.2f | %.2f | %.1f | %.1f | %.1f |' % (d['records_per_second'], d['mb_per_second'], d['mb_per_second']/$loopback, d['mb_per_second']/$ceiling, l['p50'], l['p99'], l['p999']))"
  done
  stop_broker
done
echo
echo "| raw fsynced sequential writes | MB/s | fsync p50 ms | fsync acks=all ÷ it |"
echo "|---|---:|---:|---:|"
for size in 1048576 "$fsync_size"; do
  go run docs/bench/fsyncrate.go --dir "$work" --size "$size" --duration 3s |
    python3 -c "
import json,sys
d=json.load(sys.stdin)
print('| %d bytes a write | %.1f | %.2f | %.2f |' % ($size, d['mb_per_second'], d['p50_ms'], $fsync_all/d['mb_per_second']))"
done
echo "mean bytes per fsync, fsync acks=all: $fsync_size; load average: $(load)"

[ -z "${PETREL_SERVER_BIN:-}" ] && exit 0
echo
echo "| pair | build | MB/s | × produce-ceiling of the pair | broker CPU ms per MiB | mean KiB per fsync | load |"
echo "|---|---|---:|---:|---:|---:|---|"
for pair in $(seq 1 "$pairs"); do
  ceiling=$("$bin" perf produce-ceiling --records "$records" --record-size 1024 --json 2>/dev/null | field 'round(d["mb_per_second"],1)')
  echo "| $pair | produce-ceiling | $ceiling | 1.00 | | | $(load) |"
  for build in "before|$PETREL_SERVER_BIN" "after|$bin"; do
    run_broker "${build#*|}" ""
    "$bin" topics create bench --partitions 3 --bootstrap-server "$addr" >/dev/null
    read -r b0 f0 c0 < <(scrape)
    out=$(produce "$records" all)
    read -r b1 f1 c1 < <(scrape)
    mbs=$(echo "$out" | field 'd["mb_per_second"]')
    python3 -c "
mib = ($b1 - $b0) / 1048576
print('| $pair | ${build%%|*} | %.1f | %.2f | %.2f | %.0f | $(load) |' % ($mbs, $mbs/$ceiling, ($c1 - $c0) * 1000 / max(mib, 1e-9), ($b1 - $b0) / 1024 / max($f1 - $f0, 1)))"
    stop_broker
  done
done

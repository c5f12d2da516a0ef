#!/usr/bin/env bash
# Single-node produce benchmark, reproducible with one command:
#   bash docs/bench/single-node.sh [records] [pairs]
# Starts its own throwaway broker(s) (`petrel dev`, free ports) and measures, in one run:
#   - `petrel perf produce` with 1 KiB random records to 3 partitions, kgo defaults, at
#     acks=1 and acks=all, as fast as possible and at 5,000 records/s, first with Petrel's
#     default (flush.messages=1: fsync before acknowledging), then with Kafka's page-cache
#     default;
#   - the ceilings beside them: loopback TCP (petrel perf loopback), the same producer
#     against a broker that costs nothing (petrel perf produce-ceiling, a topic of 3
#     partitions as in the runs), the same against a broker whose only cost is the disk
#     (produce-ceiling --fsync-dir: each batch appended to a file and answered after an
#     fsync covering it, group commit), with a file per partition as a Kafka log keeps
#     them and, beside it, one partition in one file; and the disk's
#     raw fsynced sequential write rate (docs/bench/fsyncrate.go, a write and an fsync at a
#     time, as dd oflag=dsync does) at 1 MiB and at the broker's mean bytes per fsync in
#     the fsync acks=all run;
#   - CPU time per MiB produced (user + system, docs/bench/cpu.sh) of the broker (/proc),
#     of the kgo producer (perf produce), of produce-ceiling's process, of fsyncrate's
#     writes and fsyncs and of a loopback receiver (docs/bench/tcpstream.go), and the
#     host's busy share of its cores per run; then the CPU floor: the rate the host's
#     cores reach if the broker cost only the raw path, cores ÷ (the producer's CPU per
#     MiB + fsyncrate's at the broker's mean fsync size + the loopback receiver's). A
#     client process's CPU per MiB leaves out its fixed cost (start, connection,
#     metadata), measured by the same command with one record;
#   - with PETREL_SERVER_BIN=/path/to/older/petrel: [pairs] (default 3) alternating
#     before/after runs of fsync acks=all (PAIR_ACKS=1: acks=1), the broker's and the
#     producer's CPU per MiB and the broker's mean bytes per fsync beside each, each
#     pair after its own produce-ceiling run, the load average per row.
# Each unthrottled produce run and each raw disk run writes into pages just freed
# (recycle_pages, docs/bench/pages.sh, before it; see replicated.sh).
# Prints Markdown tables; MB is MiB, as Kafka's perf tools count.
set -euo pipefail
cd "$(dirname "$0")/../.."
records=${1:-200000}
pairs=${2:-3}
work=$(mktemp -d)
bin=$work/petrel
go build -o "$bin" .
go build -o "$work/tcpstream" docs/bench/tcpstream.go
. docs/bench/dev-broker.sh
. docs/bench/cpu.sh
. docs/bench/pages.sh
cores=$(nproc)
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
produce() { # records acks [flags...] -> JSON; the producer's CPU seconds into $work/client.cpu
  local n=$1 acks=$2; shift 2
  cpu_run "$work/client.cpu" "$bin" perf produce bench --records "$n" --record-size 1024 --acks "$acks" "$@" --bootstrap-server "$addr" --json 2>/dev/null
}
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

loopback=$("$bin" perf loopback --duration 3s --json | field 'round(d["mb_per_second"],1)')
# The loopback receiver's CPU per MiB: the least a broker's socket reads of the stream cost.
exec 3< <("$work/tcpstream" send --duration 3s)
read -r tport <&3
recv_ms=$("$work/tcpstream" recv "$tport" | field 'round(d["cpu_seconds_per_mb"]*1000,3)')
exec 3<&-
cpu_run "$work/ceiling.cpu" "$bin" perf produce-ceiling --partitions 3 --records 1 --record-size 1024 --json >/dev/null 2>&1
ceiling_fixed=$(cat "$work/ceiling.cpu")
ceiling_out=$(cpu_run "$work/ceiling.cpu" "$bin" perf produce-ceiling --partitions 3 --records "$records" --record-size 1024 --json 2>/dev/null)
ceiling=$(echo "$ceiling_out" | field 'round(d["mb_per_second"],1)')
ceiling_ms=$(python3 -c "print(round(($(cat "$work/ceiling.cpu") - $ceiling_fixed) * 1000 / ($records * 1024 / 1048576), 3))")
fsync_ceiling_run() { # partitions -> "MB/s KiB-per-fsync"
  recycle_pages "$work" $((2 * records * 1024)) >/dev/null
  local mbs
  mbs=$("$bin" perf produce-ceiling --partitions "$1" --records "$records" --record-size 1024 --json --fsync-dir "$work" 2>"$work/fsync-ceiling.err" |
    field 'round(d["mb_per_second"],1)')
  echo "$mbs $(grep -o '[0-9]* KiB per fsync' "$work/fsync-ceiling.err" | cut -d' ' -f1)"
}
read -r fsync_ceiling fsync_ceiling_kib < <(fsync_ceiling_run 3)
read -r fsync_ceiling1 fsync_ceiling1_kib < <(fsync_ceiling_run 1)
echo "load average: $(load); $cores cores; CPU ms per MiB: loopback receiver (tcpstream recv) $recv_ms, produce-ceiling's process $ceiling_ms"
echo
echo "| mode | acks | records/s | MB/s | × loopback | × produce-ceiling | p50 ms | p99 ms | p99.9 ms | broker CPU ms/MiB | producer CPU ms/MiB | host busy |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
echo "| loopback TCP (1 MiB writes) | | | $loopback | 1.00 | | | | | | | |"
echo "| produce-ceiling (kgo, broker costs nothing) | all | | $ceiling | | 1.00 | | | | | $ceiling_ms | |"
echo "| produce-ceiling --fsync-dir (broker costs only its fsyncs, a file per partition; $fsync_ceiling_kib KiB per fsync) | all | | $fsync_ceiling | | $(python3 -c "print(round($fsync_ceiling/$ceiling, 2))") | | | | | | |"
echo "| the same with one partition in one file ($fsync_ceiling1_kib KiB per fsync) | all | | $fsync_ceiling1 | | $(python3 -c "print(round($fsync_ceiling1/$ceiling, 2))") | | | | | | |"
fsync_size=1048576; fsync_all=0; fsync_one=0; client_all_ms=0
for mode in "fsync (default)|" "page cache (Kafka default)|--set log.flush.interval.messages=9223372036854775807"; do
  name=${mode%%|*}; flags=${mode#*|}
  run_broker "$bin" "$flags"
  "$bin" topics create bench --partitions 3 --bootstrap-server "$addr" >/dev/null
  produce 1 all >/dev/null
  client_fixed=$(cat "$work/client.cpu") # the producer's fixed cost: start, connection, metadata
  for run in "1|" "all|" "1|5000" "all|5000"; do
    acks=${run%%|*}; rate=${run#*|}
    limit=(); label="$acks"
    if [ -n "$rate" ]; then limit=(--throughput-limit "$rate"); label="$acks @ $rate rec/s"; fi
    n=$records; [ -n "$rate" ] && n=$((rate * 5))
    [ -z "$rate" ] && recycle_pages "$work" $((2 * n * 1024)) >/dev/null
    read -r b0 f0 c0 < <(scrape)
    read -r h0 t0 < <(host_busy)
    out=$(produce "$n" "$acks" "${limit[@]}")
    read -r h1 t1 < <(host_busy)
    read -r b1 f1 c1 < <(scrape)
    client_ms=$(python3 -c "print(($(cat "$work/client.cpu") - $client_fixed) * 1000 / ($n * 1024 / 1048576))")
    if [ "$name" = "fsync (default)" ] && [ "$label" = all ]; then
      fsync_size=$(( (b1 - b0) / (f1 - f0 > 0 ? f1 - f0 : 1) ))
      fsync_all=$(echo "$out" | field 'd["mb_per_second"]')
      client_all_ms=$client_ms
    fi
    if [ "$name" = "fsync (default)" ] && [ "$label" = 1 ]; then fsync_one=$(echo "$out" | field 'd["mb_per_second"]'); fi
    echo "$out" | python3 -c "
import json,sys
d=json.load(sys.stdin); l=d['latency_ms']
mib = max(($b1 - $b0) / 1048576, 1e-9)
print('| $name | $label | %.0f | %.1f | %.2f | %.2f | %.1f | %.1f | %.1f | %.2f | %.2f | %.0f %% |' % (d['records_per_second'], d['mb_per_second'], d['mb_per_second']/$loopback, d['mb_per_second']/$ceiling, l['p50'], l['p99'], l['p999'],
  ($c1 - $c0) * 1000 / mib, $client_ms, 100 * ($h1 - $h0) / max($t1 - $t0, 1e-9)))"
  done
  stop_broker
done
echo
echo "| raw fsynced sequential writes | MB/s | fsync p50 ms | fsync acks=all ÷ it | fsync acks=1 ÷ it | CPU ms/MiB |"
echo "|---|---:|---:|---:|---:|---:|"
go build -o "$work/fsyncrate" docs/bench/fsyncrate.go
for size in 1048576 "$fsync_size"; do
  recycle_pages "$work" $((4 << 30)) >/dev/null
  out=$("$work/fsyncrate" --dir "$work" --size "$size" --duration 3s)
  echo "$out" | python3 -c "
import json,sys
d=json.load(sys.stdin)
print('| %d bytes a write | %.1f | %.2f | %.2f | %.2f | %.3f |' % ($size, d['mb_per_second'], d['p50_ms'], $fsync_all/d['mb_per_second'], $fsync_one/d['mb_per_second'], d['cpu_seconds_per_mb']*1000))"
  raw_ms=$(echo "$out" | field 'd["cpu_seconds_per_mb"]*1000')
done
echo "mean bytes per fsync, fsync acks=all: $fsync_size; load average: $(load)"
python3 -c "
floor = $cores * 1000 / ($client_all_ms + $raw_ms + $recv_ms)
print()
print('CPU floor: %d cores ÷ (producer %.3f + fsyncrate at %d bytes %.3f + loopback receiver %.3f CPU ms/MiB) = %.1f MB/s; fsync acks=all %.1f MB/s = %.2f× it, fsync acks=1 %.1f MB/s = %.2f× it' % (
  $cores, $client_all_ms, $fsync_size, $raw_ms, $recv_ms, floor, $fsync_all, $fsync_all / floor, $fsync_one, $fsync_one / floor))
print('Client-and-disk ceiling: the same producer against a broker whose only cost is its fsyncs, a file per partition (produce-ceiling --fsync-dir --partitions 3) %.1f MB/s; fsync acks=all %.1f MB/s = %.2f× it (one partition in one file: %.1f MB/s)' % ($fsync_ceiling, $fsync_all, $fsync_all / $fsync_ceiling, $fsync_ceiling1))"

[ -z "${PETREL_SERVER_BIN:-}" ] && exit 0
echo
pair_acks=${PAIR_ACKS:-all}
echo "pairs at fsync acks=$pair_acks"
echo "| pair | build | MB/s | × produce-ceiling of the pair | broker CPU ms per MiB | producer CPU ms per MiB | mean KiB per fsync | load |"
echo "|---|---|---:|---:|---:|---:|---:|---|"
for pair in $(seq 1 "$pairs"); do
  ceiling=$("$bin" perf produce-ceiling --partitions 3 --records "$records" --record-size 1024 --json 2>/dev/null | field 'round(d["mb_per_second"],1)')
  echo "| $pair | produce-ceiling | $ceiling | 1.00 | | | | $(load) |"
  for build in "before|$PETREL_SERVER_BIN" "after|$bin"; do
    run_broker "${build#*|}" ""
    "$bin" topics create bench --partitions 3 --bootstrap-server "$addr" >/dev/null
    produce 1 "$pair_acks" >/dev/null
    client_fixed=$(cat "$work/client.cpu")
    recycle_pages "$work" $((2 * records * 1024)) >/dev/null
    read -r b0 f0 c0 < <(scrape)
    out=$(produce "$records" "$pair_acks")
    read -r b1 f1 c1 < <(scrape)
    mbs=$(echo "$out" | field 'd["mb_per_second"]')
    python3 -c "
mib = ($b1 - $b0) / 1048576
print('| $pair | ${build%%|*} | %.1f | %.2f | %.2f | %.2f | %.0f | $(load) |' % ($mbs, $mbs/$ceiling, ($c1 - $c0) * 1000 / max(mib, 1e-9),
  ($(cat "$work/client.cpu") - $client_fixed) * 1000 / ($records * 1024 / 1048576), ($b1 - $b0) / 1024 / max($f1 - $f0, 1)))"
    stop_broker
  done
done

#!/usr/bin/env bash
# Replicated produce benchmark, reproducible with one command:
#   bash docs/bench/replicated.sh [records]
# In one run, on loopback:
#   - three `petrel server` processes: 1 KiB random records, 6 partitions, acks=all with
#     replication factor 3 (min.insync.replicas=2) beside acks=1 with replication
#     factor 1; then one record in flight at a time (--max-buffered-records 1) with
#     acks=all, RF 3, with the fsync default and in page-cache mode
#     (flush.messages=9223372036854775807), and beside them their floor: the same
#     message pattern between three processes without a broker (petrel perf floor);
#   - three nats-server processes clustered with JetStream and a file store with
#     sync_interval: always (fsync before acknowledging, comparable to Petrel's
#     default), `nats bench` publishing the same number of 1 KiB random messages to an
#     R3 stream (async, and sync for one message in flight);
#   - the disk's raw fsynced sequential write rate (docs/bench/fsyncrate.go) at the mean
#     bytes per fsync Petrel's replicas wrote in the acks=all run, and at 1 MiB; and
#     three writers at once at that size (--writers 3, a file each): an RF 3 cluster on
#     one disk writes and fsyncs every byte three times, so a third of their sum (the
#     per-copy rate) is the most it can reach there;
#   - CPU time per MiB produced (user + system, docs/bench/cpu.sh) of the three brokers
#     and of the producer in the RF 3 acks=all run, the host's busy share of its cores
#     meanwhile, fsyncrate's own CPU per MiB and a loopback receiver's
#     (docs/bench/tcpstream.go), and the CPU floor they make: cores ÷ (the producer's
#     CPU per MiB + 3 × (fsyncrate's + the receiver's)), three copies each written,
#     fsynced and received once (the producer's fixed cost, one record's run, left out);
#   - loopback TCP (petrel perf loopback);
#   - the replicated ceiling: the same producer and records against three canned
#     brokers, a process each (petrel perf produce-ceiling --replicas 3), that check each
#     batch's CRC, store, fsync and replicate it by fetch as Kafka followers do, and
#     nothing else: the most RF 3 acks=all reaches here with this client, this disk and
#     these cores, and the CPU per MiB that costs.
# Each throughput run (Petrel's, NATS's, the raw disk's) writes into pages just freed:
# recycle_pages (docs/bench/pages.sh) writes and deletes at least the bytes it will write
# just before it; what a page costs in either case is printed (the first recycle_pages
# call takes the pages as the machine had them, the second the first's).
# nats-server and the nats CLI are built from the Go module proxy into a temporary
# GOBIN; nothing of theirs is kept. Prints one Markdown table; MB is MiB, as Kafka's
# perf tools count. PETREL_SERVER_BIN=path runs the servers from another petrel binary
# (an older build, for a before/after comparison in one run); the clients stay this one.
set -euo pipefail
cd "$(dirname "$0")/../.."
records=${1:-100000}
work=$(mktemp -d)
bin=$work/petrel
go build -o "$bin" .
go build -o "$work/fsyncrate" docs/bench/fsyncrate.go
go build -o "$work/tcpstream" docs/bench/tcpstream.go
. docs/bench/cpu.sh
. docs/bench/pages.sh
cores=$(nproc)
server_bin=${PETREL_SERVER_BIN:-$bin}
GOBIN=$work/tools go install github.com/nats-io/nats-server/v2@v2.15.2
GOBIN=$work/tools go install github.com/nats-io/natscli/nats@v0.5.0
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
head -c 1024 /dev/urandom >"$work/payload"

source docs/bench/ports.sh # free_ports
wait_for() { # $1 log file, $2 pattern
  for _ in $(seq 1 600); do grep -q "$2" "$1" && return; sleep 0.1; done
  echo "timed out waiting for '$2' in $1" >&2; cat "$1" >&2; exit 1
}
stop_all() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; pids=(); }
row() { # label, records/s, MB/s, p50, p99 (awk computes the ratios at the end)
  rows+=("$1|$2|$3|$4|$5")
}
rows=()
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

loopback=$("$bin" perf loopback --duration 3s --json | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["mb_per_second"],1))')

# Three Petrel processes.
read -r -a ports <<<"$(free_ports 9)"
kp=("${ports[@]:0:3}"); rp=("${ports[@]:3:3}"); mp=("${ports[@]:6:3}"); voters=""
for i in 0 1 2; do voters+="${voters:+,}$i@127.0.0.1:${rp[$i]}"; done
for i in 0 1 2; do
  "$server_bin" server --node-id "$i" --data-dir "$work/n$i" --listen "127.0.0.1:${kp[$i]}" \
    --raft-listen "127.0.0.1:${rp[$i]}" --voters "$voters" --metrics-listen "127.0.0.1:${mp[$i]}" >"$work/n$i.log" 2>&1 &
  pids+=($!)
done
for i in 0 1 2; do wait_for "$work/n$i.log" "registered with the controller"; done
addr="127.0.0.1:${kp[0]},127.0.0.1:${kp[1]},127.0.0.1:${kp[2]}"
for _ in $(seq 1 100); do # wait for three active (unfenced) brokers
  [ "$("$bin" cluster describe --bootstrap-server "$addr" 2>/dev/null | grep -c ' active$')" = 3 ] && break
  sleep 0.2
done
"$bin" topics create r3 --partitions 6 --replication-factor 3 --config min.insync.replicas=2 --bootstrap-server "$addr" >/dev/null
"$bin" topics create r1 --partitions 6 --replication-factor 1 --bootstrap-server "$addr" >/dev/null
"$bin" topics create lat --partitions 1 --replication-factor 3 --config min.insync.replicas=2 --bootstrap-server "$addr" >/dev/null
"$bin" topics create latpc --partitions 1 --replication-factor 3 --config min.insync.replicas=2 \
  --config flush.messages=9223372036854775807 --bootstrap-server "$addr" >/dev/null
scrape() { # sum over the three nodes of: bytes appended (produced + replicated) and fsyncs
  for i in 0 1 2; do curl -s "http://127.0.0.1:${mp[$i]}/metrics"; done | python3 -c '
import sys
b = f = 0.0
for line in sys.stdin:
    if line.startswith(("kafka_server_brokertopicmetrics_bytesin_total", "kafka_server_brokertopicmetrics_replicationbytesin_total")):
        b += float(line.split()[-1])
    elif line.startswith("kafka_log_logflushstats_logflushrateandtimems_count"):
        f += float(line.split()[-1])
print(int(b), int(f))'
}
perf() { # topic acks records [extra flags...] -> "records/s MB/s p50 p99"; the producer's CPU seconds into $work/client.cpu
  local topic=$1 acks=$2 n=$3; shift 3
  cpu_run "$work/client.cpu" "$bin" perf produce "$topic" --records "$n" --record-size 1024 --acks "$acks" "$@" --bootstrap-server "$addr" --json 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); l=d["latency_ms"]; print("%.0f %.1f %.2f %.2f" % (d["records_per_second"], d["mb_per_second"], l["p50"], l["p99"]))'
}
perf r3 all 1 >/dev/null
client_fixed=$(cat "$work/client.cpu") # the producer's start, connection and metadata
page_new_ms=$(recycle_pages "$work" $((5 * records * 1024)))
page_recycled_ms=$(recycle_pages "$work" $((5 * records * 1024)))
read -r b0 f0 < <(scrape)
c0=$(proc_cpu "${pids[@]}"); read -r h0 t0 < <(host_busy)
read -r rps mbs p50 p99 < <(perf r3 all "$records")
c1=$(proc_cpu "${pids[@]}"); read -r h1 t1 < <(host_busy)
read -r b1 f1 < <(scrape)
r3_mib=$(python3 -c "print($records * 1024 / 1048576)")
brokers_ms=$(python3 -c "print(round(($c1 - $c0) * 1000 / $r3_mib, 3))")
producer_ms=$(python3 -c "print(round(($(cat "$work/client.cpu") - $client_fixed) * 1000 / $r3_mib, 3))")
host_share=$(python3 -c "print(round(100 * ($h1 - $h0) / max($t1 - $t0, 1e-9)))")
row "Petrel, 3 processes: RF 3, acks=all" "$rps" "$mbs" "$p50" "$p99"
petrel_r3=$mbs
write_size=$(( (b1 - b0) / (f1 - f0 > 0 ? f1 - f0 : 1) ))
write_size=$(( write_size < 4096 ? 4096 : write_size ))
recycle_pages "$work" $((2 * records * 1024)) >/dev/null
read -r rps mbs p50 p99 < <(perf r1 1 "$records")
row "Petrel, 3 processes: RF 1, acks=1" "$rps" "$mbs" "$p50" "$p99"
read -r rps mbs p50 p99 < <(perf lat all 5000 --max-buffered-records 1)
row "Petrel: one record in flight, RF 3, acks=all, fsync" "$rps" "$mbs" "$p50" "$p99"
read -r rps mbs p50 p99 < <(perf latpc all 5000 --max-buffered-records 1)
row "Petrel: one record in flight, RF 3, acks=all, page cache" "$rps" "$mbs" "$p50" "$p99"
stop_all
# The floor of the two rows above, in the same run: the same message pattern between a
# leader and two follower processes, without a broker (petrel perf floor).
floor() { # records [extra flags...] -> "records/s MB/s p50 p99"
  local n=$1; shift
  "$bin" perf floor --records "$n" --record-size 1024 --replicas 3 --dir "$work" "$@" --json 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); l=d["latency_ms"]; print("%.0f %.1f %.2f %.2f" % (d["records_per_second"], d["mb_per_second"], l["p50"], l["p99"]))'
}
read -r rps mbs p50 p99 < <(floor 5000 --fsync)
row "floor (petrel perf floor): one record in flight, 3 processes, fsync" "$rps" "$mbs" "$p50" "$p99"
read -r rps mbs p50 p99 < <(floor 5000)
row "floor (petrel perf floor): one record in flight, 3 processes, page cache" "$rps" "$mbs" "$p50" "$p99"

# The ceiling of the RF 3 acks=all row, in the same run: the same producer against
# three canned brokers, a process each, that check each batch's CRC, store, fsync and
# replicate it by fetch and nothing else (petrel perf produce-ceiling --replicas 3).
mkdir "$work/ceiling"
recycle_pages "$work" $((5 * records * 1024)) >/dev/null
"$bin" perf produce-ceiling --records "$records" --record-size 1024 --acks all --partitions 6 --replicas 3 \
  --fsync-dir "$work/ceiling" --json >"$work/ceiling.json" 2>"$work/ceiling.err" || { cat "$work/ceiling.err" >&2; exit 1; }
read -r rps mbs p50 p99 < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); l=d["latency_ms"]; print("%.0f %.1f %.2f %.2f" % (d["records_per_second"], d["mb_per_second"], l["p50"], l["p99"]))' "$work/ceiling.json")
row "ceiling (petrel perf produce-ceiling --replicas 3): RF 3, acks=all, 3 canned brokers" "$rps" "$mbs" "$p50" "$p99"
ceiling_r3=$mbs
read -r ceiling_nodes_s ceiling_fsync_kib < <(python3 -c '
import re, sys
m = re.search(r"(\d+) KiB per fsync on average, ([\d.]+) CPU seconds in the nodes", open(sys.argv[1]).read())
print(m[2], m[1])' "$work/ceiling.err")
ceiling_nodes_ms=$(python3 -c "print(round($ceiling_nodes_s * 1000 / $r3_mib, 3))")

# Three NATS JetStream processes, file store, fsync before acknowledging.
read -r -a ports <<<"$(free_ports 6)"
np=("${ports[@]:0:3}"); cp=("${ports[@]:3:3}"); routes=""
for i in 0 1 2; do routes+="${routes:+, }nats://127.0.0.1:${cp[$i]}"; done
for i in 0 1 2; do
  cat >"$work/nats$i.conf" <<EOF
listen: 127.0.0.1:${np[$i]}
server_name: n$i
jetstream { store_dir: "$work/nats$i", sync_interval: always }
cluster { name: bench, listen: 127.0.0.1:${cp[$i]}, routes: [$routes] }
EOF
  "$work/tools/nats-server" -c "$work/nats$i.conf" >"$work/nats$i.log" 2>&1 &
  pids+=($!)
done
for i in 0 1 2; do wait_for "$work/nats$i.log" "JetStream cluster new metadata leader\|Self is new JetStream cluster metadata leader"; done
nats() { "$work/tools/nats" -s "nats://127.0.0.1:${np[0]}" "$@"; }
natsbench() { # mode msgs stream -> "msgs/s MB/s p50 p99" (ms)
  nats bench js pub "$1" "bench.$3" --stream "$3" --create --replicas 3 --storage file --size 1KiB \
    --payload "$work/payload" --msgs "$2" --no-progress 2>&1 | python3 -c '
import re, sys
t = sys.stdin.read()
m = re.search(r"stats: ([\d,]+) msgs/sec .*P50: ([\d,.]+)us.*P99: ([\d,.]+)us", t)
if not m:
    sys.exit("nats bench: " + t)
f = lambda s: float(s.replace(",", ""))
print("%.0f %.1f %.2f %.2f" % (f(m[1]), f(m[1]) * 1024 / 2**20, f(m[2]) / 1000, f(m[3]) / 1000))'
}
recycle_pages "$work" $((4 * records * 1024)) >/dev/null
read -r rps mbs p50 p99 < <(natsbench async "$records" thr)
row "NATS JetStream R3, file store, sync_interval always: async publish" "$rps" "$mbs" "$p50" "$p99"
nats_r3=$mbs
read -r rps mbs p50 p99 < <(natsbench sync 5000 lat)
row "NATS JetStream R3, file store, sync_interval always: one message in flight" "$rps" "$mbs" "$p50" "$p99"
stop_all

# The disk: raw fsynced sequential writes, 3 s each, each into pages just freed.
for size in "$write_size" 1048576; do
  recycle_pages "$work" $((4 << 30)) >/dev/null
  read -r mbs p50 p99 < <("$work/fsyncrate" --dir "$work" --size "$size" --duration 3s |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.1f %.2f %.2f" % (d["mb_per_second"], d["p50_ms"], d["p99_ms"]))')
  row "raw fsynced sequential writes of $size bytes" "" "$mbs" "$p50" "$p99"
  [ "$size" = "$write_size" ] && raw_fsync=$mbs
done
# Three writers at once, as three brokers on one disk: a third of the sum per copy.
recycle_pages "$work" $((4 << 30)) >/dev/null
read -r mbs3 per3 p50 p99 fsync_ms < <("$work/fsyncrate" --dir "$work" --size "$write_size" --duration 3s --writers 3 |
  python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.1f %s %.2f %.2f %.3f" % (d["mb_per_second"], "/".join("%.1f" % m for m in d["per_writer_mb_per_second"]), d["p50_ms"], d["p99_ms"], d["cpu_seconds_per_mb"]*1000))')
per_copy=$(python3 -c "print(round($mbs3 / 3, 1))")
row "raw fsynced writes of $write_size bytes, 3 writers at once (sum; each $per3)" "" "$mbs3" "$p50" "$p99"
row "the same, per copy (sum ÷ 3): the most RF 3 on one disk can reach" "" "$per_copy" "" ""
# The loopback receiver's CPU per MiB (each copy is received once).
exec 3< <("$work/tcpstream" send --duration 3s)
read -r tport <&3
recv_ms=$("$work/tcpstream" recv "$tport" | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["cpu_seconds_per_mb"]*1000, 3))')
exec 3<&-
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

echo "load average before: $load_before; after: $load_after; mean bytes per fsync in the RF 3 run: $write_size"
echo "page-cache writes (dd, docs/bench/pages.sh) before the RF 3 run: $page_new_ms CPU ms per MiB into the free memory's pages as they were, $page_recycled_ms into pages just freed"
echo
echo "| what | records/s | MB/s | × NATS R3 | × raw fsync | × loopback | p50 ms | p99 ms |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
echo "| loopback TCP (1 MiB writes) | | $loopback | | | 1.00 | | |"
for r in "${rows[@]}"; do
  IFS='|' read -r what rps mbs p50 p99 <<<"$r"
  python3 -c "
mbs=$mbs
print('| $what | $rps | %.1f | %.2f | %.2f | %.3f | $p50 | $p99 |' % (mbs, mbs/$nats_r3, mbs/$raw_fsync, mbs/$loopback))"
done
echo
echo "RF 3 acks=all ÷ NATS R3: $(python3 -c "print(round($petrel_r3/$nats_r3, 2))"); ÷ raw fsync at $write_size bytes: $(python3 -c "print(round($petrel_r3/$raw_fsync, 2))"); ÷ the per-copy rate of 3 writers ($per_copy MB/s): $(python3 -c "print(round($petrel_r3/$per_copy, 2))")"
echo "RF 3 acks=all ÷ the replicated ceiling ($ceiling_r3 MB/s; itself $(python3 -c "print(round($ceiling_r3/$raw_fsync, 2))")× raw fsync at $write_size bytes, $ceiling_fsync_kib KiB per fsync): $(python3 -c "print(round($petrel_r3/$ceiling_r3, 2))"); the canned brokers' CPU ms per MiB: $ceiling_nodes_ms (Petrel's brokers: $brokers_ms)"
python3 -c "
floor = $cores * 1000 / ($producer_ms + 3 * ($fsync_ms + $recv_ms))
print('CPU ms per MiB produced, RF 3 acks=all run: three brokers %.3f, producer %.3f; host busy %d %% of $cores cores meanwhile' % ($brokers_ms, $producer_ms, $host_share))
print('CPU floor: %d cores ÷ (producer %.3f + 3 × (fsyncrate, 3 writers, %.3f + loopback receiver %.3f)) = %.1f MB/s; RF 3 acks=all %.1f MB/s = %.2f× it' % (
  $cores, $producer_ms, $fsync_ms, $recv_ms, floor, $petrel_r3, $petrel_r3 / floor))
print('at the brokers\' own cost the two cores would allow %.1f MB/s (cores ÷ (brokers + producer CPU per MiB))' % ($cores * 1000 / ($brokers_ms + $producer_ms)))"

#!/usr/bin/env bash
# Where Petrel's RF 3 acks=all run spends CPU beside the replicated ceiling's, one command:
#   bash docs/bench/profile-vs-ceiling.sh [records] [out-dir]
# Three `petrel server` processes on loopback (6 partitions, RF 3, min.insync.replicas=2)
# take [records] 1 KiB random records from `petrel perf produce --acks all` under
# `perf record -F 999 -g -a`; then `petrel perf produce-ceiling --replicas 3` (three
# canned brokers that only check, store, fsync and replicate) takes the same records
# under the same profiler. Each run writes into pages just freed (docs/bench/pages.sh).
# Prints each run's MB/s, the samples (ms of CPU at 999 Hz) per MiB of the brokers, the
# producer and the idle cores, and the symbols whose samples differ most between
# Petrel's brokers and the canned ones. The perf.data files stay in out-dir.
set -euo pipefail
cd "$(dirname "$0")/../.."
records=${1:-1000000}
out=${2:-/tmp/petrel-vs-ceiling}
mkdir -p "$out"
work=$(mktemp -d)
bin=$work/petrel
go build -o "$bin" .
. docs/bench/cpu.sh
. docs/bench/pages.sh
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
source docs/bench/cluster3.sh # the ports (kp, rp, mp), --voters and wait_log
for i in 0 1 2; do
  "$bin" server --node-id "$i" --data-dir "$work/n$i" --listen "127.0.0.1:${kp[$i]}" \
    --raft-listen "127.0.0.1:${rp[$i]}" --voters "$voters" --metrics-listen "127.0.0.1:${mp[$i]}" >"$work/n$i.log" 2>&1 &
  pids+=($!)
done
for i in 0 1 2; do wait_log "$work/n$i.log" "registered with the controller" 60; done
addr="127.0.0.1:${kp[0]},127.0.0.1:${kp[1]},127.0.0.1:${kp[2]}"
for _ in $(seq 1 100); do # three active (unfenced) brokers
  [ "$("$bin" cluster describe --bootstrap-server "$addr" 2>/dev/null | grep -c ' active$')" = 3 ] && break
  sleep 0.2
done
"$bin" topics create r3 --partitions 6 --replication-factor 3 --config min.insync.replicas=2 --bootstrap-server "$addr" >/dev/null
"$bin" perf produce r3 --records 1 --record-size 1024 --acks all --bootstrap-server "$addr" >/dev/null 2>&1
servers=$(IFS=,; echo "${pids[*]}")
mbs() { python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["mb_per_second"], 1))' "$1"; }
recycle_pages "$work" $((5 * records * 1024)) >/dev/null
perf record -q -F 999 -g -a -o "$out/petrel.data" -- "$bin" perf produce r3 --records "$records" --record-size 1024 --acks all \
  --bootstrap-server "$addr" --json >"$work/petrel.json" 2>/dev/null
for p in "${pids[@]}"; do kill "$p"; done; wait 2>/dev/null || true; pids=()
mkdir "$work/ceiling"
recycle_pages "$work" $((5 * records * 1024)) >/dev/null
perf record -q -F 999 -g -a -o "$out/ceiling.data" -- "$bin" perf produce-ceiling --replicas 3 --partitions 6 --fsync-dir "$work/ceiling" \
  --records "$records" --record-size 1024 --acks all --json >"$work/ceiling.json" 2>/dev/null
echo "RF 3 acks=all, $records records: Petrel $(mbs "$work/petrel.json") MB/s, the replicated ceiling $(mbs "$work/ceiling.json") MB/s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
# Samples by process: Petrel's run names its servers, the producer is the other petrel
# process; in the ceiling's run the producer is the first petrel process (perf started
# it) and the canned brokers are the three it started after.
python3 - "$out" "$servers" "$records" <<'PY'
import collections, subprocess, sys
out, servers, records = sys.argv[1], set(sys.argv[2].split(",")), int(sys.argv[3])
mib = records * 1024 / 2**20
def samples(data):
    procs, syms = collections.Counter(), collections.defaultdict(collections.Counter)
    script = subprocess.run(["perf", "script", "-i", data, "-F", "comm,pid,ip,sym", "-G"], capture_output=True, text=True).stdout
    for line in script.splitlines():
        f = line.split(None, 3)
        if len(f) < 3:
            continue
        comm, pid = f[0], f[1]
        procs[(comm, pid)] += 1
        syms[pid][f[3].strip() if len(f) > 3 else "[unknown]"] += 1
    return procs, syms
def table_row(name, g, mib):
    return "| %s | %.2f | %.2f |" % (name, g[0] / mib, g[1] / mib)
p_procs, p_syms = samples(out + "/petrel.data")
c_procs, c_syms = samples(out + "/ceiling.data")
c_petrel = sorted((int(pid) for (comm, pid) in c_procs if comm == "petrel"))
nodes = {str(p) for p in c_petrel[1:]}
def split(procs, brokers):
    b = sum(n for (comm, pid), n in procs.items() if pid in brokers)
    idle = sum(n for (comm, pid), n in procs.items() if pid == "0")
    producer = sum(n for (comm, pid), n in procs.items() if comm == "petrel" and pid not in brokers)
    return b, producer, idle, sum(procs.values()) - b - producer - idle
pb, pc = split(p_procs, servers), split(c_procs, nodes)
print()
print("| CPU ms per MiB produced (samples at 999 Hz) | Petrel | the ceiling |")
print("|---|---:|---:|")
for i, name in enumerate(("the three brokers", "the producer", "idle cores", "the rest (kernel threads, ...)")):
    print("| %s | %.2f | %.2f |" % (name, pb[i] / mib, pc[i] / mib))
ps, cs = collections.Counter(), collections.Counter()
for pid in servers:
    ps.update(p_syms[pid])
for pid in nodes:
    cs.update(c_syms[pid])
diff = sorted(set(ps) | set(cs), key=lambda s: ps[s] - cs[s])
print()
print("| symbol | Petrel's brokers, ms/MiB | the canned brokers | difference |")
print("|---|---:|---:|---:|")
for s in diff[::-1][:15] + diff[:10][::-1]:
    print("| %s | %.3f | %.3f | %+.3f |" % (s[:70], ps[s] / mib, cs[s] / mib, (ps[s] - cs[s]) / mib))
PY

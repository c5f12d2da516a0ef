#!/usr/bin/env bash
# Catch-up consume benchmark (issue #13 item 1), one command:
#   bash docs/bench/fetch.sh [records] [base-commit]
# Starts a throwaway one-node broker (page-cache mode, so that loading is quick; the
# fetch path is the same with fsync) pinned to core 0, loads `records` 1 KiB records
# (default 1 GiB) into a 1-partition and a 6-partition topic with compression off, then
# reads each from the start, with the data in the page cache, in two placements:
#   same   the reader on core 0 too (broker and reader share one core)
#   split  the reader on core 1 (one core each)
# Every row runs REPS times (default 3) in each placement; the table prints medians
# (min–max of MB/s), the ratio to the loopback baseline of the same placement, and
# CPU-seconds per GiB read of the broker (/proc/PID/stat) and of the reader
# (/usr/bin/time), which do not depend on load. Readers:
#   kgo        `petrel perf consume`: a kgo consumer, which decodes every record;
#   ceiling    `petrel perf consume-ceiling`: the same kgo consumer against an
#              in-process fake broker answering every Fetch from canned batches in
#              memory (the client's own ceiling; no broker CPU);
#   kcat       librdkafka (`kcat -C ... -e -q -f ''`), which prefetches and decodes;
#   raw fetch  `petrel perf fetch`: Fetch requests one at a time per leader, batches
#              counted from their headers, never decoded, as a follower does (the
#              broker's catch-up path; MB/s counts whole batches, ~1% above values).
# Loopback baseline: docs/bench/tcpstream.go between two processes pinned as broker and
# reader are (1 MiB writes from a 1 MiB buffer, as `petrel perf loopback`, and from a
# 1 GiB buffer: cold memory, as a page-cache log), plus the unpinned in-process `petrel
# perf loopback` at the start and the end (its drift shows how loaded the machine was).
# Rows marked "non-default" set client properties a user would set for catch-up. With
# base-commit, the raw fetch rows are also run against the broker built from it, on
# the same data.
set -euo pipefail
cd "$(dirname "$0")/../.."
records=${1:-1048576}
base=${2:-}
reps=${REPS:-3}
tmp=$(mktemp -d)
broker_pid=
cleanup() { [ -n "$broker_pid" ] && kill "$broker_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
go build -o "$tmp/petrel" .
go build -o "$tmp/tcpstream" docs/bench/tcpstream.go
if [ -n "$base" ]; then
  mkdir "$tmp/base"
  git archive "$base" | tar -x -C "$tmp/base"
  (cd "$tmp/base" && go build -o "$tmp/petrel-base" .)
fi
command -v kcat >/dev/null || echo "kcat not found: kcat rows skipped" >&2
results=$tmp/results.jsonl
: >"$results"

source docs/bench/ports.sh # free_ports
json_field() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
broker_ticks() { awk '{print $14+$15}' "/proc/$broker_pid/stat"; }

run_broker() { # $1: binary, $2: data dir; sets $addr and $broker_pid
  local port raft; read -r port raft <<<"$(free_ports 2)"
  taskset -c 0 "$1" server --node-id 0 --data-dir "$2" --listen "127.0.0.1:$port" --raft-listen "127.0.0.1:$raft" \
    --set log.flush.interval.messages=9223372036854775807 >"$tmp/broker.log" 2>&1 &
  broker_pid=$!
  addr="127.0.0.1:$port"
  for _ in $(seq 1 300); do
    if "$tmp/petrel" cluster describe --bootstrap-server "$addr" >/dev/null 2>&1; then return; fi
    sleep 0.1
  done
  echo "broker did not start:" >&2; cat "$tmp/broker.log" >&2; exit 1
}
stop_broker() { kill "$broker_pid"; wait "$broker_pid" 2>/dev/null || true; broker_pid=; }

# measure PLACEMENT CORE LABEL KIND [BROKER] -- command...: runs the reader on CORE, once,
# and appends its figures to $results. KIND: perf (the command prints perf JSON) or
# kcat (bytes are records × 1024). BROKER: "broker" counts the broker's CPU.
measure() {
  local placement=$1 core=$2 label=$3 kind=$4 counted=$5
  shift 6
  local t0 t1 b0=0 b1=0
  [ "$counted" = broker ] && b0=$(broker_ticks)
  t0=$(date +%s.%N)
  /usr/bin/time -o "$tmp/time" -f '%U %S' taskset -c "$core" "$@" >"$tmp/out" 2>"$tmp/err" || {
    echo "$label failed:" >&2; tail -5 "$tmp/err" >&2; return 0; }
  t1=$(date +%s.%N)
  [ "$counted" = broker ] && b1=$(broker_ticks)
  python3 - "$placement" "$label" "$kind" "$t0" "$t1" "$b0" "$b1" "$records" "$(getconf CLK_TCK)" \
    "$(cat "$tmp/time")" "$tmp/out" >>"$results" <<'EOF'
import json, sys
placement, label, kind, t0, t1, b0, b1, records, tck, rtime, out = sys.argv[1:]
if kind == "perf":
    d = json.load(open(out))
    nbytes, mbps = d["bytes"], d["mb_per_second"]
else:  # kcat: values of `records` 1 KiB records, wall time around the process
    nbytes = int(records) * 1024
    mbps = nbytes / 2**20 / (float(t1) - float(t0))
gib = nbytes / 2**30
u, s = map(float, rtime.split())
print(json.dumps({"placement": placement, "label": label, "mbps": mbps,
    "broker_cpu": (int(b1) - int(b0)) / int(tck) / gib if b1 != "0" else None,
    "reader_cpu": (u + s) / gib}))
EOF
}

# loopback PLACEMENT SENDCORE RECVCORE SPAN: one tcpstream run, as a row.
loopback() {
  local placement=$1 score=$2 rcore=$3 span=$4 port spid
  coproc STREAM { /usr/bin/time -o "$tmp/stime" -f '%U %S' taskset -c "$score" "$tmp/tcpstream" send --duration 2s --span "$span"; }
  spid=$STREAM_PID
  read -r port <&"${STREAM[0]}"
  measure "$placement" "$rcore" "loopback TCP, 1 MiB writes from a $((span >> 20)) MiB buffer" perf none -- "$tmp/tcpstream" recv "$port"
  wait "$spid" 2>/dev/null || true
  # The sender's CPU goes in the broker column.
  python3 - "$results" "$(cat "$tmp/stime")" "$tmp/out" <<'EOF2'
import json, sys
path, stime, out = sys.argv[1:]
lines = open(path).read().splitlines()
row = json.loads(lines[-1])
u, s = map(float, stime.split())
row["broker_cpu"] = (u + s) / (json.load(open(out))["bytes"] / 2**30)
lines[-1] = json.dumps(row)
open(path, "w").write("\n".join(lines) + "\n")
EOF2
}


reader_rows() { # $1: placement, $2: reader core, $3: label prefix, $4: "all" or "raw"
  local p=$1 core=$2 pre=$3 perf=$tmp/petrel
  local bs=(--records "$records" --bootstrap-server "$addr" --json)
  if [ "$4" = all ]; then
    measure "$p" "$core" "${pre}kgo consume, 1 partition" perf broker -- "$perf" perf consume one "${bs[@]}"
    measure "$p" "$core" "${pre}kgo consume, 6 partitions" perf broker -- "$perf" perf consume six "${bs[@]}"
    measure "$p" "$core" "${pre}kgo consume, non-default max.partition.fetch.bytes 8 MiB, 1 partition" perf broker -- \
      "$perf" perf consume one "${bs[@]}" --max-partition-fetch-bytes 8388608
    measure "$p" "$core" "${pre}kgo ceiling (canned in-process broker), 1 partition" perf none -- \
      "$perf" perf consume-ceiling --records "$records" --partitions 1 --json
    measure "$p" "$core" "${pre}kgo ceiling (canned in-process broker), 6 partitions" perf none -- \
      "$perf" perf consume-ceiling --records "$records" --partitions 6 --json
    if command -v kcat >/dev/null; then
      local kc=(kcat -C -b "$addr" -o beginning -e -q -f '' -c "$records")
      measure "$p" "$core" "${pre}kcat (librdkafka defaults), 1 partition" kcat broker -- "${kc[@]}" -t one
      measure "$p" "$core" "${pre}kcat (librdkafka defaults), 6 partitions" kcat broker -- "${kc[@]}" -t six
      measure "$p" "$core" "${pre}kcat, non-default max.partition.fetch.bytes 8 MiB, 1 partition" kcat broker -- \
        "${kc[@]}" -t one -X max.partition.fetch.bytes=8388608
    fi
  fi
  measure "$p" "$core" "${pre}raw fetch, 1 partition" perf broker -- "$perf" perf fetch one "${bs[@]}"
  measure "$p" "$core" "${pre}raw fetch, 6 partitions" perf broker -- "$perf" perf fetch six "${bs[@]}"
  if [ "$4" = all ]; then
    measure "$p" "$core" "${pre}raw fetch, non-default max.partition.fetch.bytes 8 MiB, 1 partition" perf broker -- \
      "$perf" perf fetch one "${bs[@]}" --max-partition-fetch-bytes 8388608
  fi
}

inproc_loopback() { "$tmp/petrel" perf loopback --duration 3s --json | json_field 'round(d["mb_per_second"],1)'; }
lb_start=$(inproc_loopback)

run_broker "$tmp/petrel" "$tmp/data"
for t in one:1 six:6; do
  "$tmp/petrel" topics create "${t%%:*}" --partitions "${t#*:}" --bootstrap-server "$addr" >/dev/null
  "$tmp/petrel" perf produce "${t%%:*}" --records "$records" --record-size 1024 --acks 1 --compression none \
    --bootstrap-server "$addr" --json >/dev/null 2>&1
done
# Warm the page cache and the broker once before measuring.
"$tmp/petrel" perf fetch one --records "$records" --bootstrap-server "$addr" --json >/dev/null 2>&1
"$tmp/petrel" perf fetch six --records "$records" --bootstrap-server "$addr" --json >/dev/null 2>&1

for rep in $(seq 1 "$reps"); do
  for placement in same:0 split:1; do
    p=${placement%%:*} core=${placement#*:}
    loopback "$p" 0 "$core" 1048576
    loopback "$p" 0 "$core" 1073741824
    reader_rows "$p" "$core" "" all
  done
  echo "repetition $rep of $reps done" >&2
done
stop_broker
if [ -n "$base" ]; then
  run_broker "$tmp/petrel-base" "$tmp/data"
  "$tmp/petrel" perf fetch six --records "$records" --bootstrap-server "$addr" --json >/dev/null 2>&1
  for rep in $(seq 1 "$reps"); do
    for placement in same:0 split:1; do
      reader_rows "${placement%%:*}" "${placement#*:}" "before ($base): " raw
    done
  done
  stop_broker
fi
lb_end=$(inproc_loopback)

python3 - "$results" "$lb_start" "$lb_end" "$reps" <<'EOF'
import json, statistics, sys
path, lb_start, lb_end, reps = sys.argv[1:]
rows = [json.loads(l) for l in open(path)]
med = lambda xs: statistics.median(xs) if xs else None
fmt = lambda x, f="%.2f": "" if x is None else f % x
for placement, what in (("same", "broker and reader on core 0"), ("split", "broker on core 0, reader on core 1")):
    mine = [r for r in rows if r["placement"] == placement]
    labels = list(dict.fromkeys(r["label"] for r in mine))
    base = med([r["mbps"] for r in mine if r["label"].startswith("loopback") and "from a 1 MiB" in r["label"]])
    # CPU bound: the CPU-seconds per GiB of the busier core (split) or of the one core
    # (same); its ratio to loopback's does not depend on load, as MB/s does.
    def bound(rs):
        bc = med([r["broker_cpu"] for r in rs if r["broker_cpu"] is not None])
        rc = med([r["reader_cpu"] for r in rs])
        if bc is None:  # the canned broker runs inside the reader, on the reader's core
            return bc, rc, rc
        return bc, rc, (bc + rc if placement == "same" else max(bc, rc))
    lb = [r for r in mine if r["label"].startswith("loopback") and "from a 1 MiB" in r["label"]]
    base = med([r["mbps"] for r in lb])
    lb_bound = bound(lb)[2]
    print(f"\n{placement}: {what}; medians of {reps} runs; × loopback is against the 1 MiB-buffer loopback of this placement ({base:.0f} MB/s); "
          f"CPU bound is loopback's CPU-s per GiB on the {'one core' if placement == 'same' else 'busier core'} over the row's (loopback's broker column is its sender)\n")
    print("| run | MB/s (min–max) | × loopback | broker CPU-s/GiB | reader CPU-s/GiB | CPU bound × loopback |")
    print("|---|---:|---:|---:|---:|---:|")
    for label in labels:
        rs = [r for r in mine if r["label"] == label]
        m = [r["mbps"] for r in rs]
        bc, rc, b = bound(rs)
        print("| %s | %.0f (%.0f–%.0f) | %.2f | %s | %s | %.2f |" % (label, med(m), min(m), max(m), med(m) / base,
              fmt(bc), fmt(rc), lb_bound / b))
print(f"\nin-process `petrel perf loopback` (unpinned): {lb_start} MB/s at the start, {lb_end} at the end ({float(lb_end)/float(lb_start):.2f})")
EOF

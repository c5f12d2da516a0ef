#!/usr/bin/env bash
# Catch-up consume benchmark (issue #13, zero-copy fetch), one command:
#   bash docs/bench/fetch.sh [records] [base-commit]
# Starts a throwaway one-node broker (page-cache mode, so that loading is quick; the
# fetch path is the same with fsync), loads `records` 1 KiB records (default 1 GiB)
# into a 1-partition and a 6-partition topic with compression off, then reads each
# from the start, with the data in the page cache, against loopback TCP (`petrel perf
# loopback`) in the same run, two ways:
#   consume    `petrel perf consume`: a kgo consumer, which decodes every record (a
#              client's figure; the client's CPU is its limit), at Kafka's default
#              fetch sizes, and once with max.partition.fetch.bytes at 8 MiB;
#   raw fetch  `petrel perf fetch`: Fetch requests one at a time per leader, counting
#              record batches without decoding them, as a follower does (the broker's
#              catch-up path; its MB/s counts whole batches, about 1% above the
#              records' values).
# Loopback is also measured request/response (1 and 6 MiB answers, one request in
# flight: the ceiling of a one-fetch-in-flight client). With base-commit, the broker built from that commit is measured too, on the same
# data, by the same (new) clients. Prints a Markdown table with MB/s as a ratio of
# loopback.
set -euo pipefail
cd "$(dirname "$0")/../.."
records=${1:-1048576}
base=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/petrel" .
if [ -n "$base" ]; then
  mkdir "$tmp/base"
  git archive "$base" | tar -x -C "$tmp/base"
  (cd "$tmp/base" && go build -o "$tmp/petrel-base" .)
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
json_field() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

run_broker() { # $1: binary, $2: data dir; sets $addr and $broker_pid
  local port; port=$(free_port)
  "$1" server --node-id 0 --data-dir "$2" --listen "127.0.0.1:$port" --raft-listen "127.0.0.1:$(free_port)" \
    --set log.flush.interval.messages=9223372036854775807 >"$tmp/broker.log" 2>&1 &
  broker_pid=$!
  addr="127.0.0.1:$port"
  for _ in $(seq 1 300); do
    if "$tmp/petrel" cluster describe --bootstrap-server "$addr" >/dev/null 2>&1; then return; fi
    sleep 0.1
  done
  echo "broker did not start:" >&2; cat "$tmp/broker.log" >&2; exit 1
}
stop_broker() { kill "$broker_pid"; wait "$broker_pid" 2>/dev/null || true; }

read_topic() { # $1: perf subcommand, $2: topic, $3: label, $4: loopback, then extra flags
  local cmd=$1 topic=$2 label=$3 lb=$4
  shift 4
  "$tmp/petrel" perf "$cmd" "$topic" --records "$records" --bootstrap-server "$addr" --json "$@" 2>/dev/null |
    python3 -c "
import json,sys
d=json.load(sys.stdin)
print('| $label | %.0f | %.0f | %.2f |' % (d['records_per_second'], d['mb_per_second'], d['mb_per_second']/$lb))"
}

all_rows() { # $1: label prefix, $2: loopback
  read_topic consume one "$1consume (kgo, fetch defaults), 1 partition" "$2"
  read_topic consume six "$1consume (kgo, fetch defaults), 6 partitions" "$2"
  read_topic consume one "$1consume (kgo, max.partition.fetch.bytes 8 MiB), 1 partition" "$2" --max-partition-fetch-bytes 8388608
  read_topic fetch one "$1raw fetch (batches not decoded), 1 partition" "$2"
  read_topic fetch six "$1raw fetch (batches not decoded), 6 partitions" "$2"
  read_topic fetch one "$1raw fetch, max.partition.fetch.bytes 8 MiB, 1 partition" "$2" --max-partition-fetch-bytes 8388608
  read_topic fetch six "$1raw fetch, max.partition.fetch.bytes 8 MiB, 6 partitions" "$2" --max-partition-fetch-bytes 8388608
}

run_broker "$tmp/petrel" "$tmp/data"
for t in one:1 six:6; do
  "$tmp/petrel" topics create "${t%%:*}" --partitions "${t#*:}" --bootstrap-server "$addr" >/dev/null
  "$tmp/petrel" perf produce "${t%%:*}" --records "$records" --record-size 1024 --acks 1 --compression none \
    --bootstrap-server "$addr" --json >/dev/null 2>&1
done
# Warm the page cache and the broker once before measuring.
"$tmp/petrel" perf consume one --records "$records" --bootstrap-server "$addr" --json >/dev/null 2>&1
"$tmp/petrel" perf fetch six --records "$records" --bootstrap-server "$addr" --json >/dev/null 2>&1

loopback=$("$tmp/petrel" perf loopback --duration 3s --json | json_field 'round(d["mb_per_second"],1)')
echo "| run | records/s | MB/s | × loopback |"
echo "|---|---:|---:|---:|"
echo "| loopback TCP (1 MiB writes) | | $loopback | 1.00 |"
for size in 1048576 6291456; do
  rr=$("$tmp/petrel" perf loopback --duration 2s --response-size "$size" --json | json_field 'round(d["mb_per_second"],1)')
  echo "| loopback TCP, $((size >> 20)) MiB responses, one request in flight | | $rr | $(python3 -c "print('%.2f' % ($rr/$loopback))") |"
done
all_rows "" "$loopback"
stop_broker
if [ -n "$base" ]; then
  run_broker "$tmp/petrel-base" "$tmp/data"
  "$tmp/petrel" perf fetch six --records "$records" --bootstrap-server "$addr" --json >/dev/null 2>&1
  all_rows "before ($base): " "$loopback"
  stop_broker
fi
loopback2=$("$tmp/petrel" perf loopback --duration 3s --json | json_field 'round(d["mb_per_second"],1)')
echo "| loopback TCP again (end of run) | | $loopback2 | $(python3 -c "print('%.2f' % ($loopback2/$loopback))") |"

#!/usr/bin/env bash
# Controller (Raft leader) churn at partition scale, reproducible with one command:
#   bash docs/bench/raft-churn.sh [partitions] [idle-seconds] [k=v ...]
# Three `petrel server` processes on loopback with default settings (plus --set k=v for
# each extra argument, for example controller.quorum.fetch.timeout.ms=2000). Creates
# the partitions RF 3 in topics of 5,000, stays idle for idle-seconds (default 180),
# counts the Raft leaders elected and the leader-lease step-downs ("failed to contact
# quorum") the logs show from the first CreateTopics on, then stops all three with
# SIGTERM and times each process's exit and its Raft stop (bounded: a process still up
# after 90 s dumps its goroutines to its log). Prints a Markdown table.
# RAFT_CHURN_KEEP=dir keeps the logs.
set -euo pipefail
cd "$(dirname "$0")/../.."
total=${1:-30000}
idle_s=${2:-180}
shift 2 || shift $# || true
work=$(mktemp -d)
bin=$work/petrel
go build -o "$bin" .
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "${RAFT_CHURN_KEEP:-}" ] && cp "$work"/*.log "$RAFT_CHURN_KEEP"/
  rm -rf "$work"
}
trap cleanup EXIT
trap "exit 1" INT TERM

source docs/bench/cluster3.sh
sets=()
for kv in "$@"; do sets+=(--set "$kv"); done
for i in 0 1 2; do
  "$bin" server --node-id "$i" --data-dir "$work/n$i" --listen "127.0.0.1:${kp[$i]}" \
    --raft-listen "127.0.0.1:${rp[$i]}" --voters "$voters" --metrics-listen "127.0.0.1:${mp[$i]}" \
    --set petrel.metrics.per.partition.enable=false "${sets[@]}" >>"$work/n$i.log" 2>&1 &
  pids[$i]=$!
done
for i in 0 1 2; do
  for _ in $(seq 600); do grep -q "broker ready" "$work/n$i.log" && break; sleep 0.1; done
done
stamp() { date -u +%Y-%m-%dT%H:%M:%S; }
count() { # $1 pattern, $2 from, $3 to: log lines of all three nodes in [from, to)
  cat "$work"/n*.log | awk -v a="$2" -v b="$3" '$1 >= a && $1 < b' | grep -c "$1" || true
}
c0=$(stamp); t0=$(now); todo=$total; k=0
while [ "$todo" -gt 0 ]; do
  p=$(( todo < 5000 ? todo : 5000 ))
  "$bin" topics create "churn-$k" --partitions "$p" --replication-factor 3 --bootstrap-server "127.0.0.1:${kp[0]}" >/dev/null
  todo=$((todo - p)); k=$((k + 1))
done
created=$(since "$t0")
sleep "$idle_s"
c1=$(stamp)
echo "| settings | partitions RF 3 | CreateTopics answered (s) | window (s) | leaders elected | lease step-downs | fences |"
echo "|---|---:|---:|---:|---:|---:|---:|"
echo "| ${*:-defaults} | $total | $created | $(( $(date -d "$c1" +%s) - $(date -d "$c0" +%s) )) | $(count 'entering leader state' "$c0" "$c1") | $(count 'failed to contact quorum' "$c0" "$c1") | $(count 'session expired' "$c0" "$c1") |"
echo
echo "| node | clean stop (SIGTERM until exit, s) | Raft stop |"
echo "|---|---:|---|"
t0=$(now)
kill -TERM "${pids[@]}"
end=$(( $(date +%s) + 90 ))
for i in 0 1 2; do
  p=${pids[$i]}
  while kill -0 "$p" 2>/dev/null && [ "$(date +%s)" -lt "$end" ]; do sleep 0.05; done
  if kill -0 "$p" 2>/dev/null; then
    kill -QUIT "$p"; stopped="still running after 90 s (goroutines dumped)"
  else
    stopped=$(since "$t0")
  fi
  echo "| $i | $stopped | $(grep -o 'raft stopped: elapsed=[^ ]*\|raft did not stop.*' "$work/n$i.log" | tail -1) |"
done

#!/usr/bin/env bash
# Controller health at partition scale, reproducible with one command:
#   bash docs/bench/controller-scale.sh [partitions] [replication-factor] [stop-seconds]
# Three `petrel server` processes on loopback with default settings (9 s session
# timeout). Creates the partitions in topics of 5,000, then measures: CreateTopics
# answered, every replica open and every ISR full; then stops node 2 with SIGSTOP for
# stop-seconds (default 12: longer than the session, so it is fenced, removed from
# every ISR and its leaderships move), resumes it with SIGCONT and times until every
# ISR is full again. Last, it counts per node the fences, unfences, controller terms
# and slow controller operations its log shows (after a clean stop of all three, timed): a healthy cluster fences node 2 once
# and nothing else. Prints a Markdown table. CONTROLLER_SCALE_KEEP=dir keeps the logs;
# CONTROLLER_SCALE_SET="k=v k=v" adds --set k=v to every server (for example
# controller.quorum.fetch.timeout.ms=2000).
set -euo pipefail
cd "$(dirname "$0")/../.."
total=${1:-10000}
rf=${2:-3}
stop_s=${3:-12}
per_topic=5000
work=$(mktemp -d)
bin=$work/petrel
go build -o "$bin" .
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "${CONTROLLER_SCALE_KEEP:-}" ] && cp "$work"/*.log "$CONTROLLER_SCALE_KEEP"/
  rm -rf "$work"
}
trap cleanup EXIT
trap "exit 1" INT TERM

source docs/bench/cluster3.sh
sets=()
for kv in ${CONTROLLER_SCALE_SET:-}; do sets+=(--set "$kv"); done
for i in 0 1 2; do
  "$bin" server --node-id "$i" --data-dir "$work/n$i" --listen "127.0.0.1:${kp[$i]}" \
    --raft-listen "127.0.0.1:${rp[$i]}" --voters "$voters" --metrics-listen "127.0.0.1:${mp[$i]}" \
    --set petrel.metrics.per.partition.enable=false "${sets[@]}" >>"$work/n$i.log" 2>&1 &
  pids[$i]=$!
done
for i in 0 1 2; do wait_log "$work/n$i.log" "broker ready" 60; done
addr="127.0.0.1:${kp[0]}"
replicas=$((total * rf / 3))
echo "| step | partitions | RF | seconds |"
echo "|---|---:|---:|---:|"
t0=$(now)
todo=$total; k=0
while [ "$todo" -gt 0 ]; do
  p=$(( todo < per_topic ? todo : per_topic ))
  "$bin" topics create "cs-$k" --partitions "$p" --replication-factor "$rf" --bootstrap-server "$addr" >/dev/null
  todo=$((todo - p)); k=$((k + 1))
done
echo "| create (CreateTopics answered) | $total | $rf | $(since "$t0") |"
wait_sync "$replicas" 600
echo "| create until every ISR is full | $total | $rf | $(since "$t0") |"
t0=$(now)
kill -STOP "${pids[2]}"; sleep "$stop_s"; kill -CONT "${pids[2]}"
wait_sync "$replicas" 600
echo "| node 2 stopped ${stop_s} s, then until every ISR is full again | $total | $rf | $(since "$t0") |"
t0=$(now)
kill -TERM "${pids[@]}"
end=$(( $(date +%s) + 60 ))
for p in "${pids[@]}"; do # bounded: a node still up after 60 s dumps its goroutines to its log
  while kill -0 "$p" 2>/dev/null && [ "$(date +%s)" -lt "$end" ]; do sleep 0.05; done
done
hung=0
for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && { hung=$((hung + 1)); kill -QUIT "$p"; }; done
if [ "$hung" = 0 ]; then
  echo "| clean stop of all three (SIGTERM until every process exits) | $total | $rf | $(since "$t0") |"
else
  echo "| clean stop of all three: $hung still running after 60 s (goroutines dumped to their logs) | $total | $rf | - |"
fi
echo
echo "| node | fences decided | unfences decided | controller terms started | slow controller operations |"
echo "|---|---:|---:|---:|---:|"
for i in 0 1 2; do
  echo "| $i | $(grep -c 'session expired' "$work/n$i.log" || true) | $(grep -c 'broker unfenced' "$work/n$i.log" || true) | $(grep -c 'controller active' "$work/n$i.log" || true) | $(grep -c 'slow controller operation' "$work/n$i.log" || true) |"
done

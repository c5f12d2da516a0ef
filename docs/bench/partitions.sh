#!/usr/bin/env bash
# Partition scale, reproducible with one command:
#   bash docs/bench/partitions.sh [partitions] [replication-factor]
# Three `petrel server` processes on loopback with default settings (the open-file limit
# of this shell: `ulimit -n`). Creates the partitions in topics of 5,000 (a metadata entry
# holds at most 10,000 records), then measures: creation (CreateTopics answered), every
# replica open and every partition's ISR full, open descriptors, memory maps, RSS and Go
# heap of one process, a clean stop (SIGTERM to exit) and a restart to serving ("broker
# ready") of that node with everything in sync again. Prints a Markdown table; the
# baseline of the same run is the same steps with 100 partitions. The stop row's note is
# node 2's "broker shut down" line (time per shutdown phase). PETREL_SERVER_BIN=path runs
# the servers from another petrel binary (a before/after comparison); PETREL_BENCH_LOGS=dir
# keeps the three nodes' logs there (with PETREL_PPROF=1 also CPU profiles of the stop:
# the stopped node's own in dir/n<node>-stop with its block, mutex and goroutine profiles,
# and an execution trace with PETREL_STOP_TRACE=1). PETREL_STOP_NODE=controller stops
# and restarts the active controller instead of node 2 (the stop row says when the
# stopped node was the controller).
# PETREL_RESTART_PROFILE=file.prof (with PETREL_PPROF=1) also writes a CPU profile of the
# restarted node's first PETREL_RESTART_PROFILE_SECONDS (default 20) seconds.
# PETREL_SET="name=value ..." passes properties to every server (--set).
# PETREL_RESTART_LOG=file keeps the restarted node's log (its "metadata caught up" line
# gives the parts of metadata_catch_up), and the others' as file.n0 and file.n1.
# PETREL_IDLE_CPU_SECONDS=30 also measures node 2's CPU (user + system, /proc/<pid>/stat)
# over that many idle seconds, PETREL_IDLE_SETTLE_SECONDS (default 20) after every ISR
# is full (the last creations' checkpoints and collections settle first), and its
# fetch sessions.
set -euo pipefail
cd "$(dirname "$0")/../.."
total=${1:-10000}
rf=${2:-3}
per_topic=5000
work=$(mktemp -d)
bin=$work/petrel
go build -o "$bin" .
server_bin=${PETREL_SERVER_BIN:-$bin}
source docs/bench/cluster3.sh
pids=()
trap kill_and_clean EXIT
trap "exit 1" INT TERM
sets=()
for s in ${PETREL_SET:-}; do sets+=(--set "$s"); done
stop_profile= # with PETREL_PPROF=1 and PETREL_BENCH_LOGS: where the stopped node profiles its stop
start() { # $1 node
  local i=$1
  PETREL_STOP_PROFILE=${stop_profile:+$stop_profile/n$i-stop} "$server_bin" server --node-id "$i" --data-dir "$work/n$i" --listen "127.0.0.1:${kp[$i]}" \
    --raft-listen "127.0.0.1:${rp[$i]}" --voters "$voters" --metrics-listen "127.0.0.1:${mp[$i]}" \
    --set petrel.metrics.per.partition.enable=false ${sets[@]+"${sets[@]}"} >>"$work/n$i.log" 2>&1 &
  pids[$i]=$!
}

[ "${PETREL_PPROF:-}" = 1 ] && [ -n "${PETREL_BENCH_LOGS:-}" ] && stop_profile=$PETREL_BENCH_LOGS
for i in 0 1 2; do start "$i"; done
for i in 0 1 2; do wait_log "$work/n$i.log" "broker ready" 60; done
addr="127.0.0.1:${kp[0]}"
echo "| step | partitions | RF | seconds | note |"
echo "|---|---:|---:|---:|---|"
created=0
for n in 100 "$total"; do
  t0=$(now)
  todo=$((n - created)); k=0
  while [ "$todo" -gt 0 ]; do
    p=$(( todo < per_topic ? todo : per_topic ))
    "$bin" topics create "s$n-$k" --partitions "$p" --replication-factor "$rf" --bootstrap-server "$addr" >/dev/null
    todo=$((todo - p)); k=$((k + 1))
  done
  created=$n
  echo "| create (CreateTopics answered) | $n | $rf | $(since "$t0") | |"
  wait_sync $((n * rf / 3)) 900
  echo "| create until every ISR is full | $n | $rf | $(since "$t0") | |"
done
# The node measured: 2, or with PETREL_STOP_NODE=controller the active controller (a
# stopping controller also hands over Raft leadership and its own ISR removals), with
# PETREL_STOP_NODE=broker a node that is not the controller.
sn=2
if [ "${PETREL_STOP_NODE:-}" = controller ]; then
  for i in 0 1 2; do [ "$(metric "${mp[$i]}" kafka_controller_kafkacontroller_activecontrollercount)" = 1 ] && sn=$i || true; done
elif [ "${PETREL_STOP_NODE:-}" = broker ]; then # any node but the active controller
  for i in 2 1 0; do [ "$(metric "${mp[$i]}" kafka_controller_kafkacontroller_activecontrollercount)" = 1 ] || { sn=$i; break; }; done
fi
role=""
[ "$(metric "${mp[$sn]}" kafka_controller_kafkacontroller_activecontrollercount)" = 1 ] && role=" (the controller)" || true
pid=${pids[$sn]}
fds=$(ls /proc/"$pid"/fd | wc -l); maps=$(wc -l </proc/"$pid"/maps)
rss=$(awk '/VmRSS/ {print $2}' /proc/"$pid"/status)
heap=$(metric "${mp[$sn]}" go_memstats_heap_inuse_bytes || true)
[ -n "$heap" ] || { echo "cannot read go_memstats_heap_inuse_bytes from node $sn's metrics endpoint 127.0.0.1:${mp[$sn]}" >&2; exit 1; }
replicas=$((total * rf / 3))
echo "| node $sn resources | $total | $rf | | $replicas replicas: $fds descriptors, $maps memory maps, RSS $((rss / 1024)) MiB, Go heap in use $(python3 -c "print('%.0f MiB, %.0f B/replica' % ($heap/2**20, $heap/$replicas))") |"
if [ -n "${PETREL_IDLE_CPU_SECONDS:-}" ]; then
  ticks() { awk '{print $14 + $15}' /proc/"$1"/stat; }
  sleep "${PETREL_IDLE_SETTLE_SECONDS:-20}"
  c0=$(ticks "$pid"); sleep "$PETREL_IDLE_CPU_SECONDS"; c1=$(ticks "$pid")
  hz=$(getconf CLK_TCK)
  sessions=$(metric "${mp[$sn]}" kafka_server_fetchsessioncache_numincrementalfetchsessions || true)
  cached=$(metric "${mp[$sn]}" kafka_server_fetchsessioncache_numincrementalfetchpartitionscached || true)
  echo "| node $sn idle CPU | $total | $rf | $PETREL_IDLE_CPU_SECONDS | $(python3 -c "print('%.2f CPU-s (%.1f %% of a core); fetch sessions here: %s, partitions cached: %s' % (($c1-$c0)/$hz, 100*($c1-$c0)/$hz/$PETREL_IDLE_CPU_SECONDS, '${sessions:-none}', '${cached:-none}'))") |"
fi
if [ -n "$stop_profile" ]; then
  # CPU profiles of the stop: the others for 4 s through their metrics listeners; node $sn
  # profiles itself from the signal to the end of Shutdown (PETREL_STOP_PROFILE, set at
  # every node's start: cli/stop_profile.go) into $PETREL_BENCH_LOGS/n$sn-stop.
  for i in 0 1 2; do
    [ "$i" = "$sn" ] || curl -s -o "$PETREL_BENCH_LOGS/stop-cpu-n$i.prof" "127.0.0.1:${mp[$i]}/debug/pprof/profile?seconds=4" &
  done
  sleep 0.2
fi
t0=$(now)
kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
echo "| clean stop of node $sn$role (SIGTERM to exit) | $total | $rf | $(since "$t0") | $(grep 'broker shut down' "$work/n$sn.log" | tail -1 | grep -o '[a-z_]*=[0-9.a-zµ]*' | tr '\n' ' ') |"
stop_profile= # the restarted node is not profiled when the cleanup stops it
t0=$(now)
start "$sn"
if [ -n "${PETREL_RESTART_PROFILE:-}" ]; then # the metrics listener is up before the replicas open
  until curl -sf "127.0.0.1:${mp[$sn]}/debug/pprof/" >/dev/null; do sleep 0.02; done
  curl -sf -o "$PETREL_RESTART_PROFILE" "127.0.0.1:${mp[$sn]}/debug/pprof/profile?seconds=${PETREL_RESTART_PROFILE_SECONDS:-20}" &
  prof=$!
fi
wait_log "$work/n$sn.log" "broker ready" 600 2
echo "| restart of node $sn to serving (broker ready) | $total | $rf | $(since "$t0") | $(grep 'broker ready' "$work/n$sn.log" | tail -1 | grep -o 'metadata_catch_up=[^ ]* replica_recovery=[^ ]*') |"
if [ -n "${PETREL_RESTART_LOG:-}" ]; then
  cp "$work/n$sn.log" "$PETREL_RESTART_LOG"
  for i in 0 1 2; do [ "$i" = "$sn" ] || cp "$work/n$i.log" "$PETREL_RESTART_LOG.n$i"; done
fi
wait_sync "$replicas" 900
echo "| restart of node $sn until every ISR is full | $total | $rf | $(since "$t0") | |"
[ -z "${prof:-}" ] || wait "$prof"

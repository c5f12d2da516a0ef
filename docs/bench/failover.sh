#!/usr/bin/env bash
# Controller failover benchmark, reproducible with one command:
#   bash docs/bench/failover.sh [rounds] [extra server flags...]
# Three `petrel server` processes on loopback with default settings. Each round finds
# the controller, kills its process with SIGKILL, and times from the kill to the first
# CreateTopics accepted through a survivor (one `petrel topics create` started right
# after the kill against the survivors only, as a user would run it; it retries within
# its --timeout); then the killed node is restarted with
# its data and the next round waits until it serves again. Prints every round
# and the median and worst time.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-5}
shift || true
extra=("$@")
work=$(mktemp -d)
bin=$work/petrel
go build -o "$bin" .
pids=(0 0 0)
cleanup() { for p in "${pids[@]}"; do [ "$p" != 0 ] && kill -9 "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; [ -n "${FAILOVER_KEEP:-}" ] && cp "$work"/*.log "$FAILOVER_KEEP"/ ; rm -rf "$work"; }
trap cleanup EXIT # FAILOVER_KEEP=dir keeps the logs there

source docs/bench/ports.sh # free_ports
now_ms() { date +%s%3N; }

read -r -a ports <<<"$(free_ports 6)"
kp=("${ports[@]:0:3}"); rp=("${ports[@]:3:3}"); voters=""
for i in 0 1 2; do voters+="${voters:+,}$i@127.0.0.1:${rp[$i]}"; done
all="127.0.0.1:${kp[0]},127.0.0.1:${kp[1]},127.0.0.1:${kp[2]}"
start_node() { # $1 node id
  local i=$1
  "$bin" server --node-id "$i" --data-dir "$work/n$i" --listen "127.0.0.1:${kp[$i]}" \
    --raft-listen "127.0.0.1:${rp[$i]}" --voters "$voters" --metrics-listen "" "${extra[@]}" >>"$work/n$i.log" 2>&1 &
  pids[$i]=$!
}
wait_active() { # $1 bootstrap; waits for three active (unfenced) brokers
  for _ in $(seq 1 300); do
    [ "$("$bin" cluster describe --bootstrap-server "$1" 2>/dev/null | grep -c ' active$')" = 3 ] && return
    sleep 0.2
  done
  echo "the cluster did not get three active brokers" >&2; exit 1
}
controller() { # prints the controller id as the cluster reports it
  "$bin" cluster describe --bootstrap-server "$all" 2>/dev/null | awk '/^Controller ID:/ {print $3}'
}

for i in 0 1 2; do start_node "$i"; done
wait_active "$all"
times=()
for r in $(seq 1 "$rounds"); do
  c=$(controller)
  survivors=""
  for i in 0 1 2; do [ "$i" != "$c" ] && survivors+="${survivors:+,}127.0.0.1:${kp[$i]}"; done
  t0=$(now_ms)
  kill -9 "${pids[$c]}"
  wait "${pids[$c]}" 2>/dev/null || true
  ok=""
  for _ in 1 2 3; do # one client started at the kill, waiting up to 20 s; bounded retries
    if "$bin" topics create "failover-$r" --partitions 1 --replication-factor 1 \
      --bootstrap-server "$survivors" --timeout 20s >/dev/null 2>>"$work/client.log"; then ok=1; break; fi
  done
  t1=$(now_ms)
  [ -n "$ok" ] || { echo "round $r: no CreateTopics accepted" >&2; exit 1; }
  ms=$((t1 - t0))
  times+=("$ms")
  echo "round $r: killed controller node-$c, CreateTopics accepted after $ms ms"
  ready=$(grep -c "broker ready" "$work/n$c.log" || true)
  start_node "$c"
  # Wait until the restarted node serves again: it registers anew only once the
  # session of its killed incarnation has expired (broker.session.timeout.ms).
  for _ in $(seq 1 300); do
    [ "$(grep -c "broker ready" "$work/n$c.log" || true)" -gt "$ready" ] && break
    sleep 0.1
  done
  wait_active "$all"
done
printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "median %d ms, worst %d ms over %d rounds\n", m, a[NR], NR}'

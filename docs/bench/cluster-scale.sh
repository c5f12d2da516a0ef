#!/usr/bin/env bash
# A whole cluster at partition scale, reproducible with one command:
#   bash docs/bench/cluster-scale.sh [partitions] [replication-factor] [partitions-per-request]
# Three `petrel server` processes on loopback with default settings. Creates the
# partitions with sequential CreateTopics requests of partitions-per-request (default
# 1,000: 100 requests for 100,000), then measures: creation (every CreateTopics
# answered) and until every replica is open and every ISR full; the idle CPU of the
# three processes together (user + system from /proc/<pid>/stat, so other work on the
# host does not count) over PETREL_IDLE_CPU_SECONDS (default 30) after
# PETREL_IDLE_SETTLE_SECONDS (default 20); the whole cluster stopped at once (SIGTERM to
# all three, until all have exited; the note is each node's "broker shut down" phases);
# and the whole cluster started at once until every partition has a leader serving it
# (every node "broker ready", the leaders' LeaderCount summing to the partitions and no
# offline partition; the note is each node's metadata_catch_up and replica_recovery).
# Prints a Markdown table. PETREL_PPROF=1 with PETREL_BENCH_LOGS=dir also takes a
# 30 s CPU profile of every node after the idle measurement (dir/idle-cpu-n<i>.prof);
# PETREL_BENCH_LOGS=dir keeps the logs; PETREL_SERVER_BIN=path runs another binary;
# PETREL_SET="name=value ..." passes properties to every server (--set);
# PETREL_SKIP_RESTART=1 stops after the idle measurement; PETREL_CREATE_TIMES=1 prints
# each CreateTopics's time (the client process included) to stderr. PETREL_PPROF=1 with
# PETREL_BENCH_LOGS=dir and PETREL_RESTART_PROFILE_SECONDS=n also profiles every node's
# first n seconds after the whole-cluster start (dir/restart-cpu-n<i>.prof).
# PETREL_PPROF=1 with PETREL_BENCH_LOGS=dir and PETREL_CREATE_PROFILE=1 profiles every
# node across the whole creation, in 5 s windows merged into dir/create-cpu-n<i>.prof,
# and each `petrel topics create` client process (PETREL_CLIENT_CPU_PROFILE) into
# dir/create-client-<k>.prof, merged into dir/create-client.prof. The creation's and
# the start's rows note each node's CPU-seconds (/proc/<pid>/stat) and the load average.
# PETREL_DIR_FLOOR=1 adds, after the creation, a row that makes each node's count of
# replica directories with no broker (docs/bench/replicadirs.go, three processes at
# once, on the same file system): what a directory per new replica costs, as Kafka
# makes one (Petrel makes it at the replica's first write, DESIGN.md S13), beside the
# creation's CPU-seconds. PETREL_RECORD_EACH=1 writes one record to every partition after
# the idle measurement (docs/bench/recordeach.go; a row of its own), so that the stop and
# the start find every replica with its directory and segment, as in a cluster in use.
# Before either row the script syncs and waits until five minutes have passed since an
# earlier run's deletions (cluster3.sh, wait_out_deletions): on a file system without a
# journal they would otherwise slow every inode allocation several times over (the
# creation itself makes no inode). PETREL_DROP_CACHES=1 drops the kernel's page, dentry
# and inode caches between the stop and the start (as root: `sync` and
# /proc/sys/vm/drop_caches), so that the start reads everything from the disk, as after
# a reboot of every host.
set -euo pipefail
cd "$(dirname "$0")/../.."
total=${1:-100000}
rf=${2:-3}
per_req=${3:-1000}
work=$(mktemp -d)
bin=$work/petrel
go build -o "$bin" .
server_bin=${PETREL_SERVER_BIN:-$bin}
source docs/bench/cluster3.sh
pids=(); profilers=()
trap kill_and_clean EXIT
trap "exit 1" INT TERM
sets=()
for s in ${PETREL_SET:-}; do sets+=(--set "$s"); done
start() { # $1 node
  local i=$1
  "$server_bin" server --node-id "$i" --data-dir "$work/n$i" --listen "127.0.0.1:${kp[$i]}" \
    --raft-listen "127.0.0.1:${rp[$i]}" --voters "$voters" --metrics-listen "127.0.0.1:${mp[$i]}" \
    --set petrel.metrics.per.partition.enable=false ${sets[@]+"${sets[@]}"} >>"$work/n$i.log" 2>&1 &
  pids[$i]=$!
}
serving() { # every partition led by a node that has opened it, none offline
  local sum=0 v active o off=""
  scrape_all kafka_server_replicamanager_leadercount kafka_controller_kafkacontroller_activecontrollercount \
    kafka_controller_kafkacontroller_offlinepartitionscount
  for i in 0 1 2; do
    read -r v active o <"$work/scrape.$i"
    [ "$v" != "-" ] || return 1
    sum=$((sum + v))
    [ "$active" = 1 ] && off=$o
  done
  [ "$sum" = "$total" ] && [ "$off" = 0 ]
}
ticks() { awk '{print $14 + $15}' /proc/"$1"/stat; }

for i in 0 1 2; do start "$i"; done
for i in 0 1 2; do wait_log "$work/n$i.log" "broker ready" 60; done
addr="127.0.0.1:${kp[0]}"
echo "| step | partitions | RF | seconds | note |"
echo "|---|---:|---:|---:|---|"
create_prof=""
if [ "${PETREL_PPROF:-}" = 1 ] && [ -n "${PETREL_BENCH_LOGS:-}" ] && [ -n "${PETREL_CREATE_PROFILE:-}" ]; then
  create_prof=$PETREL_BENCH_LOGS; mkdir -p "$create_prof"
  for i in 0 1 2; do
    ( w=0; until [ -e "$work/created" ]; do
        curl -s -o "$create_prof/create-cpu-n$i-w$w.prof" "127.0.0.1:${mp[$i]}/debug/pprof/profile?seconds=5"
        w=$((w + 1))
      done ) &
    profilers+=($!)
  done
fi
cpu_s() { # $1 ticks: CPU-seconds
  python3 -c "print('%.2f' % ($1 / $(getconf CLK_TCK)))"
}
cpu_note() { # each node's CPU-seconds since the ticks in the array named $1
  local -n base=$1; local n="" i
  for i in 0 1 2; do n+="n$i $(cpu_s $(( $(ticks "${pids[$i]}") - base[i] ))), "; done
  echo "CPU-s ${n%, }"
}
cz=()
for i in 0 1 2; do cz[$i]=$(ticks "${pids[$i]}"); done
t0=$(now); todo=$total; k=0
while [ "$todo" -gt 0 ]; do
  p=$(( todo < per_req ? todo : per_req ))
  # A request that timed out on a loaded host is sent again by the client, and then
  # finds the topic its first attempt created.
  tr=$EPOCHREALTIME
  out=$(PETREL_CLIENT_CPU_PROFILE=${create_prof:+$create_prof/create-client-$k.prof} timeout 120 "$bin" topics create "t$k" --partitions "$p" --replication-factor "$rf" --bootstrap-server "$addr" 2>&1) ||
    grep -q TOPIC_ALREADY_EXISTS <<<"$out" || { echo "$out" >&2; exit 1; }
  [ -z "${PETREL_CREATE_TIMES:-}" ] || awk -v a="$tr" -v b="$EPOCHREALTIME" -v k="$k" -v p="$p" 'BEGIN { printf "CreateTopics t%s of %s: %.2f s\n", k, p, b - a }' >&2
  todo=$((todo - p)); k=$((k + 1))
done
echo "| create: $k CreateTopics of $per_req answered | $total | $rf | $(since "$t0") | $(cpu_note cz); load $(cut -d' ' -f1 /proc/loadavg) |"
if [ -n "$create_prof" ]; then
  touch "$work/created"
  for p in "${profilers[@]}"; do wait "$p" || true; done; profilers=()
  for i in 0 1 2; do go tool pprof -proto "$create_prof"/create-cpu-n$i-w*.prof >"$create_prof/create-cpu-n$i.prof" 2>/dev/null && rm -f "$create_prof"/create-cpu-n$i-w*.prof; done
  go tool pprof -proto "$create_prof"/create-client-*.prof >"$create_prof/create-client.prof" 2>/dev/null && rm -f "$create_prof"/create-client-*[0-9].prof
fi
replicas=$((total * rf / 3))
wait_sync "$replicas" 900
echo "| create until every ISR is full | $total | $rf | $(since "$t0") | $(cpu_note cz) |"
created_ticks=0
for i in 0 1 2; do created_ticks=$((created_ticks + $(ticks "${pids[$i]}") - cz[i])); done
if [ "${PETREL_DIR_FLOOR:-}" = 1 ]; then
  # A directory per new replica on this disk (Kafka's creation, and Petrel's before
  # DESIGN.md S13): the mkdir of each node's count, three processes at once, no broker.
  go build -o "$work/replicadirs" docs/bench/replicadirs.go
  inodes_note=$(wait_out_deletions) # the mkdirs meet no inode an earlier run just deleted
  fl=()
  for i in 0 1 2; do
    mkdir -p "$work/floor$i"
    "$work/replicadirs" --dir "$work/floor$i" --replicas "$replicas" --workers 8 >"$work/floor$i.json" &
    fl+=($!)
  done
  for p in "${fl[@]}"; do wait "$p"; done
  read -r floor_wall floor_cpu floor_each < <(python3 - "$work" "$created_ticks" "$(getconf CLK_TCK)" <<'PY'
import json, sys
runs = [json.load(open(f"{sys.argv[1]}/floor{i}.json")) for i in range(3)]
cpu = sum(r["create_cpu_s"] for r in runs)
print("%.1f" % max(r["create_s"] for r in runs), "%.2f" % cpu, "%.2f" % (int(sys.argv[2]) / int(sys.argv[3]) / cpu))
PY
)
  rm -rf "$work"/floor?
  deleted_now
  echo "| floor: mkdir of $replicas replica directories per node, three processes at once (replicadirs.go) | $total | $rf | $floor_wall | $floor_cpu CPU-s; the creation's CPU-s until every ISR is full = ${floor_each}× it; load $(cut -d' ' -f1 /proc/loadavg); before it: $inodes_note |"
fi

sleep "${PETREL_IDLE_SETTLE_SECONDS:-20}"
secs=${PETREL_IDLE_CPU_SECONDS:-30}
fetches() { # Fetch requests the three nodes have answered (at idle: the followers')
  local n=0 v
  for i in 0 1 2; do
    v=$(curl -s "127.0.0.1:${mp[$i]}/metrics" | awk '$1 ~ /^kafka_network_requestmetrics_requests_total\{/ && $1 ~ /request="Fetch"/ {s += $2} END {print s + 0}')
    n=$((n + ${v%.*}))
  done
  echo "$n"
}
c0=(); c1=()
f0=$(fetches)
for i in 0 1 2; do c0[$i]=$(ticks "${pids[$i]}"); done
sleep "$secs"
for i in 0 1 2; do c1[$i]=$(ticks "${pids[$i]}"); done
f1=$(fetches)
hz=$(getconf CLK_TCK)
per=""; sum=0
for i in 0 1 2; do d=$((c1[i] - c0[i])); sum=$((sum + d)); per+="n$i $(python3 -c "print('%.1f' % (100*$d/$hz/$secs))") %, "; done
sessions=$(metric "${mp[2]}" kafka_server_fetchsessioncache_numincrementalfetchsessions || true)
echo "| idle CPU, the three processes together | $total | $rf | $secs | $(python3 -c "print('%.2f CPU-s, %.1f %% of a core' % ($sum/$hz, 100*$sum/$hz/$secs))") (${per%, }); $(python3 -c "print('%.1f' % (($f1-$f0)/$secs))") follower fetches/s in all; node 2's fetch sessions: ${sessions:-none} |"
if [ "${PETREL_PPROF:-}" = 1 ] && [ -n "${PETREL_BENCH_LOGS:-}" ] && [ -z "${PETREL_SKIP_IDLE_PROFILE:-}" ]; then
  mkdir -p "$PETREL_BENCH_LOGS"
  for i in 0 1 2; do curl -s -o "$PETREL_BENCH_LOGS/idle-cpu-n$i.prof" "127.0.0.1:${mp[$i]}/debug/pprof/profile?seconds=30" & done
  sleep 31; until [ "$(ls "$PETREL_BENCH_LOGS"/idle-cpu-n*.prof 2>/dev/null | wc -l)" = 3 ]; do sleep 0.2; done; sleep 1
fi
if [ "${PETREL_RECORD_EACH:-}" = 1 ]; then
  # Every partition written to once: each replica makes its directory and segment.
  go build -o "$work/recordeach" docs/bench/recordeach.go
  each_note=$(wait_out_deletions) # the first writes make inodes: none just deleted
  cz=(); for i in 0 1 2; do cz[$i]=$(ticks "${pids[$i]}"); done
  t0=$(now)
  "$work/recordeach" --bootstrap-server "$addr" >"$work/recordeach.json"
  wait_sync "$replicas" 900
  echo "| one record (100 random bytes) written to every partition, until every ISR is full | $total | $rf | $(since "$t0") | $(cpu_note cz); load $(cut -d' ' -f1 /proc/loadavg); $each_note |"
fi
[ -z "${PETREL_SKIP_RESTART:-}" ] || exit 0

t0=$(now)
for i in 0 1 2; do kill -TERM "${pids[$i]}"; done
for i in 0 1 2; do wait "${pids[$i]}" 2>/dev/null || true; done
note=""
for i in 0 1 2; do note+="n$i: $(grep 'broker shut down' "$work/n$i.log" | tail -1 | grep -o '[a-z_]*=[0-9.a-zµ]*' | tr '\n' ' ')"; done
echo "| whole cluster stopped at once (SIGTERM to all exited) | $total | $rf | $(since "$t0") | $note |"

cold=""
if [ "${PETREL_DROP_CACHES:-}" = 1 ]; then
  sync; echo 3 >/proc/sys/vm/drop_caches; cold=" (caches dropped: as after a reboot)"
fi
t0=$(now)
for i in 0 1 2; do start "$i"; done
if [ "${PETREL_PPROF:-}" = 1 ] && [ -n "${PETREL_BENCH_LOGS:-}" ] && [ -n "${PETREL_RESTART_PROFILE_SECONDS:-}" ]; then
  mkdir -p "$PETREL_BENCH_LOGS"
  for i in 0 1 2; do # the metrics listener is up before the replicas open
    ( for _ in $(seq 200); do
        curl -sf -o "$PETREL_BENCH_LOGS/restart-cpu-n$i.prof" \
          "127.0.0.1:${mp[$i]}/debug/pprof/profile?seconds=$PETREL_RESTART_PROFILE_SECONDS" && break
        sleep 0.05
      done ) &
    profilers+=($!)
  done
fi
for i in 0 1 2; do wait_log "$work/n$i.log" "broker ready" 600 2; done
ready=$(since "$t0")
end=$(( $(date +%s) + 600 ))
until serving; do
  [ "$(date +%s)" -lt "$end" ] || { echo "timed out waiting for every partition to have a leader" >&2; exit 1; }
  sleep 0.1
done
note=""
for i in 0 1 2; do note+="n$i: $(grep 'broker ready' "$work/n$i.log" | tail -1 | grep -o 'metadata_catch_up=[^ ]* replica_recovery=[^ ]*') "; done
cz=(0 0 0) # new processes: their CPU since their start
echo "| whole cluster started at once$cold, every partition led (all ready at $ready s) | $total | $rf | $(since "$t0") | $note; $(cpu_note cz); load $(cut -d' ' -f1 /proc/loadavg) |"
wait_sync "$replicas" 900
echo "| start until every ISR is full | $total | $rf | $(since "$t0") | |"
for i in 0 1 2; do wait_log "$work/n$i.log" "checked the segment files" 600 1; done
note=""
for i in 0 1 2; do note+="n$i: $(grep 'checked the segment files' "$work/n$i.log" | tail -1 | grep -o '[a-z]*=[0-9.a-zµ]*' | tr '\n' ' ')"; done
echo "| the start's background check of the described segment files, from the start | $total | $rf | $(since "$t0") | $note |"
for p in ${profilers[@]+"${profilers[@]}"}; do wait "$p" || true; done # before the EXIT trap kills the nodes

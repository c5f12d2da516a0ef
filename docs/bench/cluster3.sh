# Shared by the three-process benchmark scripts (partitions.sh, cluster-scale.sh, ...);
# sourced, not run. Defines kill_and_clean, free_ports, now, since, metric, metrics_at, scrape_all, wait_log,
# in_sync, wait_sync, wait_out_deletions and deleted_now, and picks the ports of a three-node cluster: kp (Kafka), rp (Raft), mp
# (metrics) and the --voters list.

kill_and_clean() { # EXIT trap of scripts that throw their cluster away: SIGKILL every
  # node in $pids (the data is deleted, and a clean stop would write stop profiles
  # again), keep the node logs in $PETREL_BENCH_LOGS if set, remove $work.
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done; wait 2>/dev/null || true
  if [ -n "${PETREL_BENCH_LOGS:-}" ]; then mkdir -p "$PETREL_BENCH_LOGS" && cp "$work"/n*.log "$PETREL_BENCH_LOGS"/ 2>/dev/null || true; fi
  rm -rf "$work"
  deleted_now
}
source docs/bench/ports.sh # free_ports
now() { date +%s.%N; }
since() { python3 -c "import sys; print('%.1f' % ($(now) - $1))"; }
metric() { # $1 metrics port, $2 metric name: its value (first series), empty when absent
  local v; v=$(metrics_at "$1" "$2")
  [ "$v" = - ] || echo "$v"
}
wait_log() { # $1 file, $2 pattern, $3 seconds, $4 matches to wait for (default 1)
  local end=$(( $(date +%s) + $3 ))
  until [ "$(grep -c "$2" "$1")" -ge "${4:-1}" ]; do
    [ "$(date +%s)" -lt "$end" ] || { echo "timed out waiting for '$2' in $1" >&2; tail -20 "$1" >&2; exit 1; }
    sleep 0.05
  done
}
metrics_at() { # $1 metrics port, $2... metric names: their values (first series) on one
  # line, "-" for an absent one, from one scrape (at 100,000 partitions a scrape takes
  # long enough to matter). awk reads to the end: an early exit would fail curl's write
  # (pipefail) on a long page.
  local port=$1; shift
  curl -s "127.0.0.1:$port/metrics" | awk -v names="$*" '
    BEGIN { n = split(names, want, " ") }
    { for (i = 1; i <= n; i++) if ($1 == want[i] && !(i in v)) v[i] = $2 }
    END { for (i = 1; i <= n; i++) printf "%s%s", (i in v ? v[i] : "-"), (i < n ? " " : "\n") }'
}
scrape_all() { # $1... metric names: metrics_at of every node, the three scraped at once
  # (at 100,000 partitions a scrape of a busy node takes tenths of a second, and three in
  # a row would add theirs), into $work/scrape.<node>, one line each
  local scrapes=() i
  for i in 0 1 2; do metrics_at "${mp[$i]}" "$@" >"$work/scrape.$i" & scrapes+=($!); done
  wait "${scrapes[@]}" || true # an absent value reads "-"
}
in_sync() { # every node: replicas open = $1, leaders under-replicated = 0
  local open under
  scrape_all kafka_server_replicamanager_partitioncount kafka_server_replicamanager_underreplicatedpartitions
  for i in 0 1 2; do
    read -r open under <"$work/scrape.$i"
    [ "$open" = "$1" ] && [ "$under" = "0" ] || return 1
  done
}
wait_sync() { # $1 replicas per node, $2 seconds
  local end=$(( $(date +%s) + $2 ))
  until in_sync "$1"; do
    [ "$(date +%s)" -lt "$end" ] || { echo "timed out after $2 s waiting for $1 replicas in sync" >&2; exit 1; }
    sleep 0.2
  done
}
read -r -a ports <<<"$(free_ports 9)"
kp=("${ports[@]:0:3}"); rp=("${ports[@]:3:3}"); mp=("${ports[@]:6:3}"); voters=""
for i in 0 1 2; do voters+="${voters:+,}$i@127.0.0.1:${rp[$i]}"; done
wait_out_deletions() { # before a step that makes many files or directories: on an ext4
  # file system mounted without a journal (machine A's: "mounted filesystem ... without
  # journal" in dmesg), the inode allocator skips every free inode deleted less than
  # 60 s ago, or 300 s while its inode-table block is dirty, as the new inodes written
  # into the same blocks make it (ialloc.c, recently_deleted), looking each up on the
  # way: a creation minutes after an earlier run deleted its 300,000 directories costs
  # up to five times the CPU. It syncs and waits until 305 s have passed since the last
  # deletion these scripts recorded (deleted_now), and prints how long it waited.
  local last wait
  last=$(cat "${TMPDIR:-/tmp}/petrel-bench-deleted-at" 2>/dev/null || echo 0)
  wait=$(( last + 305 - $(date +%s) ))
  sync
  if [ "$wait" -gt 0 ]; then sleep "$wait"; echo "waited $wait s after the last deletion"
  else echo "no deletion in the last 305 s"; fi
}
deleted_now() { date +%s >"${TMPDIR:-/tmp}/petrel-bench-deleted-at"; } # see wait_out_deletions

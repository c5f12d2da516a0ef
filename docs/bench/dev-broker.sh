# Sourced by the single-broker scripts (single-node.sh, profile-single-node.sh): a
# throwaway `petrel dev` broker on free ports. Needs $work (a scratch folder).
#   run_broker BIN [FLAGS]  starts it; sets $addr (Kafka), $metrics (host:port of
#                           /metrics and, with PETREL_PPROF=1, /debug/pprof) and $broker_pid
#   stop_broker             stops it
free_ports_dev() { # "port metrics-port": a free port whose next port (petrel dev's Raft
  # listener) is free too, and a third free port, all three bound at once
  python3 -c '
import socket
while True:
    a = socket.socket(); a.bind(("127.0.0.1", 0)); p = a.getsockname()[1]
    b = socket.socket()
    try:
        b.bind(("127.0.0.1", p + 1))
    except OSError:
        continue
    c = socket.socket(); c.bind(("127.0.0.1", 0)); print(p, c.getsockname()[1]); break'
}
broker_pid=
run_broker() {
  local port mport log
  read -r port mport <<<"$(free_ports_dev)"; log=$(mktemp -p "$work")
  "$1" dev --port "$port" --metrics-port "$mport" ${2:-} >"$log" 2>&1 &
  broker_pid=$!
  for _ in $(seq 1 300); do
    if grep -q "bootstrap" "$log"; then addr="127.0.0.1:$port"; metrics="127.0.0.1:$mport"; return; fi
    sleep 0.1
  done
  echo "broker did not start:" >&2; cat "$log" >&2; exit 1
}
stop_broker() { kill "$broker_pid"; wait "$broker_pid" 2>/dev/null || true; broker_pid=; }

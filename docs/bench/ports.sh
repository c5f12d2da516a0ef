# Shared by the benchmark scripts; sourced, not run (from the repository's root).
free_ports() { # $1 count: distinct free ports on 127.0.0.1, bound all at once so that none repeats
  python3 -c 'import socket,sys; s=[socket.socket() for _ in range(int(sys.argv[1]))]; [x.bind(("127.0.0.1",0)) for x in s]; print(" ".join(str(x.getsockname()[1]) for x in s))' "$1"
}

# Sourced by the produce scripts (single-node.sh, replicated.sh): CPU time, in seconds
# of user + system time, as the kernel accounts it.
#   proc_cpu PID...        the CPU seconds the processes have used so far (/proc/PID/stat)
#   cpu_run FILE CMD...    runs CMD (its stdout passes through) and writes the CPU seconds
#                          it and its children used to FILE (getrusage)
#   host_busy              the host's busy and total CPU seconds so far (/proc/stat), for
#                          the share of its cores busy over a window
proc_cpu() {
  python3 -c '
import os, sys
t = 0
for pid in sys.argv[1:]:
    st = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
    t += int(st[11]) + int(st[12])
print(t / os.sysconf("SC_CLK_TCK"))' "$@"
}
cpu_run() {
  python3 -c '
import resource, subprocess, sys
r = subprocess.run(sys.argv[2:])
u = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write("%f\n" % (u.ru_utime + u.ru_stime))
sys.exit(r.returncode)' "$@"
}
host_busy() {
  python3 -c '
import os
v = [int(x) for x in open("/proc/stat").readline().split()[1:]]
hz = os.sysconf("SC_CLK_TCK")
print((sum(v[:8]) - v[3] - v[4]) / hz, sum(v[:8]) / hz)'
}

# Reads `perf script` output of sched:sched_switch and sched:sched_wakeup with call
# graphs (docs/bench/handoffs.sh, PERF=1) on stdin; argv[1] is the record count. Prints
# per record why the servers' threads slept (the Go frames of the sleeping thread) and
# what woke a thread (the Go frames of the waking code: a goroutine readied with an
# idle P starts a thread, runtime.startm < runtime.wakep < runtime.ready; a socket
# write wakes the reader on the other end).
import collections, re, sys

records = int(sys.argv[1])
events, ev, stack = [], None, []
for line in sys.stdin:
    if not line.strip():
        if ev:
            events.append((ev, stack))
        ev, stack = None, []
    elif not line[0].isspace():
        ev, stack = line.strip(), []
    else:
        m = re.match(r"\s+[0-9a-f]+ (\S+)", line)
        if m:
            stack.append(re.sub(r"\+0x[0-9a-f]+$", "", m.group(1)))
if ev:
    events.append((ev, stack))
keep = ("runtime.ready", "runtime.wakep", "runtime.startm", "runtime.sysmon", "runtime.netpoll",
        "runtime.stopm", "runtime.injectglist", "runtime.usleep", "runtime.runqsteal", "runtime.notesleep",
        "runtime.notetsleep", "runtime.findRunnable")
sleeps, wakes = collections.Counter(), collections.Counter()
for e, st in events:
    go = [f for f in st if "." in f and not f.startswith(("__", "do_", "entry_", "x64_")) and
          (not f.startswith(("runtime.", "internal/runtime")) or f in keep)]
    if "sched_switch" in e:
        if "prev_state=S" in e or "prev_state=D" in e:
            sleeps[" < ".join(go[:4])] += 1
    elif "sched_wakeup" in e:
        go = [f for f in go if not f.startswith(("syscall.", "internal/poll", "net.", "io."))]
        wakes[" < ".join(go[:4])] += 1
print("| why a thread slept | per record |")
print("|---|---:|")
for k, v in sleeps.most_common(8):
    print("| %s | %.2f |" % (k or "(kernel only)", v / records))
print()
print("| what woke a thread | per record |")
print("|---|---:|")
for k, v in wakes.most_common(12):
    print("| %s | %.2f |" % (k or "(kernel only)", v / records))

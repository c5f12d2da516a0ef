# Reads the trace files of docs/bench/one-in-flight-trace.sh (argv[1]: their path prefix;
# argv[2]: records per run; the fsync run first, then the page-cache run) and prints, per
# run, the median time of each step after the leader received the produce request.
import collections, glob, sys

prefix, n = sys.argv[1], int(sys.argv[2])
ev = []
for f in glob.glob(prefix + ".*"):
    for line in open(f):
        t, b, w = line.split()
        ev.append((int(t), int(b), w))
ev.sort()
starts = [i for i, e in enumerate(ev) if e[2] == "L.produce-recv"]
records = [ev[starts[k]:starts[k + 1]] for k in range(len(starts) - 1)]
# The warm-up and the end of each run are left out.
skip = max(n // 30, 1)
runs = {"fsync": records[skip:n - skip], "page cache": records[n + skip:2 * n - skip]}

steps = [
    ("leader appended", lambda L: (lambda b, w: b == L and w == "L.appended"), 0),
    ("leader fsync starts", lambda L: (lambda b, w: b == L and w == "fsync.start"), 0),
    ("1st follower's parked fetch answered", lambda L: (lambda b, w: b in (L, -1) and w == "L.park-answer"), 0),
    ("2nd follower's parked fetch answered", lambda L: (lambda b, w: b in (L, -1) and w == "L.park-answer"), 1),
    ("1st follower has the records", lambda L: (lambda b, w: b != L and w == "F.fetch-answered"), 0),
    ("2nd follower has the records", lambda L: (lambda b, w: b != L and w == "F.fetch-answered"), 1),
    ("leader fsync ends", lambda L: (lambda b, w: b == L and w == "fsync.end"), 0),
    ("1st follower fsync ends", lambda L: (lambda b, w: b != L and w == "fsync.end"), 0),
    ("2nd follower fsync ends", lambda L: (lambda b, w: b != L and w == "fsync.end"), 1),
    ("2nd follower's next fetch reaches the leader", lambda L: (lambda b, w: b in (L, -1) and w == "L.fetch-recv"), 1),
    ("HW passes the record", lambda L: (lambda b, w: b == L and w in ("L.hw-by-fetch", "L.hw-by-fsync")), 0),
    ("produce answered", lambda L: (lambda b, w: w == "L.produce-done"), 0),
]


def median(v):
    v = sorted(v)
    return "%.0f" % v[len(v) // 2] if v else ""


cols = {}
for name, recs in runs.items():
    times = collections.defaultdict(list)
    reads = []
    for rec in recs:
        t0, leader = rec[0][0], rec[0][1]
        for label, pred, k in steps:
            p = pred(leader)
            hits = [t for t, b, w in rec if p(b, w)]
            if len(hits) > k:
                times[label].append((hits[k] - t0) / 1000)
        reads.append(sum(1 for t, b, w in rec if b in (leader, -1) and w in ("L.fetch-recv", "L.park-woken")))
    cols[name] = {label: median(times[label]) for label, _, _ in steps}
    cols[name]["fetch reads on the leader per record (mean)"] = "%.2f" % (sum(reads) / max(len(reads), 1))
    cols[name]["records"] = str(len(recs))

print("| step (µs after the leader read the request, p50) | fsync | page cache |")
print("|---|---:|---:|")
for label in list(cols["fsync"]):
    print("| %s | %s | %s |" % (label, cols["fsync"][label], cols["page cache"][label]))

package perf

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// processContextSwitches returns how many times the threads of process pid have
// blocked so far (voluntary context switches, from /proc/PID/task/*/status), and false
// where /proc does not tell (not Linux, or the process is gone). Counted per record, it
// is the number of thread sleeps and wake-ups a message pattern costs, which, unlike
// latency or preemptions, barely depends on what else the machine runs.
func processContextSwitches(pid int) (int64, bool) {
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "status"))
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var total int64
	for _, path := range tasks {
		f, err := os.Open(path)
		if err != nil {
			continue // the thread has exited
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			name, value, ok := strings.Cut(sc.Text(), ":")
			if ok && name == "voluntary_ctxt_switches" {
				n, _ := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
				total += n
			}
		}
		f.Close()
	}
	return total, true
}

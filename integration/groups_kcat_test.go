package integration

// Consumer groups through kcat -G (librdkafka's high-level consumer: range/roundrobin by
// default, auto-commit every 5 s and on close).

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// kcatGroupArgs are the arguments of a `kcat -G` member: one line per message,
// "partition offset value", unbuffered.
func kcatGroupArgs(c *Cluster, group, topic, clientID string, extra ...string) []string {
	args := []string{"-b", strings.Join(c.Addrs(), ","), "-G", group, "-q", "-u",
		"-f", "%p %o %s\n",
		"-X", "client.id=" + clientID,
		"-X", "auto.offset.reset=earliest",
		"-X", "session.timeout.ms=" + strconv.Itoa(int(groupSessionTimeout.Milliseconds())),
		"-X", "heartbeat.interval.ms=" + strconv.Itoa(int(groupHeartbeat.Milliseconds())),
	}
	return append(append(args, extra...), topic)
}

// parseKcatGroupLine parses one "partition offset value" line.
func parseKcatGroupLine(line string) (consumed, bool) {
	parts := strings.SplitN(line, " ", 3)
	if len(parts) != 3 {
		return consumed{}, false
	}
	p, err1 := strconv.ParseInt(parts[0], 10, 32)
	o, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil {
		return consumed{}, false
	}
	return consumed{partition: int32(p), offset: o, value: parts[2]}, true
}

// startKcatMemberWith is a startMember running `kcat -G` with extra arguments: leave
// is SIGINT (kcat closes its consumer, committing and leaving the group), kill is
// SIGKILL.
func startKcatMemberWith(extra ...string) startMember {
	return func(t testing.TB, c *Cluster, group, topic, clientID string) *groupMember {
		t.Helper()
		bin, err := exec.LookPath("kcat")
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, kcatGroupArgs(c, group, topic, clientID, extra...)...)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		m := &groupMember{clientID: clientID}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if r, ok := parseKcatGroupLine(sc.Text()); ok {
					m.add(r.partition, r.offset, r.value)
				}
			}
		}()
		stop := func(sig os.Signal) {
			cmd.Process.Signal(sig)
			done := make(chan struct{})
			go func() {
				wg.Wait()
				cmd.Wait()
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(kcatTimeout):
				cmd.Process.Kill()
				<-done
				t.Errorf("kcat member %s did not stop within %s after %v", clientID, kcatTimeout, sig)
			}
			if stderr.Len() > 0 {
				t.Logf("kcat member %s stderr:\n%s", clientID, stderr.String())
			}
		}
		m.setStop(t, func() { stop(os.Interrupt) }, func() { stop(os.Kill) })
		return m
	}
}

// TestGroupsKcat_SplitRebalanceLeaveExpire runs the split scenario with kcat -G and
// librdkafka's default assignors (range, roundrobin), and again with
// cooperative-sticky (incremental rebalances).
func TestGroupsKcat_SplitRebalanceLeaveExpire(t *testing.T) {
	kcatBinary(t)
	t.Parallel()
	c := StartCluster(t, 1, groupOptions()...)
	t.Run("default", func(t *testing.T) {
		runSplitScenario(t, c, "kcat", startKcatMemberWith())
	})
	t.Run("cooperative-sticky", func(t *testing.T) {
		runSplitScenario(t, c, "kcat-coop", startKcatMemberWith("-X", "partition.assignment.strategy=cooperative-sticky"))
	})
}

// TestGroupsKcat_CommitAndResume consumes 500 of 1000 records with `kcat -G -c 500`,
// which commits on exit; the next `kcat -G` of the group starts at 500 exactly, and
// after a restart of the broker the one after it resumes where that one stopped.
func TestGroupsKcat_CommitAndResume(t *testing.T) {
	kcatBinary(t)
	t.Parallel()
	c := StartCluster(t, 1, groupOptions()...)
	const topic, group = "kcat-resume", "kcat-resume-group"
	c.CreateTopic(t, topic, 1, nil)
	produceN(t, c, topic, 1000)

	readOffsets := func(count int) []int64 {
		t.Helper()
		ctx, cancel := context.WithTimeout(testContext(t), kcatTimeout)
		defer cancel()
		args := kcatGroupArgs(c, group, topic, "kcat-resume", "-c", strconv.Itoa(count))
		out, err := exec.CommandContext(ctx, kcatBinary(t), args...).Output()
		if err != nil {
			t.Fatalf("kcat %s: %v", strings.Join(args, " "), err)
		}
		var offsets []int64
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if r, ok := parseKcatGroupLine(line); ok {
				offsets = append(offsets, r.offset)
			}
		}
		return offsets
	}
	first := readOffsets(500)
	if len(first) != 500 || first[0] != 0 || first[499] != 499 {
		t.Fatalf("kcat -c 500 printed %d records, from %v", len(first), first[:min(len(first), 3)])
	}
	if got := committedOffset(t, c, group, topic); got != 500 {
		t.Fatalf("committed offset %d, want 500", got)
	}
	if next := readOffsets(1); len(next) != 1 || next[0] != 500 {
		t.Fatalf("the next kcat -G started at %v, want 500", next)
	}

	// The commits come back from __consumer_offsets after the broker restarts.
	c.Stop(0)
	c.Restart(0)
	if got := committedOffset(t, c, group, topic); got != 501 {
		t.Fatalf("committed offset after a restart %d, want 501", got)
	}
	if next := readOffsets(1); len(next) != 1 || next[0] != 501 {
		t.Fatalf("kcat -G after a restart started at %v, want 501", next)
	}
}

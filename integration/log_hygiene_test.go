package integration

// Log hygiene (P18 item 4): routine operations log nothing at WARN or ERROR, so that an
// alert on those levels fires only when something is wrong.

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
)

// TestCluster_LogHygiene runs a clean bootstrap of three voters and a non-voter that
// joins (and is caught up from an empty log), a rolling restart (each node stopped
// gracefully and restarted, full ISRs again before the next) and a clean stop of one
// node, and counts the lines every node logged at WARN or ERROR: there must be none.
func TestCluster_LogHygiene(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 4, WithVoters(3))
	const topic = "hygiene"
	c.CreateTopicRF(t, topic, 3, 3, nil)
	waitFullISR(t, c, topic)
	checkNoAlerts(t, c, "a clean bootstrap")
	for i := range 4 {
		c.Stop(i)
		c.Restart(i)
		waitFullISR(t, c, topic)
	}
	checkNoAlerts(t, c, "a rolling restart")
	c.Stop(1)
	testwait.For(t, convergeTimeout, func() error {
		if b, ok := c.Image(0).Brokers[1]; !ok || !b.Fenced {
			return errors.New("broker 1 is not fenced in node-0's image")
		}
		return nil
	})
	checkNoAlerts(t, c, "a clean stop")
}

// checkNoAlerts fails t if any node logged at WARN or ERROR since the last check.
func checkNoAlerts(t *testing.T, c *Cluster, during string) {
	t.Helper()
	if lines := c.TakeAlertLines(); len(lines) > 0 {
		t.Errorf("%s logged %d lines at WARN or ERROR:\n%s", during, len(lines), strings.Join(lines, "\n"))
	}
}

// TestProcessLogHygiene is TestCluster_LogHygiene with real processes, whose nodes start
// one after another and stop on SIGTERM: a bootstrap, a rolling restart by SIGTERM, and
// SIGTERM to every node at once, with every process's output searched for lines at WARN
// or ERROR.
func TestProcessLogHygiene(t *testing.T) {
	t.Parallel()
	bin := procBuildPetrel(t)
	c := procStartCluster(t, bin)
	const topic = "hygiene"
	c.petrel(t, "topics", "create", topic, "--partitions", "3", "--replication-factor", "3")
	full := func() error { return c.fullISR(topic, 3) }
	testwait.ForWhat(t, 30*time.Second, "the topic with full ISRs", full)
	var alerts []string
	for _, n := range c.nodes {
		alerts = append(alerts, procAlertLines(n.out)...)
	}
	if len(alerts) > 0 {
		t.Errorf("a bootstrap of 3 processes logged %d lines at WARN or ERROR:\n%s", len(alerts), strings.Join(alerts, "\n"))
	}

	// Each incarnation's output is searched once its process has exited; the last
	// ones' at the end.
	alerts = nil
	for _, n := range c.nodes {
		n.signal(t, syscall.SIGTERM)
		if st := n.waitExit(t, 20*time.Second); !st.Success() {
			t.Fatalf("node-%d exited with %s after SIGTERM", n.id, st)
		}
		alerts = append(alerts, procAlertLines(n.out)...)
		n.start(t)
		testwait.ForWhat(t, 45*time.Second, fmt.Sprintf("node-%d back with full ISRs", n.id), func() error {
			if err := n.exited(); err != nil {
				return testwait.Permanent(err)
			}
			return full()
		})
	}
	if len(alerts) > 0 {
		t.Errorf("a rolling restart by SIGTERM logged %d lines at WARN or ERROR:\n%s", len(alerts), strings.Join(alerts, "\n"))
	}

	// The whole cluster stopped at once, as by a service manager on every host.
	for _, n := range c.nodes {
		n.signal(t, syscall.SIGTERM)
	}
	alerts = nil
	for _, n := range c.nodes {
		if st := n.waitExit(t, 40*time.Second); !st.Success() {
			t.Fatalf("node-%d exited with %s after SIGTERM", n.id, st)
		}
		alerts = append(alerts, procAlertLines(n.out)...)
	}
	if len(alerts) > 0 {
		t.Errorf("SIGTERM to every node at once logged %d lines at WARN or ERROR:\n%s", len(alerts), strings.Join(alerts, "\n"))
	}
}

// procAlertLines returns the lines of a process's output logged at WARN or ERROR.
func procAlertLines(w *procLineWriter) []string {
	var out []string
	for _, line := range strings.Split(w.all(), "\n") {
		if strings.Contains(line, "[WARN]") || strings.Contains(line, "[ERROR]") {
			out = append(out, w.prefix+line)
		}
	}
	return out
}

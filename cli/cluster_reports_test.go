package cli

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
)

// TestCluster_ReportsAndTopWithABrokerDown stops one node of three and checks what
// on-call looks at: kafka-topics.sh's partition reports (under-replicated, unavailable,
// under min ISR, at min ISR) with Kafka's semantics, and `petrel top --once` showing the
// stopped broker DOWN instead of leaving it out.
func TestCluster_ReportsAndTopWithABrokerDown(t *testing.T) {
	if testing.Short() {
		t.Skip("three brokers")
	}
	tc := startCluster(t, 3, nil)
	bs := tc.bootstrap()
	// rf3: min ISR 2, so at min ISR after a stop. strict: min ISR 3, so under it. rf1:
	// one partition per broker, the stopped one's left without a leader.
	mustRun(t, "", "topics", "create", bs, "rf3", "--partitions", "3", "--replication-factor", "3", "--config", "min.insync.replicas=2")
	mustRun(t, "", "topics", "create", bs, "strict", "--partitions", "2", "--replication-factor", "3", "--config", "min.insync.replicas=3")
	mustRun(t, "", "topics", "create", bs, "rf1", "--partitions", "3", "--replication-factor", "1")
	mustRun(t, "a\nb\n", "produce", bs, "rf3")

	// Nothing to report while every broker is up.
	for _, report := range []string{"--under-replicated-partitions", "--unavailable-partitions", "--under-min-isr-partitions"} {
		testwait.For(t, 20*time.Second, func() error {
			if r := runQuiet("", "topics", "describe", bs, report); r.code != 0 || r.stdout != "" {
				return fmt.Errorf("%s with every broker up: exit %d, %q%s", report, r.code, r.stdout, r.stderr)
			}
			return nil
		})
	}

	// Stop a broker that is not the controller (its controlled shutdown fences it and
	// takes it out of every ISR at once).
	var cluster clusterDescription
	mustJSON(t, &cluster, "cluster", "describe", bs, "-o", "json")
	stopped := 2
	if cluster.ControllerID == 2 {
		stopped = 1
	}
	var before struct{ Topics []describedTopic }
	mustJSON(t, &before, "topics", "describe", bs, "rf1", "-o", "json")
	orphan := int32(-1) // rf1's partition on the stopped broker
	for _, p := range before.Topics[0].Partitions {
		if p.Replicas[0] == int32(stopped) {
			orphan = p.Partition
		}
	}
	tc.stop(stopped)
	bs = tc.bootstrap()

	type tp struct {
		topic     string
		partition int32
	}
	reported := func(report string) ([]tp, string, error) {
		r := runQuiet("", "topics", "describe", bs, "rf3", "strict", "rf1", report, "-o", "json")
		if r.code != 0 {
			return nil, "", fmt.Errorf("exit %d: %s", r.code, r.stderr)
		}
		var d struct{ Topics []describedTopic }
		if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
			return nil, "", err
		}
		var out []tp
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				out = append(out, tp{t.Name, p.Partition})
			}
		}
		return out, r.stdout, nil
	}
	all := func(topic string, n int32) []tp {
		var out []tp
		for p := range n {
			out = append(out, tp{topic, p})
		}
		return out
	}
	want := map[string][]tp{
		// With eligible leader replicas (on in a new cluster, as in Kafka 4.1+), rf1's
		// orphan leaves its ISR for the ELR when its broker is fenced: an empty ISR
		// is under-replicated, as Kafka's tool reports it.
		"--under-replicated-partitions": append(append(all("rf3", 3), all("strict", 2)...), tp{"rf1", orphan}),
		"--unavailable-partitions":      {{"rf1", orphan}},
		"--under-min-isr-partitions":    append(all("strict", 2), tp{"rf1", orphan}),
		// ISR size equal to min.insync.replicas (Kafka's rule): not rf1's orphan, whose
		// ISR is empty.
		"--at-min-isr-partitions": append(all("rf3", 3), slices.DeleteFunc(all("rf1", 3), func(p tp) bool { return p.partition == orphan })...),
	}
	for report, expected := range want {
		slices.SortFunc(expected, func(a, b tp) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		testwait.For(t, 30*time.Second, func() error {
			got, raw, err := reported(report)
			if err != nil {
				return err
			}
			slices.SortFunc(got, func(a, b tp) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
			if !slices.Equal(got, expected) {
				return fmt.Errorf("%s: %v, want %v\n%s", report, got, expected, raw)
			}
			return nil
		})
	}
	// The text report is kafka-topics.sh's: the matching partition lines alone.
	r := mustRun(t, "", "topics", "describe", bs, "--unavailable-partitions")
	// Its broker fenced, the orphan's ISR is empty and its replica is in the ELR and the
	// last known ELR (KIP-966, on in a new cluster).
	line := fmt.Sprintf("\tTopic: rf1\tPartition: %d\tLeader: none\tReplicas: %d\tIsr: \tElr: %d\tLastKnownElr: %d\n", orphan, stopped, stopped, stopped)
	if r.stdout != line {
		t.Errorf("--unavailable-partitions printed %q, want %q", r.stdout, line)
	}
	r = mustRun(t, "", "topics", "--describe", bs, "--topic", "strict", "--under-min-isr-partitions")
	if !regexp.MustCompile(`^(\tTopic: strict\tPartition: \d\tLeader: \d\tReplicas: [\d,]+\tIsr: \d,\d\tElr: \d\tLastKnownElr: \n){2}$`).MatchString(r.stdout) {
		t.Errorf("--under-min-isr-partitions printed %q", r.stdout)
	}

	// top --once: the stopped broker stays listed, DOWN; figures count every partition.
	r = mustRun(t, "", "top", "--once", bs, tc.metrics(), "--interval", "500ms")
	t.Logf("petrel top --once with node %d stopped:\n%s", stopped, r.stdout)
	out := r.stdout
	assertFits80(t, out)
	if !regexp.MustCompile(`^cluster \S+  controller \d  brokers 3 \(1 down\)\n` +
		`topics 3, partitions 8 \(0 internal\), under-replicated 6, offline 1\n`).MatchString(out) {
		t.Errorf("summary:\n%s", out)
	}
	addr := regexp.QuoteMeta(tc.brokers[stopped].Addr().String())
	if !regexp.MustCompile(fmt.Sprintf(`(?m)^%d +%s +DOWN +- +- +- +- +- +- +-$`, stopped, addr)).MatchString(out) {
		t.Errorf("broker %d is not DOWN in\n%s", stopped, out)
	}
	for i := range 3 {
		if i == stopped {
			continue
		}
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^%d\*? +%s +up +`, i, regexp.QuoteMeta(tc.brokers[i].Addr().String()))).MatchString(out) {
			t.Errorf("broker %d is not up in\n%s", i, out)
		}
	}
}

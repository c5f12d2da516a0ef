package integration

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/cli/workload"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCluster_VerifyWorkloadBrokerRestart runs the workload checker of `petrel verify
// workload` against a healthy 3-node cluster while a broker is killed and started
// again in the middle of the run: acks=all with min.insync.replicas=2 loses nothing,
// and the checker finds no violation, with and without transactions.
func TestCluster_VerifyWorkloadBrokerRestart(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, WithProperty("min.insync.replicas", "2"))
	for _, transactions := range []bool{false, true} {
		report := runWorkloadRestarting(t, c, transactions)
		var out bytes.Buffer
		if err := report.WriteTable(&out); err != nil {
			t.Fatal(err)
		}
		t.Logf("transactions %v:\n%s", transactions, out.String())
		if n := report.Violations(); n != 0 {
			t.Errorf("transactions %v: %d violations", transactions, n)
		}
		if len(report.Faults) != 1 || report.Faults[0].Err != nil {
			t.Errorf("transactions %v: faults %+v", transactions, report.Faults)
		}
		if report.Acknowledged == 0 || report.Read < report.Acknowledged || report.Unchecked != 0 {
			t.Errorf("transactions %v: acknowledged %d, read %d, unchecked %d", transactions, report.Acknowledged, report.Read, report.Unchecked)
		}
	}
}

// runWorkloadRestarting runs a workload whose fault kills node 1 and restarts it. The
// fault hook runs on the checker's goroutine; the test goroutine does the restart
// (the harness is driven from it) and answers the hook.
func runWorkloadRestarting(t *testing.T, c *Cluster, transactions bool) *workload.Report {
	t.Helper()
	restart := make(chan int)
	restarted := make(chan string)
	cfg := workload.Config{
		ClientOpts:         []kgo.Opt{kgo.SeedBrokers(c.Addrs()...)},
		Topic:              fmt.Sprintf("verify-restart-%v", transactions),
		Partitions:         3,
		ReplicationFactor:  3,
		Producers:          3,
		Keys:               12,
		Records:            3000,
		Rate:               1000,
		Duration:           60 * time.Second,
		Transactions:       transactions,
		AbortFraction:      0.2,
		TransactionRecords: 10,
		Consumers:          2,
		DeliveryTimeout:    30 * time.Second,
		DrainTimeout:       60 * time.Second,
		Faults:             []workload.FaultPoint{{Fraction: 0.4}},
		Fault: func(ctx context.Context, n int) (string, error) {
			select {
			case restart <- n:
			case <-ctx.Done():
				return "", ctx.Err()
			}
			select {
			case out := <-restarted:
				return out, nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		},
	}
	if transactions {
		cfg.Records = 1000 // one transaction at a time per producer: slower
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var report *workload.Report
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		report, err = workload.Run(ctx, cfg)
	}()
	for {
		select {
		case <-restart:
			c.Kill(1)
			c.Restart(1)
			restarted <- "node 1 killed and restarted"
		case <-done:
			if err != nil {
				t.Fatal(err)
			}
			return report
		}
	}
}

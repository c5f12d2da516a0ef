package cli

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestVerifyWorkloadHealthy(t *testing.T) {
	b := startBroker(t, nil)
	r := mustRun(t, "", "verify", "workload", "--brokers", b.Addr().String(), "--topic", "vw",
		"--partitions", "2", "--replication-factor", "1", "--producers", "2", "--keys", "8",
		"--records", "300", "--rate", "300", "--duration", "30s", "--consumers", "1",
		"--fault-cmd", "echo fault $PETREL_VERIFY_FAULT on $PETREL_VERIFY_TOPIC", "--fault-at", "30%")
	for _, want := range []string{`acknowledged records lost +0 +ok\n`, `acknowledged records the group never received +0 +ok\n`,
		`produced +300\n`, `aborted after a failed produce +0\n`, "\n0 violations\n"} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	for _, want := range []string{"fault 1 (due at 30%) ran at", "  | fault 1 on vw\n", "100% "} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
}

func TestVerifyWorkloadBadFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--records", "0", "--duration", "0s"}, "give --records, --duration or both"},
		{[]string{"--fault-at", "30%"}, "--fault-at needs --fault-cmd"},
		{[]string{"--fault-cmd", "true", "--fault-at", "130%"}, `--fault-at: bad fault moment "130%"`},
		{[]string{"--fault-cmd", "true", "--fault-at", "soon"}, `--fault-at: bad fault moment "soon"`},
		{[]string{"--producers", "0"}, "--producers 0: want 1 to 1000"},
		{[]string{"--transactions", "--abort-fraction", "2"}, "--abort-fraction 2: want 0 to 1"},
		{[]string{"--records", "-1"}, "--records -1"},
		{[]string{"extra"}, "takes no arguments"},
	} {
		mustFail(t, tt.want, "", append([]string{"verify", "workload", "--bootstrap-server", closedPort(t)}, tt.args...)...)
	}
}

func TestVerifyWorkloadNoCluster(t *testing.T) {
	mustFail(t, "creating topic", "", "verify", "workload", "--bootstrap-server", closedPort(t), "--timeout", "1s", "--delivery-timeout", "2s", "--no-progress")
}

// TestVerifyWorkloadPlantedViolations plants a violation behind the checker's back
// through --fault-cmd (this test binary run again as TestHelperPlant): the report
// names it and the command exits 1.
func TestVerifyWorkloadPlantedViolations(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ plant, row string }{
		{"duplicate", `duplicated records +1 +FAIL\n`},
		{"loss", `acknowledged records lost +[1-9][0-9]* +FAIL\n`},
	} {
		t.Run(tt.plant, func(t *testing.T) {
			b := startBroker(t, nil)
			cmd := fmt.Sprintf("PETREL_TEST_PLANT=%s PETREL_TEST_BROKER=%s %s -test.run '^TestHelperPlant$'", tt.plant, b.Addr(), exe)
			r := run(t, "", "verify", "workload", "--brokers", b.Addr().String(), "--topic", "vw-"+tt.plant,
				"--partitions", "1", "--replication-factor", "1", "--producers", "2", "--keys", "8",
				"--records", "400", "--rate", "400", "--duration", "30s", "--consumers", "0", "--no-progress",
				"--fault-cmd", cmd, "--fault-at", "50%")
			if r.code != 1 || !strings.Contains(r.stderr, "violations found") {
				t.Fatalf("exit %d, stderr %q: want 1 and violations found", r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, "fault 1 (due at 50%) ran at") || !strings.Contains(r.stderr, "  | planted "+tt.plant) {
				t.Errorf("stderr lacks the fault's output")
			}
			if !regexp.MustCompile(tt.row).MatchString(r.stdout) {
				t.Errorf("stdout lacks a failed %q row", tt.row)
			}
		})
	}
}

// TestHelperPlant is TestVerifyWorkloadPlantedViolations's fault command: it
// re-produces the topic's first record with a plain producer (a duplicate), or deletes
// the partition's records below its high watermark (a loss).
func TestHelperPlant(t *testing.T) {
	plant, addr, topic := os.Getenv("PETREL_TEST_PLANT"), os.Getenv("PETREL_TEST_BROKER"), os.Getenv("PETREL_VERIFY_TOPIC")
	if plant == "" {
		t.Skip("the fault command of TestVerifyWorkloadPlantedViolations")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	switch plant {
	case "duplicate":
		fetches := cl.PollRecords(ctx, 1)
		if err := fetches.Err0(); err != nil || len(fetches.Records()) == 0 {
			t.Fatalf("reading a record: %v", err)
		}
		rec := fetches.Records()[0]
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: rec.Key, Value: rec.Value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	case "loss":
		adm := kadm.NewClient(cl)
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		end, _ := ends.Lookup(topic, 0)
		resp, err := adm.DeleteRecords(ctx, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: end.Offset}}})
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	fmt.Printf("planted %s\n", plant)
}

// On --fault-timeout the fault command's whole process group is killed, not only the
// shell: a sleep it started does not outlive it.
func TestVerifyWorkloadFaultTimeoutKillsTheGroup(t *testing.T) {
	fault := shellFault("sleep 60 & echo $!; wait", "t", 500*time.Millisecond)
	out, err := fault(context.Background(), 1)
	if err == nil || !strings.Contains(err.Error(), "did not finish within 500ms") {
		t.Fatalf("fault: %v, want the timeout", err)
	}
	pid, perr := strconv.Atoi(strings.TrimSpace(out))
	if perr != nil {
		t.Fatalf("output %q: no pid", out)
	}
	testwait.Until(t, 10*time.Second, "the fault's sleep to end", func() bool {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		// gone, or a zombie its new parent has yet to reap
		return err != nil || strings.Contains(string(stat), ") Z ")
	})
}

// A --group with committed offsets for the topic is refused with a clear message
// before anything is produced.
func TestVerifyWorkloadRefusesAUsedGroup(t *testing.T) {
	b := startBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "vw-used"); err != nil {
		t.Fatal(err)
	}
	if resp, err := adm.CommitOffsets(ctx, "used", kadm.Offsets{"vw-used": {0: {Topic: "vw-used", Partition: 0, At: 0}}}); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	mustFail(t, `group "used" already has committed offsets for topic "vw-used" (1 partitions): give a new --group`, "",
		"verify", "workload", "--brokers", b.Addr().String(), "--topic", "vw-used", "--group", "used",
		"--records", "10", "--consumers", "1", "--no-progress")
}

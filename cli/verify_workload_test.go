package cli

import (
	"strings"
	"testing"
)

func TestVerifyWorkloadHealthy(t *testing.T) {
	b := startBroker(t, nil)
	r := mustRun(t, "", "verify", "workload", "--brokers", b.Addr().String(), "--topic", "vw",
		"--partitions", "2", "--replication-factor", "1", "--producers", "2", "--keys", "8",
		"--records", "300", "--rate", "300", "--duration", "30s", "--consumers", "1",
		"--fault-cmd", "echo fault $PETREL_VERIFY_FAULT on $PETREL_VERIFY_TOPIC", "--fault-at", "30%")
	for _, want := range []string{"acknowledged records lost         0           ok", "produced                 300", "\n0 violations\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	for _, want := range []string{"fault 1 (due at 30%) ran at", "  | fault 1 on vw\n", "100% |"} {
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

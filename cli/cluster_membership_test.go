package cli

import "testing"

// TestBrokerCommandsCheckTheirArgument: remove-broker, cordon and uncordon take one
// broker id and refuse anything else in one line, before connecting anywhere.
func TestBrokerCommandsCheckTheirArgument(t *testing.T) {
	for _, cmd := range []string{"remove-broker", "cordon", "uncordon"} {
		mustFail(t, "takes exactly one BROKER_ID, got 0", "", "cluster", cmd, "--bootstrap-server", closedPort(t))
		mustFail(t, `invalid broker id "x": a non-negative integer`, "", "cluster", cmd, "x", "--bootstrap-server", closedPort(t))
		mustFail(t, `invalid broker id "4294967296"`, "", "cluster", cmd, "4294967296", "--bootstrap-server", closedPort(t))
	}
}

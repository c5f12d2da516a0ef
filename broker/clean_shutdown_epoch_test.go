package broker

import (
	"context"
	"testing"
)

// A clean shutdown records the broker epoch in the clean shutdown marker, and the next
// start sends it as BrokerRegistration's PreviousBrokerEpoch (KIP-966's clean-shutdown
// detection); a start without the marker (a crash) sends -1.
func TestCleanShutdownRecordsBrokerEpoch(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"broker.session.timeout.ms": "2000", "broker.heartbeat.interval.ms": "200"}
	b := startTestBroker(t, dir, props)
	epoch := b.BrokerEpoch()
	if epoch < 0 {
		t.Fatalf("broker epoch %d", epoch)
	}
	if got := b.registrationRequest().PreviousBrokerEpoch; got != -1 {
		t.Fatalf("first start sends PreviousBrokerEpoch %d, want -1", got)
	}
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b = startTestBroker(t, dir, props)
	if got := b.registrationRequest().PreviousBrokerEpoch; got != epoch {
		t.Fatalf("after a clean shutdown at epoch %d: PreviousBrokerEpoch %d", epoch, got)
	}
	if got := readCleanShutdownEpoch(t.TempDir()); got != -1 {
		t.Fatalf("no marker: %d", got)
	}
}

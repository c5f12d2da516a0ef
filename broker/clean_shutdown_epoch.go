package broker

// The broker epoch of a clean shutdown (KIP-966): the log directory's clean shutdown
// marker records the epoch this broker was registered at when it closed, and the next
// start sends it as BrokerRegistration's PreviousBrokerEpoch. The controller takes a
// registration whose previous epoch is not the registered one for an unclean shutdown
// and drops the broker from every eligible leader replica set (controller/elr.go).

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// cleanShutdownMarker is the marker's content, Kafka's format.
type cleanShutdownMarker struct {
	Version     int   `json:"version"`
	BrokerEpoch int64 `json:"brokerEpoch"`
}

// cleanShutdownMarkerBytes is the marker for a close at broker epoch (-1: never
// registered).
func cleanShutdownMarkerBytes(epoch int64) []byte {
	return fmt.Appendf(nil, `{"version":0,"brokerEpoch":%d}`, epoch)
}

// readCleanShutdownEpoch returns the broker epoch recorded by the clean shutdown marker
// in dir, -1 when there is none or it names none.
func readCleanShutdownEpoch(dir string) int64 {
	data, err := os.ReadFile(filepath.Join(dir, cleanShutdownFile))
	if err != nil {
		return -1
	}
	m := cleanShutdownMarker{BrokerEpoch: -1}
	if json.Unmarshal(data, &m) != nil {
		return -1
	}
	return m.BrokerEpoch
}

package broker

import "testing"

// TestClusterIDBeforeReady: a new cluster's first controller writes the cluster id
// before it decides anything else, so the broker's registration lands after it and a
// broker that is ready never answers Metadata with an empty cluster id (a client
// reading it at once used to see "" until the controller's next tick, about one start
// in ten: five starts catch a regression in about two runs of five).
func TestClusterIDBeforeReady(t *testing.T) {
	for range 5 {
		b := startTestBroker(t, "", nil)
		if id := b.Image().ClusterID; id == "" {
			t.Fatal("ready with no cluster id in the image")
		}
		b.Shutdown(t.Context())
	}
}

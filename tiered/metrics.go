package tiered

// Metrics counts remote storage operations per topic: Kafka's BrokerTopicMetrics
// meters RemoteCopy*, RemoteFetch* and RemoteDelete* (docs/metrics.md). The broker's
// metrics registry (metrics.Registry) implements it; the remote read path calls the
// RemoteFetch ones, once per remote read. Safe for concurrent use.
type Metrics interface {
	RemoteCopyRequest(topic string)
	RemoteCopied(topic string, bytes int64)
	RemoteCopyError(topic string)
	RemoteFetchRequest(topic string)
	RemoteFetched(topic string, bytes int64)
	RemoteFetchError(topic string)
	RemoteDeleteRequest(topic string)
	RemoteDeleteError(topic string)
}

// NopMetrics counts nothing.
type NopMetrics struct{}

// RemoteCopyRequest does nothing.
func (NopMetrics) RemoteCopyRequest(string) {}

// RemoteCopied does nothing.
func (NopMetrics) RemoteCopied(string, int64) {}

// RemoteCopyError does nothing.
func (NopMetrics) RemoteCopyError(string) {}

// RemoteFetchRequest does nothing.
func (NopMetrics) RemoteFetchRequest(string) {}

// RemoteFetched does nothing.
func (NopMetrics) RemoteFetched(string, int64) {}

// RemoteFetchError does nothing.
func (NopMetrics) RemoteFetchError(string) {}

// RemoteDeleteRequest does nothing.
func (NopMetrics) RemoteDeleteRequest(string) {}

// RemoteDeleteError does nothing.
func (NopMetrics) RemoteDeleteError(string) {}

package cli

// The replicas of `petrel verify replicas` are asked over ReplicaDigests, Petrel's
// internal API (broker/10001_replica_digests.go). franz-go sends only what a broker
// advertised, and brokers advertise ReplicaDigests only to a client naming itself
// broker.OperatorCLISoftwareName in ApiVersions; each broker is reached by a client of
// its own that does, with the command's connection flags (TLS, SASL).

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/petrel-broker/petrel/broker"
	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	ucli "github.com/urfave/cli/v2"
)

// digestClients keeps one pinned client per broker.
type digestClients struct {
	c       *ucli.Context
	addrs   map[int32]string
	mu      sync.Mutex
	clients map[int32]*clientcmd.Client
}

func newDigestClients(c *ucli.Context, addrs map[int32]string) *digestClients {
	return &digestClients{c: c, addrs: addrs, clients: map[int32]*clientcmd.Client{}}
}

func (d *digestClients) get(id int32) (*clientcmd.Client, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if cl, ok := d.clients[id]; ok {
		return cl, nil
	}
	addr, ok := d.addrs[id]
	if !ok {
		return nil, fmt.Errorf("broker %d is not in the cluster's metadata", id)
	}
	cl, err := clientcmd.NewClient(d.c, append(clientcmd.OperatorOptions(cliSoftwareVersion()), kgo.SeedBrokers(addr))...)
	if err != nil {
		return nil, err
	}
	d.clients[id] = cl
	return cl, nil
}

func (d *digestClients) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, cl := range d.clients {
		cl.Close()
	}
}

// digests asks broker id for the digests of one partition's [start, end).
func (d *digestClients) digests(ctx context.Context, id int32, topic string, partition int32, start, end int64, chunkBytes int32) (broker.ReplicaDigestsResponsePartition, error) {
	var none broker.ReplicaDigestsResponsePartition
	cl, err := d.get(id)
	if err != nil {
		return none, err
	}
	req := &broker.ReplicaDigestsRequest{ChunkBytes: chunkBytes, MaxBytes: verifyReplicasRequestBytes,
		Topics: []broker.ReplicaDigestsRequestTopic{{Topic: topic,
			Partitions: []broker.ReplicaDigestsRequestPartition{{Partition: partition, Start: start, End: end}}}}}
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return none, fmt.Errorf("broker %d: no connection", id)
	}
	rctx, cancel := cl.RequestContext(ctx)
	defer cancel()
	kresp, err := seeds[0].Request(rctx, req)
	if err != nil {
		return none, fmt.Errorf("broker %d: %w", id, err)
	}
	resp, ok := kresp.(*broker.ReplicaDigestsResponse)
	if !ok || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return none, fmt.Errorf("broker %d: malformed ReplicaDigests answer", id)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		return p, fmt.Errorf("broker %d: %w", id, kerr.ErrorForCode(p.ErrorCode))
	}
	return p, nil
}

// cliSoftwareVersion is the build's version as a KIP-511 client software version:
// letters, digits, '-' and '.', starting and ending with a letter or digit ("devel"
// when the build has none).
func cliSoftwareVersion() string {
	v := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return -1
	}, readBuildVersion().Version)
	v = strings.Trim(v, "-.")
	if v == "" {
		return "devel"
	}
	return v
}

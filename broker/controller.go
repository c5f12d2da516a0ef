package broker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	"github.com/petrel-broker/petrel/fsm"
	"github.com/petrel-broker/petrel/metadata"
)

// Broker errors mapped to Kafka codes in errors.go.
var (
	// ErrNotController means this node is not the Raft leader.
	ErrNotController = errors.New("broker: not the controller")
	// ErrTopicDeletionDisabled means delete.topic.enable is false.
	ErrTopicDeletionDisabled = errors.New("broker: topic deletion is disabled")
)

// propose writes records as one Raft entry and waits until it is applied. The result
// is the image after the entry or the domain error that refused it.
func (b *Broker) propose(ctx context.Context, records ...metadata.Record) (*metadata.Image, error) {
	data, err := metadata.EncodeRecords(records...)
	if err != nil {
		return nil, err
	}
	timeout := 10 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(dl), time.Millisecond)
	}
	f := b.raft.raft.Apply(data, timeout)
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return nil, fmt.Errorf("%w: %v", ErrNotController, err)
		}
		return nil, err
	}
	res := f.Response().(fsm.ApplyResult)
	return res.Image, res.Err
}

// controllerLoop runs the controller's duties while this node is the Raft leader: it
// writes the cluster id once and registers this broker.
func (b *Broker) controllerLoop() {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-tick.C:
		}
		if !b.IsController() {
			continue
		}
		ctx, cancel := b.waitTimeout(context.Background(), 5*time.Second)
		if err := b.controllerDuties(ctx); err != nil && !errors.Is(err, ErrNotController) {
			b.logger.Warn("controller duties failed", "error", err)
		}
		cancel()
	}
}

func (b *Broker) controllerDuties(ctx context.Context) error {
	im := b.Image()
	var records []metadata.Record
	if im.ClusterID == "" {
		var raw [16]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return err
		}
		records = append(records, metadata.ClusterRecord{ClusterID: metadata.UuidFromBytes(raw).String()})
	}
	if br, ok := im.Brokers[b.cfg.NodeID]; !ok || br.IncarnationID != b.incarnation || br.Fenced {
		records = append(records, b.registrationRecord())
	}
	if len(records) == 0 {
		return nil
	}
	_, err := b.propose(ctx, records...)
	return err
}

// registrationRecord registers this broker, unfenced, with its advertised listener.
func (b *Broker) registrationRecord() metadata.RegisterBrokerRecord {
	host, port := splitHostPort(b.cfg.Advertised)
	return metadata.RegisterBrokerRecord{
		BrokerID:      b.cfg.NodeID,
		IncarnationID: b.incarnation,
		Listeners:     []metadata.Endpoint{{Name: "PLAINTEXT", Host: host, Port: port}},
		Rack:          b.cfg.Properties["broker.rack"],
		Fenced:        false,
	}
}

package broker

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Petrel's own tagged fields on the internal controller APIs. BrokerRegistration and
// BrokerHeartbeat are flexible in every version, so a field Kafka's schema does not have
// travels as a tagged field that any decoder skips (kmsg keeps it in UnknownTags). The
// numbers are far above Kafka's (which count from 0 per message), so a field Kafka adds
// later cannot collide with them; they are never reused.
const (
	// previousIncarnationTag (BrokerRegistration): the 16-byte incarnation id this
	// node's previous process registered, read from the data directory's registration
	// file (registration_file.go). The controller replaces that registration at once.
	previousIncarnationTag uint32 = 10000
	// refusedPeersTag (BrokerHeartbeat): brokers whose inter-broker listener refused a
	// connection from the sender, each as broker id (int32) and the broker epoch the
	// sender's image held for it (int64), big-endian, after a uvarint count
	// (controller/peer_refusals.go).
	refusedPeersTag uint32 = 10001
	// clusterStoppingTag (BrokerHeartbeatResponse, with ShouldShutdown): the controller
	// let the broker stop without moving its leaderships because every other unfenced
	// broker is stopping too (controller.ControlledShutdown). Its value is one byte, 1.
	clusterStoppingTag uint32 = 10002
	// remoteSizeTag (DescribeLogDirsResponse partition, v2+): the bytes of the
	// partition's segments copied to remote storage (KIP-405), a uvarint, on tiered
	// partitions only (remote_log_dirs.go); `petrel log-dirs describe` shows it.
	remoteSizeTag uint32 = 10003
)

// maxRefusedPeers bounds a refusedPeersTag list (a cluster has far fewer brokers).
const maxRefusedPeers = 4096

// errBadPetrelTag is a Petrel tagged field that does not decode.
var errBadPetrelTag = errors.New("broker: malformed Petrel tagged field")

// detachTags replaces tags with a copy that shares no memory with the request frame:
// kmsg's decoder aliases tagged-field values with the frame, which goes back to the
// pool when the handler returns (DESIGN.md invariant F6), while the controller
// requests carrying Petrel's tags are answered on another goroutine.
func detachTags(tags *kmsg.Tags) {
	if tags.Len() == 0 {
		return
	}
	var copied kmsg.Tags
	tags.Each(func(k uint32, v []byte) { copied.Set(k, append([]byte(nil), v...)) })
	*tags = copied
}

// petrelTag returns the value of tag key, if the message carries it.
func petrelTag(tags *kmsg.Tags, key uint32) ([]byte, bool) {
	var val []byte
	found := false
	tags.Each(func(k uint32, v []byte) {
		if k == key {
			val, found = v, true
		}
	})
	return val, found
}

// previousIncarnationOf returns the incarnation a registration names as its previous
// one, or the zero id.
func previousIncarnationOf(r *kmsg.BrokerRegistrationRequest) metadata.Uuid {
	v, ok := petrelTag(&r.UnknownTags, previousIncarnationTag)
	if !ok || len(v) != 16 {
		return metadata.ZeroUuid
	}
	return metadata.Uuid(v)
}

// peerRefusal is one refused peer in a heartbeat: the broker and the epoch it had.
type peerRefusal = controller.PeerRefusal

// encodeRefusedPeers encodes a refusedPeersTag value.
func encodeRefusedPeers(peers []peerRefusal) []byte {
	out := binary.AppendUvarint(nil, uint64(len(peers)))
	for _, p := range peers {
		out = binary.BigEndian.AppendUint32(out, uint32(p.BrokerID))
		out = binary.BigEndian.AppendUint64(out, uint64(p.BrokerEpoch))
	}
	return out
}

// decodeRefusedPeers decodes a refusedPeersTag value; anything left over or missing is
// an error.
func decodeRefusedPeers(v []byte) ([]peerRefusal, error) {
	n, used := binary.Uvarint(v)
	if used <= 0 || n > maxRefusedPeers || uint64(len(v)-used) != n*12 {
		return nil, fmt.Errorf("%w: refused peers (%d bytes)", errBadPetrelTag, len(v))
	}
	v = v[used:]
	out := make([]peerRefusal, 0, n)
	for range n {
		out = append(out, peerRefusal{BrokerID: int32(binary.BigEndian.Uint32(v)), BrokerEpoch: int64(binary.BigEndian.Uint64(v[4:]))})
		v = v[12:]
	}
	return out, nil
}

// refusedPeersOf returns the refused peers a heartbeat reports.
func refusedPeersOf(r *kmsg.BrokerHeartbeatRequest) ([]peerRefusal, error) {
	v, ok := petrelTag(&r.UnknownTags, refusedPeersTag)
	if !ok {
		return nil, nil
	}
	return decodeRefusedPeers(v)
}

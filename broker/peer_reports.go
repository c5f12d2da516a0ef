package broker

// Refused dials of the other brokers' inter-broker listeners, recorded in b.refusals
// (controller.Refusals: reported once per interval in an extra BrokerHeartbeat,
// controller/peer_refusals.go).

import (
	"errors"
	"syscall"
	"time"
)

// isConnectionRefused reports whether err is a dial refused by the peer's host: no
// process listens on the address.
func isConnectionRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// noteDialError records err, the failed dial of broker id's inter-broker listener, if it
// is a refusal of a broker this broker's image holds registered and unfenced (a fenced
// one leads nothing and is nobody's concern).
func (b *Broker) noteDialError(id int32, err error) {
	if err == nil || !isConnectionRefused(err) || id == b.cfg.NodeID {
		return
	}
	br, ok := b.Image().Brokers[id]
	if !ok || br.Fenced {
		return
	}
	b.refusals.Refused(id, br.Epoch, time.Now())
}

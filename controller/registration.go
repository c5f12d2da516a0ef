package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

// Registration is a broker's BrokerRegistration request, decoded.
type Registration struct {
	BrokerID int32
	// ClusterID is the cluster id the broker knows ("" when it knows none yet).
	ClusterID string
	// Incarnation is the registering process's id.
	Incarnation metadata.Uuid
	// Previous is the incarnation the process knows it replaces, from its data
	// directory (zero when it names none).
	Previous metadata.Uuid
	// PreviousBrokerEpoch is the broker epoch the process's clean shutdown recorded
	// (Kafka's field, KIP-966), -1 when it recorded none: a new incarnation whose
	// previous epoch is not the registered one shut down uncleanly and leaves every ELR.
	PreviousBrokerEpoch int64
	// Listeners and Rack are what the broker advertises.
	Listeners []metadata.Endpoint
	Rack      string
	// Features are the feature ranges the broker supports (nil: a Petrel without
	// features, which can follow only a cluster without feature records).
	Features []metadata.BrokerFeature
}

// Register handles a broker's registration and returns its broker epoch. A cluster-id
// mismatch is ErrInconsistentClusterID; a different incarnation while the registered
// one's session is still valid is ErrDuplicateBrokerRegistration (Kafka's rule), unless
// the registration names the registered incarnation as its previous one (that process
// is dead). A new incarnation is registered fenced with a new broker epoch (the offset
// of its record) and a fresh session; an old incarnation not fenced yet is fenced first
// in the same entry, unless the new one replaces it after a clean shutdown at its
// registered epoch: then it resumes unfenced (resumeRecords). The same incarnation
// again keeps its epoch, fence state and session.
func (c *Controller) Register(ctx context.Context, reg Registration) (int64, error) {
	newIncarnation, replacedLive, resumed := false, false, false
	ctx, notes := withELRNotes(ctx)
	im, err := c.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		newIncarnation, replacedLive, resumed = false, false, false
		notes.uncleanShutdown = nil
		if im.ClusterID != "" && reg.ClusterID != "" && reg.ClusterID != im.ClusterID {
			return nil, fmt.Errorf("%w: broker %d has %q, the cluster is %q", ErrInconsistentClusterID, reg.BrokerID, reg.ClusterID, im.ClusterID)
		}
		if err := checkRegistrationFeatures(im, reg); err != nil {
			return nil, err
		}
		existing := im.Brokers[reg.BrokerID]
		if existing != nil && existing.IncarnationID == reg.Incarnation {
			return nil, nil // the same process again: keep epoch and fence state
		}
		replaces := existing != nil && reg.Previous != metadata.ZeroUuid && reg.Previous == existing.IncarnationID
		if existing != nil && !existing.Fenced && !replaces && c.sessions.Valid(reg.BrokerID, time.Now(), c.cfg.SessionTimeout) {
			return nil, fmt.Errorf("%w: broker %d", ErrDuplicateBrokerRegistration, reg.BrokerID)
		}
		newIncarnation = true
		cleanShutdown := existing != nil && reg.PreviousBrokerEpoch == existing.Epoch
		if existing != nil && !cleanShutdown {
			noteUncleanShutdown(ctx, reg.BrokerID)
		}
		if replaces && cleanShutdown && !existing.Fenced {
			// The whole cluster stopped at once (the controller moved nothing:
			// ControlledShutdown) or the broker stopped without its controlled shutdown,
			// and it comes back on the data directory its clean shutdown closed at the
			// registered epoch: nothing changed since, in its log or in its roles, as after
			// a pause. It resumes them unfenced, in the same leader epochs, with no
			// partition change (resumeRecords).
			resumed = true
			records := resumeRecords(im, reg, c.cfg.UncleanAllowed(im))
			c.LogUncleanElections(im, records) // as at an unfence
			return records, nil
		}
		// An old incarnation still unfenced (it died and its session expired, but the
		// controller has not fenced it yet) is fenced in the same entry, first: out of
		// every ISR and leadership, as when its session expiry is noticed. Otherwise the
		// restarted process would resume its old leaderships in the same leader epoch,
		// with whatever its log kept of an unclean shutdown (KIP-966's concern).
		var records []metadata.Record
		if existing != nil && !existing.Fenced {
			records = metadata.FenceBrokerRecords(im, reg.BrokerID, c.cfg.UncleanAllowed(im))
			replacedLive = replaces
		}
		rec := metadata.RegisterBrokerRecord{BrokerID: reg.BrokerID, IncarnationID: reg.Incarnation, Fenced: true,
			Listeners: reg.Listeners, Rack: reg.Rack, Features: reg.Features}
		return append(records, rec), nil
	})
	if err != nil {
		return -1, err
	}
	epoch := im.Brokers[reg.BrokerID].Epoch
	if resumed {
		c.log.Info("broker restarted after a clean shutdown at its registered epoch: resumes its roles unfenced",
			"broker", reg.BrokerID, "previous_incarnation", reg.Previous, "previous_broker_epoch", reg.PreviousBrokerEpoch, "broker_epoch", epoch)
	}
	if replacedLive {
		c.log.Info("broker restarted on its data directory: its previous incarnation fenced and replaced at once",
			"broker", reg.BrokerID, "previous_incarnation", reg.Previous, "broker_epoch", epoch)
	}
	if newIncarnation {
		c.sessions.Registered(reg.BrokerID, time.Now()) // a new process: a fresh session
	} else {
		c.sessions.Heartbeat(reg.BrokerID, -1, false, time.Now()) // same process: stays as it was
	}
	return epoch, nil
}

// resumeRecords registers reg's incarnation unfenced in place of the unfenced one it
// replaces, whose clean shutdown it reports at the registered broker epoch: the entry
// that would otherwise fence the old incarnation (one ISR change per partition: 100,000
// records for a broker of a 100,000-partition RF 3 cluster) and, at its unfence, elect
// every partition's leader again in a new leader epoch.
//
// It is safe because nothing changed while the process was away. Its epoch is still
// the registered one, so the controller has written no fence since the close, and the
// clean shutdown marker is written only after every replica was closed with its
// records on disk (DESIGN.md S9): its logs hold everything the ISRs it is in and the
// leaderships it holds promise, as a paused process would. Any partition change made
// meanwhile (an election elsewhere, an ISR shrink by another leader) is in the image the
// broker catches up with before it acts on any (partitions.go, reconcileLoop: it waits
// for this registration in its own image). Leaderless partitions whose ISR holds it get
// a leader in the same entry, as at an unfence. An unclean shutdown (no marker, or one
// of another epoch) takes the fencing path, and with it the broker leaves every ELR.
func resumeRecords(im *metadata.Image, reg Registration, unclean func(topic string) bool) []metadata.Record {
	rec := metadata.RegisterBrokerRecord{BrokerID: reg.BrokerID, IncarnationID: reg.Incarnation, Fenced: false,
		Listeners: reg.Listeners, Rack: reg.Rack, Features: reg.Features}
	return append([]metadata.Record{rec}, metadata.ElectLeaderlessWith(im, reg.BrokerID, unclean)...)
}

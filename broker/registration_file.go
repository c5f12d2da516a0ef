package broker

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/segment"
)

// registrationFileName is the data directory's record of this node's last broker
// registration: the node id, the incarnation id the controller registered and its broker
// epoch, in Kafka's properties syntax (as meta.properties):
//
//	version=0
//	node.id=0
//	incarnation.id=<base64url uuid>
//	broker.epoch=12
//
// A restarted process names that incarnation in its BrokerRegistration
// (previousIncarnationTag): it holds the same data directory, whose lock no two live
// processes can hold, so the incarnation it names is dead, and the controller replaces
// it at once instead of refusing the new one with DUPLICATE_BROKER_REGISTRATION until
// the old session expires. A process on another directory cannot name it.
const registrationFileName = "registration.properties"

// registrationFileVersion is the file's format version.
const registrationFileVersion = 0

// errRegistrationFile marks a registration file that cannot be used.
var errRegistrationFile = errors.New("broker: unusable registration file")

// registrationRecord is what the registration file holds.
type registrationRecord struct {
	NodeID      int32
	Incarnation metadata.Uuid
	BrokerEpoch int64
}

// registrationFilePath is the registration file of the data directory.
func (c *Config) registrationFilePath() string {
	return filepath.Join(c.DataDir, registrationFileName)
}

// readRegistrationFile reads the data directory's registration file. A missing file is
// a zero record and no error (a new directory, or an older build's); a malformed one, or
// one of another node id (the directory was moved to another node), is an error and the
// caller names no previous incarnation.
func readRegistrationFile(path string, nodeID int32) (registrationRecord, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return registrationRecord{}, nil
	}
	if err != nil {
		return registrationRecord{}, err
	}
	rec, err := parseRegistrationFile(data)
	if err != nil {
		return registrationRecord{}, err
	}
	if rec.NodeID != nodeID {
		return registrationRecord{}, fmt.Errorf("%w: %s is node %d's, this is node %d", errRegistrationFile, path, rec.NodeID, nodeID)
	}
	return rec, nil
}

// parseRegistrationFile parses the file's properties; every key must be there once.
func parseRegistrationFile(data []byte) (registrationRecord, error) {
	props := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return registrationRecord{}, fmt.Errorf("%w: line %q", errRegistrationFile, line)
		}
		if _, dup := props[k]; dup {
			return registrationRecord{}, fmt.Errorf("%w: %s twice", errRegistrationFile, k)
		}
		props[k] = v
	}
	if props["version"] != strconv.Itoa(registrationFileVersion) {
		return registrationRecord{}, fmt.Errorf("%w: version %q", errRegistrationFile, props["version"])
	}
	var rec registrationRecord
	id, err := strconv.ParseInt(props["node.id"], 10, 32)
	if err != nil {
		return rec, fmt.Errorf("%w: node.id: %v", errRegistrationFile, err)
	}
	inc, err := metadata.ParseUuid(props["incarnation.id"])
	if err != nil || inc == metadata.ZeroUuid {
		return rec, fmt.Errorf("%w: incarnation.id %q", errRegistrationFile, props["incarnation.id"])
	}
	epoch, err := strconv.ParseInt(props["broker.epoch"], 10, 64)
	if err != nil {
		return rec, fmt.Errorf("%w: broker.epoch: %v", errRegistrationFile, err)
	}
	return registrationRecord{NodeID: int32(id), Incarnation: inc, BrokerEpoch: epoch}, nil
}

// writeRegistrationFile replaces the registration file atomically (temporary file,
// fsync, rename, directory fsync): a crash leaves the previous registration or this one.
func writeRegistrationFile(path string, rec registrationRecord) error {
	data := fmt.Sprintf("#Petrel: this node's last broker registration\nversion=%d\nnode.id=%d\nincarnation.id=%s\nbroker.epoch=%d\n",
		registrationFileVersion, rec.NodeID, rec.Incarnation, rec.BrokerEpoch)
	return segment.WriteFileAtomic(path, []byte(data))
}

// loadPreviousIncarnation reads the incarnation the previous process on this data
// directory registered (Start, before the first registration). An unusable file is
// logged and ignored: this process then waits out the old session, as Kafka does.
func (b *Broker) loadPreviousIncarnation() {
	rec, err := readRegistrationFile(b.cfg.registrationFilePath(), b.cfg.NodeID)
	if err != nil {
		b.logger.Info("no previous incarnation to name: a restart waits for the old session to expire", "error", err)
		return
	}
	b.previousIncarnation = rec.Incarnation
}

// persistRegistration records this process's registration in the data directory, once
// per broker epoch, after the controller accepted it. A failure only costs the next
// restart the wait for this incarnation's session.
func (b *Broker) persistRegistration(epoch int64) {
	if b.persistedEpoch == epoch {
		return
	}
	rec := registrationRecord{NodeID: b.cfg.NodeID, Incarnation: b.incarnation, BrokerEpoch: epoch}
	if err := writeRegistrationFile(b.cfg.registrationFilePath(), rec); err != nil {
		b.logger.Warn("cannot record the broker registration: the next restart waits for this session to expire", "error", err)
		return
	}
	b.persistedEpoch = epoch
}

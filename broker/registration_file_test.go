package broker

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The registration file round-trips; a missing one names nothing; one of another node,
// or a damaged one, is refused (the restart then waits out the old session).
func TestRegistrationFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), registrationFileName)
	if rec, err := readRegistrationFile(path, 3); err != nil || rec != (registrationRecord{}) {
		t.Fatalf("missing file: %+v, %v", rec, err)
	}
	want := registrationRecord{NodeID: 3, Incarnation: metadata.UuidFromBytes([16]byte{1, 2, 3}), BrokerEpoch: 42}
	if err := writeRegistrationFile(path, want); err != nil {
		t.Fatal(err)
	}
	if got, err := readRegistrationFile(path, 3); err != nil || got != want {
		t.Fatalf("read back %+v, %v; want %+v", got, err, want)
	}
	if _, err := readRegistrationFile(path, 4); !errors.Is(err, errRegistrationFile) {
		t.Fatalf("another node's file: %v", err)
	}
	for name, body := range map[string]string{
		"empty":          "",
		"no version":     "node.id=3\nincarnation.id=" + want.Incarnation.String() + "\nbroker.epoch=1\n",
		"newer version":  "version=1\nnode.id=3\nincarnation.id=" + want.Incarnation.String() + "\nbroker.epoch=1\n",
		"zero uuid":      "version=0\nnode.id=3\nincarnation.id=" + metadata.ZeroUuid.String() + "\nbroker.epoch=1\n",
		"bad uuid":       "version=0\nnode.id=3\nincarnation.id=xyz\nbroker.epoch=1\n",
		"no epoch":       "version=0\nnode.id=3\nincarnation.id=" + want.Incarnation.String() + "\n",
		"duplicate key":  "version=0\nversion=0\nnode.id=3\nincarnation.id=" + want.Incarnation.String() + "\nbroker.epoch=1\n",
		"no equals sign": "version=0\nnode.id 3\n",
		"torn":           "version=0\nnode.id=3\nincarnation.id=" + want.Incarnation.String()[:10],
	} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if rec, err := readRegistrationFile(path, 3); !errors.Is(err, errRegistrationFile) {
			t.Errorf("%s: %+v, %v; want errRegistrationFile", name, rec, err)
		}
	}
}

// Petrel's tagged fields survive the wire: encoded by kmsg with the request and decoded
// into UnknownTags by a decoder that does not know them.
func TestPetrelTagsOnTheWire(t *testing.T) {
	inc := metadata.UuidFromBytes([16]byte{9, 8, 7})
	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.Version, reg.BrokerID = 2, 1
	reg.UnknownTags.Set(previousIncarnationTag, inc[:])
	reg2 := kmsg.NewPtrBrokerRegistrationRequest()
	reg2.Version = 2
	if err := reg2.ReadFrom(reg.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	if got := previousIncarnationOf(reg2); got != inc {
		t.Fatalf("previous incarnation %s, want %s", got, inc)
	}
	if got := previousIncarnationOf(kmsg.NewPtrBrokerRegistrationRequest()); got != metadata.ZeroUuid {
		t.Fatalf("no tag: %s", got)
	}

	peers := []peerRefusal{{BrokerID: 2, BrokerEpoch: 17}, {BrokerID: 5, BrokerEpoch: 1 << 40}}
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.Version, hb.BrokerID, hb.BrokerEpoch = 1, 1, 3
	hb.UnknownTags.Set(refusedPeersTag, encodeRefusedPeers(peers))
	hb2 := kmsg.NewPtrBrokerHeartbeatRequest()
	hb2.Version = 1
	frame := hb.AppendTo(nil)
	if err := hb2.ReadFrom(frame); err != nil {
		t.Fatal(err)
	}
	detachTags(&hb2.UnknownTags)
	clear(frame) // the frame goes back to the pool: the detached tags must not see it
	got, err := refusedPeersOf(hb2)
	if err != nil || len(got) != 2 || got[0] != peers[0] || got[1] != peers[1] {
		t.Fatalf("refused peers %+v, %v; want %+v", got, err, peers)
	}
	for _, bad := range [][]byte{nil, {0x80}, {2, 0, 0, 0, 1}, append(encodeRefusedPeers(peers), 0), {0xff, 0xff, 0x03}} {
		if _, err := decodeRefusedPeers(bad); !errors.Is(err, errBadPetrelTag) {
			t.Errorf("decode %x: %v, want errBadPetrelTag", bad, err)
		}
	}
	if got, err := decodeRefusedPeers(encodeRefusedPeers(nil)); err != nil || len(got) != 0 {
		t.Errorf("empty list: %v, %v", got, err)
	}
}

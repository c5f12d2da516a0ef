package broker

// Start-up checks of the metadata quorum's membership: nothing about it fails silently.
// A --voters list that differs from the quorum the data directory holds is refused
// with the current membership (Kafka's QuorumState refuses a configured voter set that
// differs from its state file), and a node outside --voters with no Raft state and no
// --join is refused at once: nobody would ever add it.

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/raft"
)

// ErrQuorumMembership is a start refused because of the node's quorum membership.
var ErrQuorumMembership = errors.New("broker: quorum membership")

// checkJoinable refuses a node outside --voters that has no Raft state and no --join.
func checkJoinable(cfg *Config, hasState bool) error {
	if hasState || !isObserver(cfg) || len(cfg.JoinAddrs) > 0 {
		return nil
	}
	return fmt.Errorf("%w: node %d is not in --voters %s and has no Raft state, so it can only join an existing cluster: "+
		"pass --join HOST:PORT (a member's Kafka address), or list it in --voters when bootstrapping a new cluster",
		ErrQuorumMembership, cfg.NodeID, formatVoters(cfg.Voters))
}

// checkPersistedVoters refuses a --voters list whose voters (ids and Raft addresses)
// differ from those of the Raft configuration in the data directory, printing that
// configuration. Without --voters nothing is checked.
func checkPersistedVoters(cfg *Config, current raft.Configuration) error {
	if len(cfg.Voters) == 0 {
		return nil
	}
	var persisted []Voter
	for _, s := range current.Servers {
		if s.Suffrage == raft.Voter {
			persisted = append(persisted, Voter{ID: parseServerID(s.ID), Addr: string(s.Address)})
		}
	}
	if formatVoters(persisted) == formatVoters(cfg.Voters) {
		return nil
	}
	return fmt.Errorf("%w: configured voter set --voters %s is different from the voter set in %s: %s. "+
		"Start with --voters %s; the quorum changes with petrel cluster remove-broker and --join (docs/operations.md)",
		ErrQuorumMembership, formatVoters(cfg.Voters), cfg.raftDir(), formatMembership(current), formatVoters(persisted))
}

// formatVoters is voters as --voters takes them, sorted by id.
func formatVoters(voters []Voter) string {
	sorted := slices.Clone(voters)
	slices.SortFunc(sorted, func(a, b Voter) int { return int(a.ID) - int(b.ID) })
	parts := make([]string, len(sorted))
	for i, v := range sorted {
		parts[i] = fmt.Sprintf("%d@%s", v.ID, v.Addr)
	}
	return strings.Join(parts, ",")
}

// formatMembership is a Raft configuration as "voters 0@a,1@b; non-voters 3@d".
func formatMembership(cf raft.Configuration) string {
	var voters, others []Voter
	for _, s := range cf.Servers {
		v := Voter{ID: parseServerID(s.ID), Addr: string(s.Address)}
		if s.Suffrage == raft.Voter {
			voters = append(voters, v)
		} else {
			others = append(others, v)
		}
	}
	out := "voters " + formatVoters(voters)
	if len(others) > 0 {
		out += "; non-voters " + formatVoters(others)
	}
	return out
}

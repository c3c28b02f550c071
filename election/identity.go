package election

import (
	"github.com/coordelect/coordelect/election/core"
)

// Identity describes the local member to the others. It is set once, where
// the Transport is built (membership.Config, electiontest.Network.Join, or
// coordelect.Config, which gives it to both layers), and New reads it from
// the Transport (Transport.Identity): the elector has no copy of its own to
// disagree with what the Transport publishes.
type Identity struct {
	// Name is this member's name, unique in the cluster: its memberlist
	// node name and its election ID (core.Peer.ID). Required.
	Name string
	// Rating is this member's est(S): the live voter with the highest
	// rating leads, ties broken by Name (see docs/algorithms.md). Default
	// 0. Change it at run time with Elector.SetRating, which publishes it
	// through the Transport.
	Rating int64
	// NonVoter makes this member follow the coordinator without ever
	// standing. Default false.
	NonVoter bool
	// Algorithm is the election algorithm, the same on every member.
	// Default core.Bully.
	Algorithm core.Algorithm
	// Payload is an opaque string this member publishes to the others,
	// typically the address of its own service API (Elector.LeaderPayload
	// returns the coordinator's), when the Transport carries payloads
	// (PayloadTransport). Default "".
	Payload string
}

// Peer returns the member as the core ranks it.
func (id Identity) Peer() core.Peer {
	return core.Peer{ID: id.Name, Rating: id.Rating, NonVoter: id.NonVoter}
}

package membership

import (
	"fmt"

	"github.com/coordelect/coordelect/election"
)

var _ election.PayloadTransport = (*Node)(nil)

// Identity returns this member as it publishes itself: Config.Identity,
// with the rating and payload it publishes now (after SetRating and
// SetPayload). election.New reads the elector's identity from it.
func (n *Node) Identity() election.Identity {
	id := n.cfg.Identity
	n.metaMu.Lock()
	defer n.metaMu.Unlock()
	id.Rating, id.Payload = n.meta.Rating, n.meta.Payload
	return id
}

// Payload returns the payload member name publishes (Config.Payload):
// this node's own, or an admitted live member's. ok is false for a member
// that is unknown, departed or refused.
func (n *Node) Payload(name string) (payload string, ok bool) {
	if name == n.cfg.Name {
		n.metaMu.Lock()
		defer n.metaMu.Unlock()
		return n.meta.Payload, true
	}
	return n.table.payload(name)
}

// SetPayload publishes a new payload (see Config.Payload), at most
// MaxPayloadLen bytes. The gossip happens in the background, as for
// SetRating.
func (n *Node) SetPayload(payload string) error {
	if len(payload) > MaxPayloadLen {
		return fmt.Errorf("membership: SetPayload: payload of %d bytes: longer than MaxPayloadLen = %d bytes", len(payload), MaxPayloadLen)
	}
	return n.updateMeta(func(m *meta) { m.Payload = payload })
}

// payload returns an admitted live member's payload.
func (t *table) payload(name string) (string, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	e := t.get(name)
	if e == nil || !e.is(flagAdmitted) {
		return "", false
	}
	return e.payload(), true
}

// StatusMembers lists the members as election.NewHandler's /status shows
// them: this node and every member its memberlist knows, with addresses,
// including those that left or died recently (Members). Pass it to
// election.NewHandler.
func (n *Node) StatusMembers() []election.StatusMember {
	ms := n.Members()
	out := make([]election.StatusMember, 0, len(ms))
	for _, m := range ms {
		out = append(out, election.StatusMember{Name: m.Name, Addr: m.Addr, Rating: m.Rating, Alive: m.Alive})
	}
	return out
}

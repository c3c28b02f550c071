package core

import "errors"

// The host: what the nodes of one driver share. A driver of many nodes
// (a member's named elections, group.Group; a simulated cluster) builds
// them from one Host, whose configuration they read without a copy and
// whose pool of Readies they draw on. A node built alone (NewNode) has a
// copy of the configuration and a Ready of its own.

// Host is what the nodes built from it share: the configuration they run
// with, each with its own ID and roster, and their Readies, each held by
// a node only while it has something in it (readyPool). A Host is not safe for concurrent use: one
// goroutine drives all the nodes built from it, as a Node's owner does.
type Host struct {
	shared
	buffers readyPool
}

// NewHost validates cfg as NewNode does, but for its ID and Roster,
// which each node of the host has its own of (Host.NewNode).
func NewHost(cfg Config) (*Host, error) {
	cfg.setDefaults()
	cfg.ID, cfg.Roster = "", nil
	if err := cfg.validateShared(); err != nil {
		return nil, err
	}
	h := &Host{shared: shared{Config: cfg}}
	h.pool = &h.buffers
	return h, nil
}

// Config returns the configuration the host's nodes run with, defaults
// filled in, with no ID and no Roster (each node has its own).
func (h *Host) Config() Config { return h.shared.Config }

// NewNode returns a node of the host: member id of roster, in state
// sleep, as NewNode returns it for the host's configuration with that ID
// and Roster.
func (h *Host) NewNode(id string, roster *Roster) (*Node, error) {
	n := new(Node)
	if err := h.InitNode(n, id, roster); err != nil {
		return nil, err
	}
	return n, nil
}

// SetClock tells the host's nodes the driver's clock, in ticks, for a
// driver that ticks them together (group.Group): it sets it whenever the
// clock moves, before it calls into them. Their heartbeat rotations then
// number the intervals on that clock, not on each node's own, so the
// rounds of the names a member leads go to the same members in each
// interval (fanout.go). Without it a node numbers them on its own clock.
func (h *Host) SetClock(tick int) { h.clock, h.clocked = tick, true }

// InitNode is NewNode in memory the caller provides (see the package's
// InitNode).
func (h *Host) InitNode(n *Node, id string, roster *Roster) error {
	var errs configErrors
	checkMember(&errs, id, roster)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	n.init(&h.shared, id, roster)
	return nil
}

package core

import (
	"errors"
	"fmt"
)

// The host: what the nodes of one driver share. A driver of many nodes
// (a member's named elections, group.Group; a simulated cluster) builds
// them from one Host, whose configuration they read without a copy and
// whose pool of small message buffers they draw on. A node built alone
// (NewNode) has a copy of the configuration and a buffer of its own.

// Host is what the nodes built from it share: the configuration they run
// with, each with its own ID and roster, and the message buffers of
// their Readies (msgPool). A Host is not safe for concurrent use: one
// goroutine drives all the nodes built from it, as a Node's owner does.
type Host struct {
	shared
	buffers msgPool
}

// shared is what a node reads of its Host: the configuration (defaults
// filled in; ID and Roster are each node's own) and the pool of message
// buffers (nil for a node of its own, which keeps its buffer).
type shared struct {
	Config
	pool *msgPool
}

// msgPool keeps small message buffers (of at most maxIdleMessages) that
// the nodes of a Host have drained, for the next node that sends: a host
// of thousands of nodes that each send a message now and then (a
// follower's ack a heartbeat round) then keeps as many buffers as it has
// nodes sending at once, up to maxPooled, not one per node.
type msgPool struct {
	free [][]Message
}

// maxPooled bounds the buffers a Host keeps.
const maxPooled = 64

// get returns a buffer to append to (nil when the pool has none).
func (p *msgPool) get() []Message {
	k := len(p.free)
	if k == 0 {
		return nil
	}
	b := p.free[k-1]
	p.free[k-1] = nil
	p.free = p.free[:k-1]
	return b
}

// put keeps b, a drained buffer of at most maxIdleMessages, if the pool
// has room; its messages are cleared (a ring's List would stay alive).
func (p *msgPool) put(b []Message) {
	if len(p.free) < maxPooled {
		clear(b)
		p.free = append(p.free, b[:0])
	}
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

// validateShared is validate without the node's own ID and Roster.
func (c *Config) validateShared() error {
	var errs configErrors
	c.checkShared(&errs)
	return errors.Join(errs...)
}

// checkMember: id names a member of roster.
func checkMember(e *configErrors, id string, roster *Roster) {
	if id == "" {
		e.bad("ID", `""`, "must be set")
	}
	if roster == nil {
		e.bad("Roster", "nil", "must be set (NewRoster)")
	} else if id != "" && roster.Index(id) < 0 {
		e.bad("ID", fmt.Sprintf("%q", id), "must be a member of Roster")
	}
}

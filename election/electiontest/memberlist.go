package electiontest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/membership"
	"github.com/coordelect/coordelect/membership/membershiptest"
)

// MemberlistCluster runs members on 127.0.0.1 as a service embeds them:
// each a membership.Node (real memberlist) with an election.Elector on
// top. It is Cluster's twin for the tests and benchmarks that need real
// gossip, and it is safe for concurrent use (members may start from
// several goroutines at once). Real networks have real clocks: it does not
// run inside a synctest bubble.
type MemberlistCluster struct {
	// Net, when set, carries every member's memberlist traffic, so that a
	// test can partition the members or make the network lossy.
	Net *membershiptest.FaultNetwork

	mu      sync.Mutex
	members map[string]*MemberlistMember
	names   []string // running members, in the order they joined
}

// MemberlistMember is one member of a MemberlistCluster: its memberlist
// node and, once Elect has run, its Elector.
type MemberlistMember struct {
	*Member // nil while only the node runs
	Node    *membership.Node
}

// NewMemberlistCluster returns a cluster with no members whose traffic
// runs over net (nil: memberlist's own transport).
func NewMemberlistCluster(net *membershiptest.FaultNetwork) *MemberlistCluster {
	return &MemberlistCluster{Net: net, members: make(map[string]*MemberlistMember)}
}

// Join starts a membership node from mc, on 127.0.0.1 unless mc.BindAddr
// says otherwise, over c.Net when it is set and mc.Transport is not.
func (c *MemberlistCluster) Join(mc membership.Config) (*MemberlistMember, error) {
	if mc.BindAddr == "" || mc.BindAddr == membership.DefaultConfig().BindAddr {
		mc.BindAddr = "127.0.0.1"
	}
	if c.Net != nil && mc.Transport == nil {
		tr, err := c.Net.Listen(mc.Name, mc.BindAddr, mc.BindPort)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", mc.Name, err)
		}
		mc.Transport = tr
	}
	node, err := membership.New(mc)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", mc.Name, err)
	}
	m := &MemberlistMember{Node: node}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.members[mc.Name] = m
	c.names = append(c.names, mc.Name)
	return m, nil
}

// Elect runs an Elector from cfg on m's node (cfg.Transport is set here).
// If it cannot, the node is closed and leaves the cluster.
func (c *MemberlistCluster) Elect(m *MemberlistMember, cfg election.Config) error {
	cfg.Transport = m.Node
	em, err := Run(m.Node.LocalID(), cfg)
	if err != nil {
		c.remove(m.Node.LocalID())
		return errors.Join(fmt.Errorf("node %s: %w", m.Node.LocalID(), err), m.Node.Close())
	}
	c.mu.Lock()
	m.Member = em
	c.mu.Unlock()
	return nil
}

// Start joins a node from mc and runs an Elector from cfg on it.
func (c *MemberlistCluster) Start(mc membership.Config, cfg election.Config) (*MemberlistMember, error) {
	m, err := c.Join(mc)
	if err != nil {
		return nil, err
	}
	return m, c.Elect(m, cfg)
}

// Member returns the running member called name, or nil.
func (c *MemberlistCluster) Member(name string) *MemberlistMember {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.members[name]
}

// Names returns the running members' names, in the order they joined.
func (c *MemberlistCluster) Names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.names)
}

// Electors returns the Members (the Electors) of the running members
// called names (every running one with an Elector when names is empty),
// in that order, for Agree and Describe.
func (c *MemberlistCluster) Electors(names ...string) []*Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(names) == 0 {
		names = c.names
	}
	out := make([]*Member, 0, len(names))
	for _, n := range names {
		if m := c.members[n]; m != nil && m.Member != nil {
			out = append(out, m.Member)
		}
	}
	return out
}

// Crash stops the named members as a crash of them all at once looks to
// the others: first every Elector stops (no hand-off), then every node
// shuts down without leaving. It returns the nodes' errors; how each Run
// ended does not matter to a crash.
func (c *MemberlistCluster) Crash(names ...string) error {
	ms := make([]*MemberlistMember, 0, len(names))
	for _, name := range names {
		if m := c.remove(name); m != nil {
			ms = append(ms, m)
		}
	}
	for _, m := range ms {
		if m.Member != nil {
			_ = m.Halt()
		}
	}
	var errs []error
	for _, m := range ms {
		errs = append(errs, m.Node.Close())
	}
	return errors.Join(errs...)
}

// Leave stops name gracefully: its Elector ends (a coordinator hands off
// first), then its node tells the cluster it leaves, waiting up to
// timeout, and shuts down.
func (c *MemberlistCluster) Leave(name string, timeout time.Duration) error {
	m := c.remove(name)
	if m == nil {
		return nil
	}
	var err error
	if m.Member != nil {
		err = m.Stop()
	}
	return errors.Join(err, m.Node.Leave(timeout), m.Node.Close())
}

// Close crashes every running member.
func (c *MemberlistCluster) Close() error { return c.Crash(c.Names()...) }

func (c *MemberlistCluster) remove(name string) *MemberlistMember {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.members[name]
	delete(c.members, name)
	c.names = slices.DeleteFunc(c.names, func(n string) bool { return n == name })
	return m
}

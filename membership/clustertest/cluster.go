// Package clustertest runs a cluster of real members for tests and
// benchmarks: each a membership.Node (hashicorp/memberlist) on 127.0.0.1
// with an election.Elector on top, as a service embeds them. It is the
// real-memberlist twin of electiontest.Cluster, and runs each Elector as an
// electiontest.Member, so that electiontest.Agree and Describe serve both.
package clustertest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/electiontest"
	"github.com/coordelect/coordelect/membership"
	"github.com/coordelect/coordelect/membership/membershiptest"
)

// Cluster runs members on 127.0.0.1 as a service embeds them: each a
// membership.Node (real memberlist) with an election.Elector on top. It is
// safe for concurrent use (members may start from several goroutines at
// once). Real networks have real clocks: it does not run inside a
// synctest bubble.
type Cluster struct {
	// Net, when set, carries every member's memberlist traffic, so that a
	// test can partition the members or make the network lossy.
	Net *membershiptest.FaultNetwork
	// Wrap, when set, gives the Transport each Elector runs on, from its
	// member's node (a test that loses or delays election messages of
	// some type wraps the node's Send). Default: the node itself.
	Wrap func(*membership.Node) election.Transport

	mu      sync.Mutex
	members map[string]*Member
	names   []string // running members, in the order they joined
}

// Member is one member of a Cluster: its memberlist
// node and, once Elect has run, its Elector.
type Member struct {
	*electiontest.Member // nil while only the node runs
	Node                 *membership.Node
}

// New returns a cluster with no members whose traffic
// runs over net (nil: memberlist's own transport).
func New(net *membershiptest.FaultNetwork) *Cluster {
	return &Cluster{Net: net, members: make(map[string]*Member)}
}

// Join starts a membership node from mc over c.Net when it is set and
// mc.Transport is not. The defaults of membership.DefaultConfig that do not
// suit many members on one host are replaced: BindAddr 0.0.0.0 by
// 127.0.0.1, BindPort 7946 by 0 (a free port; see Node.Addr).
func (c *Cluster) Join(mc membership.Config) (*Member, error) {
	def := membership.DefaultConfig()
	if mc.BindAddr == "" || mc.BindAddr == def.BindAddr {
		mc.BindAddr = "127.0.0.1"
	}
	if mc.BindPort == def.BindPort {
		mc.BindPort = 0
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
	m := &Member{Node: node}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.members[mc.Name] = m
	c.names = append(c.names, mc.Name)
	return m, nil
}

// Elect runs an Elector from cfg on m's node (cfg.Transport is set here).
// If it cannot, the node is closed and leaves the cluster.
func (c *Cluster) Elect(m *Member, cfg election.Config) error {
	cfg.Transport = m.Node
	if c.Wrap != nil {
		cfg.Transport = c.Wrap(m.Node)
	}
	em, err := electiontest.Run(m.Node.LocalID(), cfg)
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
func (c *Cluster) Start(mc membership.Config, cfg election.Config) (*Member, error) {
	m, err := c.Join(mc)
	if err != nil {
		return nil, err
	}
	return m, c.Elect(m, cfg)
}

// Member returns the running member called name, or nil.
func (c *Cluster) Member(name string) *Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.members[name]
}

// Names returns the running members' names, in the order they joined.
func (c *Cluster) Names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.names)
}

// Electors returns the electiontest.Members (the Electors) of the running members
// called names (every running one with an Elector when names is empty),
// in that order, for Agree and Describe.
func (c *Cluster) Electors(names ...string) []*electiontest.Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(names) == 0 {
		names = c.names
	}
	out := make([]*electiontest.Member, 0, len(names))
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
func (c *Cluster) Crash(names ...string) error {
	ms := make([]*Member, 0, len(names))
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
	// Every node at once: a memberlist's Close waits for its sends in
	// flight (up to TCPTimeout each, 10 s with the LAN profile), so closing
	// 64 of them one by one took minutes.
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() { errs[i] = m.Node.Close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Leave stops name gracefully: its Elector ends (a coordinator hands off
// first), then its node tells the cluster it leaves, waiting up to
// timeout, and shuts down.
func (c *Cluster) Leave(name string, timeout time.Duration) error {
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
func (c *Cluster) Close() error { return c.Crash(c.Names()...) }

func (c *Cluster) remove(name string) *Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.members[name]
	delete(c.members, name)
	c.names = slices.DeleteFunc(c.names, func(n string) bool { return n == name })
	return m
}

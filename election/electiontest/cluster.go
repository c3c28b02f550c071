package electiontest

import (
	"errors"
	"fmt"
	"slices"

	"github.com/coordelect/coordelect/election"
)

// Cluster runs Electors on one in-memory Network: the harness of the
// tests that start N members without sockets. It runs inside a
// testing/synctest bubble and in real time alike. Its methods are called
// from one goroutine. Its real-memberlist twin is membership/clustertest.
type Cluster struct {
	// Net is the network the members join; the tests partition it, drop
	// messages on it and announce deaths on it.
	Net *Network
	// Config, when set, completes each member's configuration before
	// election.New (Transport is set already).
	Config func(id election.Identity, cfg *election.Config)

	members map[string]*Member
	names   []string // running members, in the order they started
}

// NewCluster returns a Cluster with no members on a new Network.
func NewCluster() *Cluster {
	return &Cluster{Net: NewNetwork(), members: make(map[string]*Member)}
}

// Start joins the network as id and runs a new Elector for it.
func (c *Cluster) Start(id election.Identity) (*Member, error) {
	tr, err := c.Net.Join(id)
	if err != nil {
		return nil, err
	}
	cfg := election.Config{Transport: tr}
	if c.Config != nil {
		c.Config(id, &cfg)
	}
	m, err := Run(id.Name, cfg)
	if err != nil {
		c.Net.Crash(id.Name)
		return nil, fmt.Errorf("%s: %w", id.Name, err)
	}
	c.members[id.Name] = m
	c.names = append(c.names, id.Name)
	return m, nil
}

// Member returns the running member called name, or nil.
func (c *Cluster) Member(name string) *Member { return c.members[name] }

// Names returns the running members' names, in the order they started.
func (c *Cluster) Names() []string { return slices.Clone(c.names) }

// Members returns the running members called names (every running one
// when names is empty), in that order.
func (c *Cluster) Members(names ...string) []*Member {
	if len(names) == 0 {
		names = c.names
	}
	out := make([]*Member, 0, len(names))
	for _, n := range names {
		out = append(out, c.members[n])
	}
	return out
}

// Crash kills name's process: the network loses it (nobody is told until
// Net.AnnounceDown) and its Run must end with ErrTransportClosed, else
// Crash returns an error.
func (c *Cluster) Crash(name string) error {
	m := c.remove(name)
	c.Net.Crash(name)
	err := m.Wait()
	m.cancel()
	if !errors.Is(err, election.ErrTransportClosed) {
		return fmt.Errorf("%s: Run after crash = %v, want ErrTransportClosed", name, err)
	}
	return nil
}

// Close halts every running member, then closes the network. It returns
// the errors of Runs that did not end cleanly.
func (c *Cluster) Close() error {
	var errs []error
	for _, name := range c.Names() {
		if err := c.remove(name).Halt(); err != nil {
			errs = append(errs, fmt.Errorf("%s: Run = %w after Close", name, err))
		}
	}
	c.Net.Close()
	return errors.Join(errs...)
}

func (c *Cluster) remove(name string) *Member {
	m := c.members[name]
	delete(c.members, name)
	c.names = slices.DeleteFunc(c.names, func(n string) bool { return n == name })
	return m
}

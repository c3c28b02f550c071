package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// errConflict is an action that does not fit the node's state (crashing a
// crashed node, restarting a running one).
var errConflict = errors.New("conflict")

// The actions of the web page. Each runs under c.mu, logs one line and
// adds an entry to the page's event log.

// crash stops node name as a crash would: no hand-off, no leave. The
// others find out through the coordinator heartbeat and memberlist.
func (c *localCluster) crash(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.slot(name)
	if err != nil {
		return err
	}
	p := s.peer.Swap(nil)
	if p == nil {
		return fmt.Errorf("%w: node %s is already down", errConflict, name)
	}
	s.resigned.Store(false)
	c.disrupted("the crash of " + name)
	if err := p.crash(); err != nil {
		c.log.Warn("crashed node did not close cleanly", "node", name, "error", err)
	}
	c.action(name, "crashed "+name+" (no hand-off, no leave)")
	return nil
}

// restart starts node name again under the same name and on the same
// port, with a new boot ID; it rejoins through the other nodes.
func (c *localCluster) restart(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.slot(name)
	if err != nil {
		return err
	}
	if s.peer.Load() != nil {
		return fmt.Errorf("%w: node %s is running", errConflict, name)
	}
	tr, err := c.net.Listen(s.name, "127.0.0.1", s.port)
	if err != nil {
		// Someone took the port: come back on another one. memberlist lets
		// the name move once the old address is dead (DeadNodeReclaimTime).
		c.log.Warn("port taken; restarting on another", "node", name, "port", s.port, "error", err)
		if tr, err = c.net.Listen(s.name, "127.0.0.1", 0); err != nil {
			return fmt.Errorf("node %s: %w", name, err)
		}
		s.setAddr(tr.Addr())
	}
	if err := c.startSlot(s, tr, false); err != nil {
		return err
	}
	c.disrupted("the restart of " + name)
	c.action(name, "restarted "+name)
	return nil
}

// partition splits the cluster in two: minority (by default the agreed
// coordinator and the nodes just before it on the ring, half the cluster
// rounded down) against the rest. It replaces an earlier partition.
func (c *localCluster) partition(minority []string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(minority) == 0 {
		minority = c.defaultMinority()
	}
	for _, name := range minority {
		if _, err := c.slot(name); err != nil {
			return err
		}
	}
	var rest []string
	for _, name := range c.names() {
		if !slices.Contains(minority, name) {
			rest = append(rest, name)
		}
	}
	if len(rest) == 0 {
		return fmt.Errorf("%w: a partition needs a node on each side", errConflict)
	}
	groups := [][]string{slices.Clone(minority), rest}
	c.net.Partition(groups...)
	c.groups.Store(&groups)
	c.disrupted("the partition")
	c.action("", fmt.Sprintf("partitioned: {%s} | {%s}", strings.Join(minority, ","), strings.Join(rest, ",")))
	return nil
}

// defaultMinority is half the cluster, rounded down (at least one node),
// ending at the agreed coordinator (else the last node) on the ring.
func (c *localCluster) defaultMinority() []string {
	names := c.names()
	end := len(names) - 1
	if v := c.view(); v.Agreed {
		end = slices.Index(names, v.Coordinator)
	}
	k := max(1, len(names)/2)
	out := make([]string, 0, k)
	for i := end - k + 1; i <= end; i++ {
		out = append(out, names[(i+len(names))%len(names)])
	}
	return out
}

// heal removes the partition; the two sides merge when they re-join their
// seeds (every second).
func (c *localCluster) heal() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.groups.Load() == nil {
		return fmt.Errorf("%w: the cluster is not partitioned", errConflict)
	}
	c.net.Heal()
	c.groups.Store(nil)
	c.disrupted("the heal")
	c.action("", "healed the partition")
	return nil
}

// resign makes node name hand the coordinator role to the next voter by
// rating (nothing happens when it does not lead).
func (c *localCluster) resign(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, err := c.running(name)
	if err != nil {
		return err
	}
	if !p.el.IsLeader() {
		return fmt.Errorf("%w: node %s is not the coordinator", errConflict, name)
	}
	c.disrupted(name + "'s resignation")
	ctx, cancel := waitCtx()
	defer cancel()
	if err := p.el.Resign(ctx); err != nil {
		return err
	}
	s, _ := c.slot(name)
	s.resigned.Store(true)
	c.action(name, name+" resigned: it hands off to the next voter by rating")
	return nil
}

// setRating gives node name a new rating; the node publishes it and, if
// it now outranks the coordinator, takes over (bully's rule).
func (c *localCluster) setRating(name string, rating int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rate(name, func(int64) int64 { return rating })
}

// moveRating adds delta to node name's rating.
func (c *localCluster) moveRating(name string, delta int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rate(name, func(old int64) int64 { return old + delta })
}

// rate changes node name's rating to next(old); c.mu is held.
func (c *localCluster) rate(name string, next func(old int64) int64) error {
	p, err := c.running(name)
	if err != nil {
		return err
	}
	s, _ := c.slot(name)
	old := s.rating.Load()
	rating := next(old)
	c.disrupted("the rating change of " + name)
	if err := p.el.SetRating(rating); err != nil {
		return err
	}
	s.rating.Store(rating)
	s.resigned.Store(false)
	c.action(name, fmt.Sprintf("rating of %s: %d → %d", name, old, rating))
	return nil
}

// disrupted marks the moment an action (cause) may cost the cluster its
// agreed coordinator, so that the next agreement reports its delay from
// here: from the latest action, so that after a partition and a heal the
// merge is timed from the heal.
func (c *localCluster) disrupted(cause string) {
	c.lostAt.Store(&disruption{at: time.Now(), cause: cause})
}

// action logs a user action on the terminal and on the page.
func (c *localCluster) action(node, text string) {
	c.log.Info(text)
	c.events.addLog(logEntry{Kind: "action", Node: node, Text: text})
}

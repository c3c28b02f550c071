// Package raftcluster runs n hashicorp/raft servers in this process, each
// on its own loopback TCP transport (raft.NewTCPTransport on 127.0.0.1,
// pool 3) with in-memory stores, for the failover driver
// (bench/internal/failover): the peer coordelect is measured against.
package raftcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/coordelect/coordelect/bench/internal/failover"
)

// Options of a cluster.
type Options struct {
	N int
	// HB, if not 0, sets HeartbeatTimeout = ElectionTimeout = HB and
	// LeaderLeaseTimeout = HB/2; 0 keeps raft's DefaultConfig (1 s, 1 s,
	// 500 ms).
	HB time.Duration
	// Timeout bounds each wait for a leader.
	Timeout time.Duration
}

// Cluster is n raft servers. A crashed server keeps its stores, as a
// restarted process keeps its disk. Its methods are called from one
// goroutine.
type Cluster struct {
	opts  Options
	nodes []*server
	// votes counts the vote and pre-vote RPCs every server sent, each
	// counted twice (request and response): raft's election messages.
	votes atomic.Uint64
}

// server is one raft server across its restarts.
type server struct {
	id    raft.ServerID
	addr  raft.ServerAddress // kept across restarts
	logs  *raft.InmemStore   // log and stable store
	snaps *raft.InmemSnapshotStore
	trans *countingTransport
	r     *raft.Raft // nil while crashed
}

// countingTransport is raft's TCP transport, counting the vote RPCs.
type countingTransport struct {
	*raft.NetworkTransport
	votes *atomic.Uint64
}

func (t *countingTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	t.votes.Add(2)
	return t.NetworkTransport.RequestVote(id, target, args, resp)
}

func (t *countingTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	t.votes.Add(2)
	return t.NetworkTransport.RequestPreVote(id, target, args, resp)
}

// Check checks o.
func (o Options) Check() error {
	switch {
	case o.HB < 0 || o.HB > 0 && o.HB < 10*time.Millisecond:
		return fmt.Errorf("-hb %v: want 0 (raft's defaults) or at least 10ms", o.HB)
	case o.Timeout <= 0:
		return fmt.Errorf("-timeout %v: want more than 0", o.Timeout)
	}
	return nil
}

// HBName names the heartbeat setting: "default" or the -hb duration.
func (o Options) HBName() string {
	if o.HB == 0 {
		return "default"
	}
	return o.HB.String()
}

// HeartbeatPeriod is how often a raft leader sends heartbeats with
// options o: a random time between HeartbeatTimeout/10 and twice that.
func (o Options) HeartbeatPeriod() time.Duration {
	return raftConfig(o.HB, "x").HeartbeatTimeout / 10
}

// raftConfig is raft's DefaultConfig, with hb applied.
func raftConfig(hb time.Duration, id raft.ServerID) *raft.Config {
	conf := raft.DefaultConfig()
	conf.LocalID = id
	conf.Logger = hclog.NewNullLogger()
	if hb > 0 {
		conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = hb, hb, hb/2
	}
	return conf
}

// listen opens s's transport on its address (a free port the first time).
func (c *Cluster) listen(s *server) error {
	bind := string(s.addr)
	if bind == "" {
		bind = "127.0.0.1:0"
	}
	t, err := raft.NewTCPTransport(bind, nil, 3, 10*time.Second, io.Discard)
	if err != nil {
		return fmt.Errorf("server %s: %w", s.id, err)
	}
	s.trans, s.addr = &countingTransport{t, &c.votes}, t.LocalAddr()
	return nil
}

// Start listens on n ports, bootstraps every server with the same
// configuration, starts them and waits for a leader they all report.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	c := &Cluster{opts: o}
	var servers []raft.Server
	for i := range o.N {
		s := &server{id: raft.ServerID(strconv.Itoa(i + 1)), logs: raft.NewInmemStore(), snaps: raft.NewInmemSnapshotStore()}
		if err := c.listen(s); err != nil {
			c.Stop()
			return nil, err
		}
		c.nodes = append(c.nodes, s)
		servers = append(servers, raft.Server{ID: s.id, Address: s.addr})
	}
	for _, s := range c.nodes {
		conf := raftConfig(o.HB, s.id)
		err := raft.BootstrapCluster(conf, s.logs, s.logs, s.snaps, s.trans, raft.Configuration{Servers: servers})
		if err == nil {
			s.r, err = raft.NewRaft(conf, nopFSM{}, s.logs, s.logs, s.snaps, s.trans)
		}
		if err != nil {
			c.Stop()
			return nil, fmt.Errorf("server %s: %w", s.id, err)
		}
	}
	if _, err := c.WaitAgreement(ctx, ""); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) find(id string) (*server, error) {
	for _, s := range c.nodes {
		if string(s.id) == id {
			return s, nil
		}
	}
	return nil, fmt.Errorf("no server %q", id)
}

// TakeOut shuts the server down without a hand-off (raft's Shutdown does
// not step down or tell anyone) and closes its transport.
func (c *Cluster) TakeOut(_ context.Context, id string) error {
	s, err := c.find(id)
	if err != nil {
		return err
	}
	return s.crash()
}

func (s *server) crash() error {
	err := s.r.Shutdown().Error()
	s.r = nil
	return errors.Join(err, s.trans.Close())
}

// BringBack restarts the server on its address with its stores and waits
// until all n agree on a leader.
func (c *Cluster) BringBack(ctx context.Context, id string) error {
	s, err := c.find(id)
	if err != nil {
		return err
	}
	if err := c.listen(s); err != nil {
		return err
	}
	r, err := raft.NewRaft(raftConfig(c.opts.HB, s.id), nopFSM{}, s.logs, s.logs, s.snaps, s.trans)
	if err != nil {
		_ = s.trans.Close()
		return fmt.Errorf("server %s: %w", s.id, err)
	}
	s.r = r
	_, err = c.WaitAgreement(ctx, "")
	return err
}

// Stop crashes every running server.
func (c *Cluster) Stop() {
	for _, s := range c.nodes {
		if s.r != nil {
			_ = s.crash()
		} else if s.trans != nil {
			_ = s.trans.Close()
		}
	}
}

// Leader names the leader every running server reports, which says it
// leads.
func (c *Cluster) Leader() (string, error) {
	if l, ok := c.agreed(); ok {
		return string(l.id), nil
	}
	return "", errors.New("no agreed leader")
}

// agreed reports whether every running server reports the same leader and
// that leader says it leads; it names the leader.
func (c *Cluster) agreed() (*server, bool) {
	var leader raft.ServerID
	for _, s := range c.nodes {
		if s.r == nil {
			continue
		}
		_, id := s.r.LeaderWithID()
		if id == "" || leader != "" && id != leader {
			return nil, false
		}
		leader = id
	}
	for _, s := range c.nodes {
		if s.id == leader && s.r != nil && s.r.State() == raft.Leader {
			return s, true
		}
	}
	return nil, false
}

// Elections is the highest term any running server is in: it grows with
// every election.
func (c *Cluster) Elections() uint64 {
	var t uint64
	for _, s := range c.nodes {
		if s.r != nil {
			t = max(t, s.r.CurrentTerm())
		}
	}
	return t
}

// Messages counts the vote and pre-vote RPCs sent, requests and responses.
func (c *Cluster) Messages() (uint64, bool) { return c.votes.Load(), true }

// WaitAgreement polls until the running servers agree on a leader other
// than not ("" for any) and returns when that happened.
func (c *Cluster) WaitAgreement(ctx context.Context, not string) (time.Time, error) {
	return failover.Poller(ctx, c.opts.Timeout, func(time.Time) bool {
		l, ok := c.agreed()
		return ok && string(l.id) != not
	}, func() string { return "no agreed leader" })
}

// nopFSM is a state machine that keeps nothing: the bench only elects.
type nopFSM struct{}

func (nopFSM) Apply(*raft.Log) any                 { return nil }
func (nopFSM) Snapshot() (raft.FSMSnapshot, error) { return nopSnapshot{}, nil }
func (nopFSM) Restore(rc io.ReadCloser) error      { return rc.Close() }

type nopSnapshot struct{}

func (nopSnapshot) Persist(sink raft.SnapshotSink) error { return sink.Close() }
func (nopSnapshot) Release()                             {}

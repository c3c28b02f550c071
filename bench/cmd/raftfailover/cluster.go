package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// cluster is n hashicorp/raft servers in this process, each on its own
// loopback TCP transport with in-memory stores. A crashed server keeps its
// stores, as a restarted process keeps its disk.
type cluster struct {
	opts  options
	log   hclog.Logger
	nodes []*server
}

// server is one raft server across its restarts.
type server struct {
	id    raft.ServerID
	addr  raft.ServerAddress // kept across restarts
	logs  *raft.InmemStore   // log and stable store
	snaps *raft.InmemSnapshotStore
	trans *raft.NetworkTransport
	r     *raft.Raft // nil while crashed
}

// config is raft's DefaultConfig, with -hb applied.
func (c *cluster) config(id raft.ServerID) *raft.Config {
	conf := raft.DefaultConfig()
	conf.LocalID = id
	conf.Logger = hclog.NewNullLogger()
	if d := c.opts.hb; d > 0 {
		conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = d, d, d/2
	}
	return conf
}

// listen opens s's transport on its address (a free port the first time).
func (s *server) listen() error {
	bind := string(s.addr)
	if bind == "" {
		bind = "127.0.0.1:0"
	}
	t, err := raft.NewTCPTransport(bind, nil, 3, 10*time.Second, io.Discard)
	if err != nil {
		return fmt.Errorf("server %s: %w", s.id, err)
	}
	s.trans, s.addr = t, t.LocalAddr()
	return nil
}

// start listens on n ports, bootstraps every server with the same
// configuration, starts them and waits for a leader they all report.
func (c *cluster) start(ctx context.Context) error {
	var servers []raft.Server
	for i := range c.opts.n {
		s := &server{id: raft.ServerID(strconv.Itoa(i + 1)), logs: raft.NewInmemStore(), snaps: raft.NewInmemSnapshotStore()}
		if err := s.listen(); err != nil {
			c.stop()
			return err
		}
		c.nodes = append(c.nodes, s)
		servers = append(servers, raft.Server{ID: s.id, Address: s.addr})
	}
	for _, s := range c.nodes {
		conf := c.config(s.id)
		err := raft.BootstrapCluster(conf, s.logs, s.logs, s.snaps, s.trans, raft.Configuration{Servers: servers})
		if err == nil {
			s.r, err = raft.NewRaft(conf, nopFSM{}, s.logs, s.logs, s.snaps, s.trans)
		}
		if err != nil {
			c.stop()
			return fmt.Errorf("server %s: %w", s.id, err)
		}
	}
	_, _, err := c.waitAgreement(ctx, nil)
	return err
}

// crash shuts s down without a hand-off (raft's Shutdown does not step
// down or tell anyone) and closes its transport.
func (s *server) crash() error {
	err := s.r.Shutdown().Error()
	s.r = nil
	return errors.Join(err, s.trans.Close())
}

// restart brings s back on its address with its stores.
func (c *cluster) restart(s *server) error {
	if err := s.listen(); err != nil {
		return err
	}
	r, err := raft.NewRaft(c.config(s.id), nopFSM{}, s.logs, s.logs, s.snaps, s.trans)
	if err != nil {
		_ = s.trans.Close()
		return fmt.Errorf("server %s: %w", s.id, err)
	}
	s.r = r
	return nil
}

// stop crashes every running server.
func (c *cluster) stop() {
	for _, s := range c.nodes {
		if s.r != nil {
			_ = s.crash()
		} else if s.trans != nil {
			_ = s.trans.Close()
		}
	}
}

// agreed reports whether every running server reports the same leader and
// that leader says it leads; it names the leader.
func (c *cluster) agreed() (*server, bool) {
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

// maxTerm is the highest term any running server is in.
func (c *cluster) maxTerm() uint64 {
	var t uint64
	for _, s := range c.nodes {
		if s.r != nil {
			t = max(t, s.r.CurrentTerm())
		}
	}
	return t
}

// poll is how often the bench looks at the servers while it waits.
const poll = time.Millisecond

// waitAgreement polls until the running servers agree on a leader other
// than not (may be nil) and returns it and when that happened.
func (c *cluster) waitAgreement(ctx context.Context, not *server) (*server, time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.timeout)
	defer cancel()
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		if l, ok := c.agreed(); ok && l != not {
			return l, time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return nil, time.Time{}, fmt.Errorf("no agreed leader: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// nopFSM is a state machine that keeps nothing: the bench only elects.
type nopFSM struct{}

func (nopFSM) Apply(*raft.Log) any                 { return nil }
func (nopFSM) Snapshot() (raft.FSMSnapshot, error) { return nopSnapshot{}, nil }
func (nopFSM) Restore(rc io.ReadCloser) error      { return rc.Close() }

type nopSnapshot struct{}

func (nopSnapshot) Persist(sink raft.SnapshotSink) error { return sink.Close() }
func (nopSnapshot) Release()                             {}

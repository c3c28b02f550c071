package membership

import (
	"errors"
	"io"
	"log"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/internal/testport"
)

// shared is the election configuration of the running cluster in the
// compatibility tests.
func shared(c *Config) {
	c.SetElection(election.DefaultConfig())
}

// A newcomer whose shared election settings differ from the running
// cluster's is refused at join: New returns an *IncompatibleError naming
// the field and both values, the seed counts the refusal, and the cluster
// keeps its coordinator and term.
func TestIncompatibleMemberRefused(t *testing.T) {
	checkLeaks(t)
	vs, term := voters(t, 3, shared)
	for _, c := range []struct {
		field, ours, theirs string
		change              func(*Config)
	}{
		{"Algorithm", "bully", "ring", func(c *Config) { c.Algorithm = core.Ring }},
		{"QuorumSize", "0", "3", func(c *Config) { c.QuorumSize = 3 }},
		{"HeartbeatInterval", "50ms", "100ms", func(c *Config) { c.HeartbeatInterval = 100 * time.Millisecond }},
		{"HeartbeatMisses", "3", "5", func(c *Config) { c.HeartbeatMisses = 5 }},
	} {
		before := vs[0].Stats().RefusedIncompatible
		cfg := testConfig("n9")
		cfg.SetElection(election.DefaultConfig())
		cfg.Rating = 99
		c.change(&cfg)
		cfg.Seeds = []string{vs[0].Addr()}
		n, err := New(cfg)
		if err == nil {
			_ = n.Close()
			t.Fatalf("%s: New accepted an incompatible member", c.field)
		}
		var inc *IncompatibleError
		if !errors.As(err, &inc) || !errors.Is(err, ErrIncompatible) || !inc.Self {
			t.Fatalf("%s: New = %v, want an *IncompatibleError", c.field, err)
		}
		// Seen from the newcomer: the seed's values are "theirs".
		if inc.Field != c.field || inc.Theirs != c.ours || inc.Ours != c.theirs {
			t.Errorf("%s: %+v", c.field, inc)
		}
		if !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: error %q does not name the field", c.field, err)
		}
		if !waitUntil(waitTimeout, func() bool { return vs[0].Stats().RefusedIncompatible > before }) {
			t.Errorf("%s: the seed did not count the refusal", c.field)
		}
	}
	steady(t, vs, "n3", term, time.Second)
	if ms := vs[0].Members(); len(ms) != 3 {
		t.Fatalf("members: %+v", ms)
	}
}

// A member of another protocol version (a plain memberlist member whose
// metadata starts with version 3) is refused: its join's merge, then its
// gossip (the alive delegate). A plain memberlist member merges the
// seed's state whatever the seed thinks; a coordelect joiner would refuse
// too (TestIncompatibleMemberRefused).
func TestOtherProtocolVersionRefused(t *testing.T) {
	checkLeaks(t)
	vs, term := voters(t, 3, nil)
	n1 := vs[0]
	mc := memberlist.DefaultLocalConfig()
	mc.Name, mc.BindAddr, mc.BindPort, mc.AdvertisePort = "future", "127.0.0.1", 0, 0
	mc.Logger = log.New(io.Discard, "", 0)
	mc.Delegate = metaDelegate{ProtocolVersion + 1}
	ml, err := memberlist.Create(mc)
	if err != nil {
		t.Fatal(err)
	}
	defer ml.Shutdown()
	if _, err := ml.Join([]string{n1.Addr()}); err != nil {
		t.Fatal(err)
	}
	if !waitUntil(waitTimeout, func() bool { return n1.Stats().RefusedIncompatible == 1 }) {
		t.Fatalf("stats %+v", n1.Stats())
	}
	if waitUntil(500*time.Millisecond, func() bool { return len(n1.Members()) != 3 }) {
		t.Fatalf("members: %+v", n1.Members())
	}
	steady(t, vs, "n3", term, time.Second)
}

// metaDelegate is a memberlist.Delegate that publishes fixed metadata.
type metaDelegate []byte

func (d metaDelegate) NodeMeta(int) []byte           { return d }
func (metaDelegate) NotifyMsg([]byte)                {}
func (metaDelegate) GetBroadcasts(int, int) [][]byte { return nil }
func (metaDelegate) LocalState(bool) []byte          { return nil }
func (metaDelegate) MergeRemoteState([]byte, bool)   {}

// A newcomer with another key (and the highest rating) cannot start: New
// returns a *KeyMismatchError naming Config.SecretKey and the seed. The
// seed reports the mismatch (counted, and in its readiness), and the
// running cluster keeps its coordinator and term.
func TestKeyMismatchReported(t *testing.T) {
	checkLeaks(t)
	key := func(b byte) []byte { k := make([]byte, 16); k[0] = b; return k }
	vs, term := voters(t, 3, func(c *Config) { c.SecretKey = key(1) })
	n1 := vs[0]
	c2 := testConfig("n9")
	c2.SecretKey, c2.Seeds, c2.Rating = key(2), []string{n1.Addr()}, 99
	n2, err := New(c2)
	var km *KeyMismatchError
	if !errors.As(err, &km) || km.Seed != n1.Addr() {
		if n2 != nil {
			_ = n2.Close()
		}
		t.Fatalf("New(n9) with another key: %v, want a *KeyMismatchError for seed %s", err, n1.Addr())
	}
	if !waitUntil(waitTimeout, func() bool { return n1.Stats().KeyMismatch > 0 }) {
		t.Fatalf("the seed saw no key mismatch: %+v", n1.Stats())
	}
	steady(t, vs, "n3", term, time.Second)
}

// A member whose seed was not up at its start, and then comes up with
// another key, fails with a *KeyMismatchError at its next re-join: it has
// never joined, so its key is not the cluster's.
func TestKeyMismatchOnRejoin(t *testing.T) {
	checkLeaks(t)
	key := func(b byte) []byte { k := make([]byte, 16); k[0] = b; return k }
	port := testport.Free(t)
	c2 := testConfig("n2")
	c2.SecretKey, c2.Seeds, c2.RejoinInterval = key(2), []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}, 100*time.Millisecond
	n2 := start(t, c2)
	if err := n2.Err(); err != nil {
		t.Fatalf("an unreachable seed is not an error: %v", err)
	}
	c1 := testConfig("n1")
	c1.SecretKey, c1.BindPort = key(1), port
	start(t, c1)
	var km *KeyMismatchError
	if !waitUntil(waitTimeout, func() bool { return errors.As(n2.Err(), &km) }) {
		t.Fatalf("n2.Err() = %v, want a *KeyMismatchError once the seed answers", n2.Err())
	}
}

// Readiness tells "alone" (seeds unreachable), "waiting for expected
// members" and "no quorum" apart from ready; JoinProblem is the "alone"
// case only.
func TestReadinessReasons(t *testing.T) {
	checkLeaks(t)
	cfg := testConfig("n2")
	cfg.QuorumSize, cfg.Seeds = 3, []string{"127.0.0.1:1"}
	n2 := start(t, cfg)
	if why := n2.Readiness().Reason(0); !strings.HasPrefix(why, "alone: no seed reachable") || n2.JoinProblem() != why {
		t.Fatalf("seed unreachable: reason %q, join problem %q", why, n2.JoinProblem())
	}
	c1 := testConfig("n1")
	c1.QuorumSize = 3
	n1 := start(t, c1)
	if _, err := n2.Join(n1.Addr()); err != nil {
		t.Fatal(err)
	}
	n2.waitPeerEvents(t, "n1", "up:n1/0")
	r := n2.Readiness()
	if r.Voters != 2 || r.Reason(3) != "waiting for expected members: 2 of 3 voters visible" || r.Reason(0) != "" || n2.JoinProblem() != "" {
		t.Fatalf("two of three: %+v: %q, %q, join problem %q", r, r.Reason(3), r.Reason(0), n2.JoinProblem())
	}
	n1.stop(t)
	n2.waitPeerEvents(t, "n1", "down:n1")
	if why := n2.Readiness().Reason(0); why != "no quorum: 1 of 3 voters visible, 2 needed" {
		t.Fatalf("alone after a join: reason %q", why)
	}
}

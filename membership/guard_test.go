package membership

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"

	"github.com/coordelect/coordelect/election"
)

// A second process under the coordinator's name, with the highest rating,
// joining through the coordinator itself or through another member: New
// refuses it with an error that names the name and both addresses, the
// member it reached counts the refusal, and the running cluster keeps its
// coordinator and term.
func TestDuplicateNameRefusedAtJoin(t *testing.T) {
	checkLeaks(t)
	vs, term := voters(t, 3, nil)
	for i, via := range []*voter{vs[2], vs[0]} {
		before := via.Stats().RefusedDuplicateName
		cfg := testConfig("n3")
		cfg.Rating, cfg.Seeds = 99, []string{via.Addr()}
		n, err := New(cfg)
		if err == nil {
			_ = n.Close()
			t.Fatalf("join %d through %s: New accepted a second n3", i, via.LocalID())
		}
		var taken *NameTakenError
		if !errors.As(err, &taken) || !errors.Is(err, ErrNameTaken) {
			t.Fatalf("join through %s: New = %v, want a *NameTakenError", via.LocalID(), err)
		}
		if !taken.Self || taken.Name != "n3" || taken.Incumbent != vs[2].Addr() || taken.Newcomer == "" || taken.Newcomer == taken.Incumbent {
			t.Fatalf("join through %s: %+v", via.LocalID(), taken)
		}
		for _, s := range []string{`"n3"`, taken.Incumbent, taken.Newcomer} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("error %q does not name %s", err, s)
			}
		}
		if !waitUntil(waitTimeout, func() bool { return via.Stats().RefusedDuplicateName > before }) {
			t.Errorf("%s did not count the refusal: %+v", via.LocalID(), via.Stats())
		}
	}
	steady(t, vs, "n3", term, time.Second)
	for _, v := range vs {
		for _, m := range v.Members() {
			if m.Name == "n3" && m.Addr != vs[2].Addr() {
				t.Fatalf("%s lists the refused n3: %+v", v.LocalID(), m)
			}
		}
	}
}

// Two processes named n3 that met only after both had started (the second
// ran alone, then a join brought them together, from either side): the
// later one yields: it reports the clash through Err, closes Events, so
// its elector stops leading and Run returns the error, and shuts
// memberlist down. The running cluster keeps its term.
func TestDuplicateNameFoundAfterJoin(t *testing.T) {
	for _, fromCluster := range []bool{false, true} {
		name := map[bool]string{false: "newcomer joins", true: "cluster joins"}[fromCluster]
		t.Run(name, func(t *testing.T) {
			checkLeaks(t)
			vs, term := voters(t, 3, nil)
			cfg := testConfig("n3")
			cfg.Rating = 99
			dup := startVoter(t, cfg)
			if !waitUntil(waitTimeout, dup.el.IsLeader) {
				t.Fatal("the lone duplicate never led itself")
			}
			var err error
			if fromCluster {
				_, err = vs[0].Join(dup.Addr())
			} else {
				_, err = dup.Join(vs[0].Addr())
			}
			if err == nil {
				t.Fatal("the join succeeded")
			}
			var runErr error
			select {
			case runErr = <-dup.done:
			case <-time.After(waitTimeout):
				t.Fatal("the duplicate's elector is still running")
			}
			var taken *NameTakenError
			if !errors.As(runErr, &taken) || !errors.Is(runErr, election.ErrTransportClosed) {
				t.Fatalf("Run = %v, want ErrTransportClosed wrapping a *NameTakenError", runErr)
			}
			if !taken.Self || taken.Incumbent != vs[2].Addr() || taken.Newcomer != dup.Addr() || !errors.Is(dup.Err(), ErrNameTaken) {
				t.Fatalf("Run = %+v, Err = %v", taken, dup.Err())
			}
			if err := dup.Leave(time.Second); !errors.Is(err, ErrClosed) || !errors.Is(err, ErrNameTaken) {
				t.Errorf("Leave after the clash = %v, want ErrClosed wrapping ErrNameTaken", err)
			}
			dup.done <- runErr // for the cleanup
			if dup.el.IsLeader() {
				t.Fatal("the duplicate still leads")
			}
			steady(t, vs, "n3", term, time.Second)
		})
	}
}

// TestGuardLiveMembers: while New runs, topVoter gives the highest-ranked
// live voter (non-voters, members with bad metadata and departed members
// aside); checkName gives the address that holds each name, after the
// start as before.
func TestGuardLiveMembers(t *testing.T) {
	tb := newTable("self", meta{Boot: 1}, time.Minute, hclog.NewNullLogger(), &counters{})
	g := newGuard("self", meta{Boot: 1}, tb, hclog.NewNullLogger(), &counters{}, func(error) {})
	node := func(name string, port uint16, m []byte) *memberlist.Node {
		return &memberlist.Node{Name: name, Addr: net.IPv4(127, 0, 0, 1), Port: port, Meta: m}
	}
	g.joined(node("a", 1, meta{Rating: 5, Boot: 2}.encode()))
	g.joined(node("b", 2, meta{Rating: 9, Boot: 2, NonVoter: true}.encode()))
	g.joined(node("c", 3, []byte{0xff}))
	g.joined(node("d", 4, meta{Rating: 5, Boot: 2}.encode())) // ties with a: the greater ID ranks higher
	if got := g.topVoter(); got != "127.0.0.1:4" {
		t.Fatalf("topVoter %q, want d's 127.0.0.1:4", got)
	}
	g.left(node("d", 4, nil))
	if got := g.topVoter(); got != "127.0.0.1:1" {
		t.Fatalf("topVoter after d left %q, want a's 127.0.0.1:1", got)
	}
	g.joined(node("a", 1, meta{Rating: 5, Boot: 2, NonVoter: true}.encode())) // a becomes a non-voter
	if got := g.topVoter(); got != "" {
		t.Fatalf("topVoter with no live voter %q", got)
	}
	g.started() // only New asks topVoter: the ratings go
	g.joined(node("e", 5, meta{Rating: 7, Boot: 2}.encode()))
	if got := g.topVoter(); got != "" || g.voters != nil {
		t.Fatalf("topVoter after the start %q, voters %v", got, g.voters)
	}
	if err := g.checkName(node("a", 1, nil)); err != nil {
		t.Fatalf("a at its own address refused: %v", err)
	}
	a16 := node("a", 1, nil)
	a16.Addr = net.IPv4(127, 0, 0, 1).To16() // the same address in its 16-byte form
	if err := g.checkName(a16); err != nil {
		t.Fatalf("a at its own address, 16 bytes, refused: %v", err)
	}
	var taken *NameTakenError
	if err := g.checkName(node("a", 7, nil)); !errors.As(err, &taken) || taken.Incumbent != "127.0.0.1:1" || taken.Newcomer != "127.0.0.1:7" {
		t.Fatalf("a second a at another address: %v", err)
	}
	a6 := node("a", 1, nil)
	a6.Addr = net.ParseIP("::1")
	if err := g.checkName(a6); !errors.As(err, &taken) || taken.Newcomer != "[::1]:1" {
		t.Fatalf("a second a at an IPv6 address: %v", err)
	}
	if err := g.checkName(node("d", 7, nil)); err != nil {
		t.Fatalf("the name of a departed member refused: %v", err)
	}
}

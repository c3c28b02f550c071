package election_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/electiontest"
)

// publishing is a Transport that publishes payloads, as membership.Node
// does.
type publishing struct {
	*electiontest.Transport
	payloads map[string]string
}

func (p *publishing) Payload(id string) (string, bool) {
	v, ok := p.payloads[id]
	return v, ok
}

// TestIdentityFromTransport: the Elector runs as the member its Transport
// describes (election.Config has no identity of its own to disagree with):
// Status reports the Transport's rating, non-voter flag and algorithm, and
// the core ranks the member by them.
func TestIdentityFromTransport(t *testing.T) {
	for _, id := range []election.Identity{
		{Name: "a"},
		{Name: "b", Rating: 7, Algorithm: core.Ring},
		{Name: "c", Rating: -3, NonVoter: true, Algorithm: core.Peterson},
	} {
		e, err := election.New(election.Config{Transport: electiontest.NewNetwork().MustJoin(id)})
		if err != nil {
			t.Fatal(err)
		}
		st := e.Status()
		if st.ID != id.Name || st.Rating != id.Rating || st.NonVoter != id.NonVoter || st.Algorithm != id.Algorithm {
			t.Errorf("%s: Status = %+v, want the Transport's identity %+v", id.Name, st, id)
		}
		if len(st.Members) != 1 || st.Members[0].Rating != id.Rating || st.Members[0].NonVoter != id.NonVoter {
			t.Errorf("%s: members %+v", id.Name, st.Members)
		}
	}
}

// TestLeaderPayload: LeaderPayload gives the payload the coordinator
// publishes, and nothing while none is known or the Transport has none.
func TestLeaderPayload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &publishing{Transport: electiontest.NewNetwork().MustJoin(election.Identity{Name: "n"}),
			payloads: map[string]string{"n": "10.0.0.1:8080"}}
		e, err := election.New(election.Config{Transport: tr})
		if err != nil {
			t.Fatal(err)
		}
		if l, p := e.LeaderPayload(); l.Known() || p != "" {
			t.Errorf("before any election: %v, %q", l, p)
		}
		if _, ok := e.Payload("other"); ok {
			t.Error("Payload of an unknown member reported")
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		sub := e.Subscribe()
		go func() { done <- e.Run(ctx) }()
		for l := range sub.C {
			if l.IsSelf {
				break
			}
		}
		if l, p := e.LeaderPayload(); l.Coordinator != "n" || p != "10.0.0.1:8080" {
			t.Errorf("LeaderPayload while leading = %v, %q", l, p)
		}
		cancel()
		<-done
	})
	plain, err := election.New(election.Config{Transport: electiontest.NewNetwork().MustJoin(election.Identity{Name: "m"})})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := plain.Payload("m"); ok {
		t.Error("Payload reported by a Transport without payloads")
	}
}

package election_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/electiontest"
)

// publishing is a Transport that publishes an identity and payloads, as
// membership.Node does.
type publishing struct {
	*electiontest.Transport
	rating   int64
	nonVoter bool
	alg      string
	payloads map[string]string
}

func (p *publishing) LocalIdentity() (int64, bool, string) { return p.rating, p.nonVoter, p.alg }

func (p *publishing) Payload(id string) (string, bool) {
	v, ok := p.payloads[id]
	return v, ok
}

// TestIdentityMismatchRefused: New refuses a Config whose rating,
// non-voter flag or algorithm differ from what the Transport publishes,
// naming the field and both values; equal values, and a transport that
// publishes no algorithm, are accepted.
func TestIdentityMismatchRefused(t *testing.T) {
	tests := []struct {
		name string
		tr   publishing
		cfg  election.Config
		want []string // substrings of the error; none: accepted
	}{
		{"equal", publishing{rating: 7, alg: "ring"}, election.Config{Rating: 7, Algorithm: core.Ring}, nil},
		{"no algorithm published", publishing{rating: 7}, election.Config{Rating: 7, Algorithm: core.Peterson}, nil},
		{"rating", publishing{rating: 0}, election.Config{Rating: 7},
			[]string{"Config.Rating = 7 but the Transport publishes 0"}},
		{"non-voter on the elector only", publishing{}, election.Config{NonVoter: true},
			[]string{"Config.NonVoter = true but the Transport publishes false"}},
		{"algorithm and rating", publishing{rating: 1, alg: "bully"}, election.Config{Rating: 2, Algorithm: core.Ring},
			[]string{"Config.Rating = 2 but the Transport publishes 1", `Config.Algorithm = ring but the Transport publishes "bully"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := tc.tr
			tr.Transport = electiontest.NewNetwork().MustJoin(core.Peer{ID: "n"})
			tc.cfg.Transport = &tr
			_, err := election.New(tc.cfg)
			if vErr := tc.cfg.Validate(); (vErr == nil) != (err == nil) {
				t.Errorf("Validate = %v, New = %v: they disagree", vErr, err)
			}
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("New = %v, want accepted", err)
				}
				return
			}
			if err == nil {
				t.Fatal("New accepted a mismatch")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestLeaderPayload: LeaderPayload gives the payload the coordinator
// publishes, and nothing while none is known or the Transport has none.
func TestLeaderPayload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &publishing{Transport: electiontest.NewNetwork().MustJoin(core.Peer{ID: "n"}),
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
	plain, err := election.New(election.Config{Transport: electiontest.NewNetwork().MustJoin(core.Peer{ID: "m"})})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := plain.Payload("m"); ok {
		t.Error("Payload reported by a Transport without payloads")
	}
}

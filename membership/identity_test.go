package membership

import (
	"strings"
	"testing"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
)

// TestPayloadGossiped: a member's payload reaches the others in its
// metadata, SetPayload publishes a new one, and Members lists it;
// departed or unknown members have none.
func TestPayloadGossiped(t *testing.T) {
	checkLeaks(t)
	ms := cluster(t, 2, func(c *Config) { c.Payload = "http://" + c.Name + ":8080" })
	if p, ok := ms[0].Payload("n2"); !ok || p != "http://n2:8080" {
		t.Errorf("n1 sees n2's payload %q, %v", p, ok)
	}
	if p, ok := ms[1].Payload("n2"); !ok || p != "http://n2:8080" {
		t.Errorf("n2's own payload %q, %v", p, ok)
	}
	if _, ok := ms[0].Payload("n9"); ok {
		t.Error("payload of an unknown member")
	}
	if err := ms[1].SetPayload("http://n2:9090"); err != nil {
		t.Fatal(err)
	}
	if !waitUntil(waitTimeout, func() bool { p, _ := ms[0].Payload("n2"); return p == "http://n2:9090" }) {
		p, _ := ms[0].Payload("n2")
		t.Fatalf("n1 sees n2's payload %q after SetPayload, want http://n2:9090", p)
	}
	for _, m := range ms[0].Members() {
		if m.Name == "n2" && m.Payload != "http://n2:9090" {
			t.Errorf("Members: n2's payload %q", m.Payload)
		}
	}
	if err := ms[1].SetPayload(strings.Repeat("x", MaxPayloadLen+1)); err == nil {
		t.Error("SetPayload accepted a payload over MaxPayloadLen")
	}
	if err := ms[1].Close(); err != nil {
		t.Fatal(err)
	}
	if !waitUntil(waitTimeout, func() bool { _, ok := ms[0].Payload("n2"); return !ok }) {
		t.Error("payload of a departed member still reported")
	}
}

// TestPayloadTooLong: Validate refuses a payload over MaxPayloadLen.
func TestPayloadTooLong(t *testing.T) {
	c := testConfig("n1")
	c.Payload = strings.Repeat("x", MaxPayloadLen)
	if err := c.Validate(); err != nil {
		t.Fatalf("payload of MaxPayloadLen bytes refused: %v", err)
	}
	c.Payload += "x"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "Config.Payload") {
		t.Errorf("Validate = %v, want an error naming Config.Payload", err)
	}
}

// TestElectorTakesNodeIdentity: an elector on a Node runs with the
// identity the Node publishes (its rating, non-voter flag and algorithm:
// election.Config has none to disagree with), and one started after
// Node.SetRating with the new rating.
func TestElectorTakesNodeIdentity(t *testing.T) {
	checkLeaks(t)
	cfg := testConfig("n1")
	cfg.Rating, cfg.NonVoter, cfg.Algorithm = 7, true, core.Ring
	cfg.SetElection(election.DefaultConfig())
	m := start(t, cfg)
	want := election.Identity{Name: "n1", Rating: 7, NonVoter: true, Algorithm: core.Ring}
	if got := m.Identity(); got != want {
		t.Fatalf("Identity = %+v, want %+v", got, want)
	}
	e, err := election.New(election.Config{Transport: m.Node})
	if err != nil {
		t.Fatal(err)
	}
	if st := e.Status(); st.ID != "n1" || st.Rating != 7 || !st.NonVoter || st.Algorithm != core.Ring {
		t.Errorf("elector status %+v, want n1 rated 7, non-voter, ring", st)
	}
	if err := m.SetRating(8); err != nil {
		t.Fatal(err)
	}
	if got := m.Identity().Rating; got != 8 {
		t.Errorf("Identity().Rating after SetRating(8) = %d", got)
	}
	e, err = election.New(election.Config{Transport: m.Node})
	if err != nil {
		t.Fatal(err)
	}
	if st := e.Status(); st.Rating != 8 {
		t.Errorf("elector started after SetRating(8) reports rating %d", st.Rating)
	}
}

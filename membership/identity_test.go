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
	ms := cluster(t, 2, func(c *Config) { c.Payload = "http://" + c.NodeName + ":8080" })
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

// TestElectorIdentityMustAgree: election.New refuses a Node whose rating,
// non-voter flag or algorithm differ from the elector's Config (the
// non-voter set on the elector only that breaks Resign), and accepts one
// configured with SetElection.
func TestElectorIdentityMustAgree(t *testing.T) {
	checkLeaks(t)
	cfg := testConfig("n1")
	ec := election.Config{Rating: 7, NonVoter: true, Algorithm: core.Ring}
	cfg.SetElection(ec)
	m := start(t, cfg)
	ec.Transport = m.Node
	if _, err := election.New(ec); err != nil {
		t.Fatalf("New with SetElection's values: %v", err)
	}
	for field, bad := range map[string]func(*election.Config){
		"Rating = 8":        func(c *election.Config) { c.Rating = 8 },
		"NonVoter = false":  func(c *election.Config) { c.NonVoter = false },
		"Algorithm = bully": func(c *election.Config) { c.Algorithm = core.Bully },
	} {
		c := ec
		bad(&c)
		if _, err := election.New(c); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("New with %s: %v, want an error naming it", field, err)
		}
	}
	if err := m.SetRating(8); err != nil {
		t.Fatal(err)
	}
	c := ec
	c.Rating = 8
	if _, err := election.New(c); err != nil {
		t.Errorf("New after SetRating(8) with Rating 8: %v", err)
	}
}

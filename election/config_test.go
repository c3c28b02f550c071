package election

import (
	"strings"
	"testing"
	"time"

	"github.com/coordelect/coordelect/election/core"
)

// stubTransport is the least a Config needs to validate.
type stubTransport struct{ self Identity }

// stub returns a stubTransport for the member named name.
func stub(name string) stubTransport { return stubTransport{Identity{Name: name}} }

func (s stubTransport) Identity() Identity           { return s.self }
func (s stubTransport) Send(core.Message) error      { return nil }
func (s stubTransport) Events() <-chan Event         { return nil }
func (s stubTransport) SetRating(rating int64) error { return nil }

func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	ms := time.Millisecond
	got := [...]time.Duration{c.Tick, c.HeartbeatInterval, time.Duration(c.HeartbeatMisses), c.RoundTrip,
		c.AnswerTimeout, c.CoordinatorTimeout, c.HopTimeout, c.StartupDelay, c.QuorumLease, c.HandoffTimeout, c.SoloDelay}
	want := [...]time.Duration{10 * ms, 50 * ms, 3, 20 * ms, 40 * ms, 120 * ms, 20 * ms, 50 * ms, 150 * ms, 170 * ms, 10 * time.Second}
	if got != want {
		t.Errorf("DefaultConfig() timings = %v, want %v", got, want)
	}
	if c.Transport != nil || c.Preemption != core.PreemptAlways || c.QuorumSize != 0 {
		t.Errorf("DefaultConfig() = %+v", c)
	}
	c.Transport = stub("a")
	if err := c.Validate(); err != nil {
		t.Errorf("default config with a transport: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string // "" means valid
	}{
		{"zero values take defaults", func(*Config) {}, ""},
		{"no transport", func(c *Config) { c.Transport = nil }, `Config.Transport = nil: must be set`},
		{"unnamed transport", func(c *Config) { c.Transport = stubTransport{} }, `Config.Transport.Identity().Name = "": must name this node`},
		{"negative tick", func(c *Config) { c.Tick = -time.Millisecond }, `Config.Tick = -1ms: must be positive`},
		{"heartbeat not a whole number of ticks", func(c *Config) { c.HeartbeatInterval = 55 * time.Millisecond },
			`Config.HeartbeatInterval = 55ms: must be a whole number of ticks (Tick = 10ms)`},
		{"timeout below one tick", func(c *Config) { c.Tick, c.RoundTrip = time.Second, time.Millisecond },
			`Config.RoundTrip = 1ms: must be a whole number of ticks (Tick = 1s)`},
		{"negative misses", func(c *Config) { c.HeartbeatMisses = -1 }, `Config.HeartbeatMisses = -1: must be at least 1`},
		{"answer shorter than a round trip", func(c *Config) { c.AnswerTimeout = 10 * time.Millisecond },
			`Config.AnswerTimeout = 10ms: must cover a round trip (RoundTrip = 20ms)`},
		{"coordinator timeout too short", func(c *Config) { c.CoordinatorTimeout = 60 * time.Millisecond },
			`Config.CoordinatorTimeout = 60ms: must exceed AnswerTimeout + RoundTrip = 60ms`},
		{"lease not renewable", func(c *Config) { c.QuorumSize, c.QuorumLease = 3, 50*time.Millisecond },
			`Config.QuorumLease = 50ms: must exceed HeartbeatInterval = 50ms`},
		{"lease unchecked without quorum", func(c *Config) { c.QuorumLease = 50 * time.Millisecond }, ""},
		{"negative quorum", func(c *Config) { c.QuorumSize = -1 }, `Config.QuorumSize = -1`},
		{"negative margin", func(c *Config) { c.PreemptMargin = -2 }, `Config.PreemptMargin = -2`},
		{"negative hand-off", func(c *Config) { c.HandoffTimeout = -time.Second }, `Config.HandoffTimeout = -1s`},
		{"negative expectation", func(c *Config) { c.ExpectVoters = -1 }, `Config.ExpectVoters = -1`},
		{"negative window", func(c *Config) { c.ExpectWindow = -time.Second }, `Config.ExpectWindow = -1s: must be positive`},
		{"negative solo delay", func(c *Config) { c.SoloDelay = -time.Second }, `Config.SoloDelay = -1s: must be positive`},
		{"solo delay not a whole number of ticks", func(c *Config) { c.SoloDelay = 10*time.Second + time.Millisecond },
			`Config.SoloDelay = 10.001s: must be a whole number of ticks (Tick = 10ms)`},
		{"unknown algorithm", func(c *Config) { c.Transport = stubTransport{Identity{Name: "a", Algorithm: 9}} },
			`Config.Transport.Identity().Algorithm = algorithm(9): want bully, ring or peterson`},
		{"unknown preemption", func(c *Config) { c.Preemption = 7 }, `Config.Preemption = preemption(7)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Config{Transport: stub("a")}
			tt.edit(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.want)
			}
			if _, nerr := New(c); (nerr == nil) != (err == nil) {
				t.Errorf("New() = %v, Validate() = %v: they must agree", nerr, err)
			}
		})
	}
}

// TestConfigTicks: the durations reach the core as tick counts.
func TestConfigTicks(t *testing.T) {
	c := Config{Transport: stubTransport{Identity{Name: "n1", Rating: 4, NonVoter: true, Algorithm: core.Ring}},
		Tick: 5 * time.Millisecond, QuorumSize: 3}
	c.setDefaults()
	cc, _, err := c.coreConfig()
	if err != nil {
		t.Fatal(err)
	}
	got := [...]int{cc.HeartbeatInterval, cc.HeartbeatMisses, cc.RoundTrip, cc.AnswerTimeout,
		cc.CoordinatorTimeout, cc.HopTimeout, cc.StartupDelay, cc.QuorumLease}
	want := [...]int{10, 3, 4, 8, 24, 4, 10, 30}
	if got != want {
		t.Errorf("ticks = %v, want %v", got, want)
	}
	self, _ := cc.Roster.Get("n1")
	if cc.ID != "n1" || cc.Algorithm != core.Ring || cc.Mode != core.View || cc.QuorumSize != 3 || self != (core.Peer{ID: "n1", Rating: 4, NonVoter: true}) {
		t.Errorf("core config = %+v, self %+v", cc, self)
	}
}

// startupStub is a transport with seeds and a gossip spread.
type startupStub struct {
	stubTransport
	seeds  int
	spread time.Duration
}

func (s startupStub) Seeds() int            { return s.seeds }
func (s startupStub) Spread() time.Duration { return s.spread }

// TestExpectDefaults: the quorum size is the expectation with the guard; a
// node with seeds expects another voter; the start-up period is at least
// the transport's spread; the window reaches the core in ticks.
func TestExpectDefaults(t *testing.T) {
	for _, tc := range []struct {
		name         string
		c            Config
		voters, tick int
	}{
		{"no hints", Config{Transport: stub("a")}, 0, 5},
		{"quorum", Config{Transport: stub("a"), QuorumSize: 5}, 5, 5},
		{"seeds", Config{Transport: startupStub{stub("a"), 2, 200 * time.Millisecond}}, 2, 20},
		{"no seeds", Config{Transport: startupStub{stub("a"), 0, 35 * time.Millisecond}}, 0, 5},
		{"seeds and quorum", Config{Transport: startupStub{stub("a"), 2, 0}, QuorumSize: 3}, 3, 5},
		{"explicit", Config{Transport: startupStub{stub("a"), 2, 0}, ExpectVoters: 7}, 7, 5},
	} {
		c := tc.c
		c.setDefaults()
		cc, _, err := c.coreConfig()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if cc.ExpectVoters != tc.voters || cc.StartupDelay != tc.tick || cc.ExpectWindow != 500 {
			t.Errorf("%s: ExpectVoters %d, StartupDelay %d, ExpectWindow %d; want %d, %d, 500",
				tc.name, cc.ExpectVoters, cc.StartupDelay, cc.ExpectWindow, tc.voters, tc.tick)
		}
	}
}

func TestSoloDelayInTicks(t *testing.T) {
	for _, tc := range []struct {
		set  time.Duration
		want int
	}{{0, 1000}, {2 * time.Second, 200}, {10 * time.Millisecond, 1}} {
		c := Config{Transport: stub("a"), SoloDelay: tc.set}
		c.setDefaults()
		cc, _, err := c.coreConfig()
		if err != nil || cc.SoloDelay != tc.want {
			t.Errorf("SoloDelay %v: core SoloDelay = %d (%v), want %d ticks", tc.set, cc.SoloDelay, err, tc.want)
		}
	}
}

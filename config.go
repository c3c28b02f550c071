package coordelect

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/membership"
	"github.com/coordelect/coordelect/metrics"
)

// Config configures Start. It holds the local member's identity once
// (Name, Rating, NonVoter, Algorithm, Payload); Start gives it to both the
// membership layer and the elector. Only Name is required.
type Config struct {
	// Name is this member's name, unique in the cluster: its memberlist
	// node name and its election ID. Required; at most
	// membership.MaxStringLen bytes.
	Name string
	// Rating is this member's rating: the live voter with the highest
	// rating leads, ties broken by Name. Default 0. Change it at run time
	// with Handle.Elector().SetRating.
	Rating int64
	// NonVoter makes this member follow the coordinator without ever
	// standing. Default false.
	NonVoter bool
	// Algorithm is the election algorithm, the same on every member.
	// Default core.Bully.
	Algorithm core.Algorithm
	// Payload is an opaque string this member publishes to the others,
	// typically the address of its own service API: Handle.Leader returns
	// the coordinator's. At most membership.MaxPayloadLen (256) bytes.
	// Default "".
	Payload string

	// BindAddr is the "IP:port" to listen on for gossip and election
	// traffic (UDP and TCP); port 0 picks a free one (Handle.Addr).
	// Default: Membership's BindAddr and BindPort ("0.0.0.0:7946").
	BindAddr string
	// Seeds are "host:port" addresses of members to join, retried and
	// re-joined as membership.Config.Seeds describes. Default:
	// Membership's (none: a new cluster).
	Seeds []string

	// Callbacks are the leadership notifications (election.Callbacks).
	Callbacks election.Callbacks
	// Logger is the parent logger of the member's sub-loggers
	// ("membership", "membership.memberlist", "election", "coordelect"); pass the
	// service's logger, not a Named one. Default nil: discard.
	Logger hclog.Logger
	// Registerer, when set, receives the coordelect metrics of this
	// member (package metrics), including the membership layer's counts.
	// Close unregisters them. Default nil: no metrics.
	Registerer prometheus.Registerer
	// MemberlistSink, with Registerer, also exports memberlist's own
	// metrics (coordelect_memberlist_*). It must be installed as
	// go-metrics' global sink (MemberlistSink.Install), once per process.
	// Default nil.
	MemberlistSink *metrics.MemberlistSink
	// LeaveTimeout bounds how long Close waits for the news of the leave
	// to go out. Default 1 s.
	LeaveTimeout time.Duration

	// Membership, when set, is the starting point of the membership
	// layer's configuration: profile, encryption, label, memberlist
	// tuning. Default membership.DefaultConfig(). Start fills in NodeName,
	// Rating, NonVoter, Payload, Algorithm and the election settings every
	// member shares (from Election), Logger, and BindAddr, BindPort and
	// Seeds when set above. Start refuses a field set here to another
	// value than the one above.
	Membership *membership.Config
	// Election, when set, is the starting point of the elector's
	// configuration: timings, QuorumSize, preemption. Default
	// election.DefaultConfig(). Start fills in Transport, Recorder,
	// Rating, NonVoter, Algorithm, Logger and Callbacks; it refuses a
	// field set here to another value than the one above, and any
	// Transport, Recorder, Logger or callback set here.
	Election *election.Config
}

// DefaultLeaveTimeout is Config.LeaveTimeout's default.
const DefaultLeaveTimeout = time.Second

// conflicts collects the fields that Membership or Election set to
// another value than the top-level Config.
type conflicts []error

// check records field (set to got) when it differs from top (want).
func (cs *conflicts) check(field, top string, set bool, got, want any) {
	if set && got != want {
		*cs = append(*cs, fmt.Errorf("coordelect: Config.%s = %v but Config.%s = %v: set it once, in Config.%s",
			field, got, top, want, top))
	}
}

func (cs *conflicts) refuse(field string, set bool, why string) {
	if set {
		*cs = append(*cs, fmt.Errorf("coordelect: Config.%s is set: %s", field, why))
	}
}

// build derives the two lower configurations from c.
func (c *Config) build() (membership.Config, election.Config, error) {
	mc, ec := membership.DefaultConfig(), election.DefaultConfig()
	if c.Membership != nil {
		mc = *c.Membership
	}
	if c.Election != nil {
		ec = *c.Election
	}
	var cs conflicts
	c.checkMembership(&cs, &mc)
	c.checkElection(&cs, &ec)
	if c.Name == "" {
		cs = append(cs, errors.New(`coordelect: Config.Name = "": required`))
	}
	if c.LeaveTimeout < 0 {
		cs = append(cs, fmt.Errorf("coordelect: Config.LeaveTimeout = %v: must not be negative", c.LeaveTimeout))
	}
	if c.MemberlistSink != nil && c.Registerer == nil {
		cs = append(cs, errors.New("coordelect: Config.MemberlistSink is set without a Registerer to export to"))
	}
	if err := c.setBind(&mc); err != nil {
		cs = append(cs, err)
	}
	if len(cs) > 0 {
		return mc, ec, errors.Join(cs...)
	}
	ec.Rating, ec.NonVoter, ec.Algorithm = c.Rating, c.NonVoter, c.Algorithm
	ec.Logger, ec.Callbacks = c.Logger, c.Callbacks
	mc.NodeName, mc.Payload, mc.Logger = c.Name, c.Payload, c.Logger
	mc.SetElection(ec) // Rating, NonVoter, Algorithm and the shared settings
	if c.Seeds != nil {
		mc.Seeds = c.Seeds
	}
	if c.MemberlistSink != nil {
		mc.Memberlist = chain(mc.Memberlist, metrics.ConfigureMemberlist(c.Name))
	}
	return mc, ec, mc.Validate() // election.New validates ec
}

// checkMembership refuses identity fields and shared election settings
// that Membership sets to other values than c and Election.
func (c *Config) checkMembership(cs *conflicts, mc *membership.Config) {
	cs.check("Membership.NodeName", "Name", mc.NodeName != "", mc.NodeName, c.Name)
	cs.check("Membership.Rating", "Rating", mc.Rating != 0, mc.Rating, c.Rating)
	cs.check("Membership.NonVoter", "NonVoter", mc.NonVoter, mc.NonVoter, c.NonVoter)
	cs.check("Membership.Algorithm", "Algorithm", mc.Algorithm != "", mc.Algorithm, c.Algorithm.String())
	cs.check("Membership.Payload", "Payload", mc.Payload != "", mc.Payload, c.Payload)
	cs.refuse("Membership.Logger", mc.Logger != nil, "set Config.Logger")
	shared := []struct {
		field string
		set   bool
	}{
		{"QuorumSize", mc.QuorumSize != 0}, {"HeartbeatInterval", mc.HeartbeatInterval != 0},
		{"HeartbeatMisses", mc.HeartbeatMisses != 0}, {"QuorumLease", mc.QuorumLease != 0},
	}
	for _, s := range shared {
		cs.refuse("Membership."+s.field, s.set, "Start copies it from Config.Election."+s.field)
	}
}

// checkElection refuses what Election sets that Start owns.
func (c *Config) checkElection(cs *conflicts, ec *election.Config) {
	cs.check("Election.Rating", "Rating", ec.Rating != 0, ec.Rating, c.Rating)
	cs.check("Election.NonVoter", "NonVoter", ec.NonVoter, ec.NonVoter, c.NonVoter)
	cs.check("Election.Algorithm", "Algorithm", ec.Algorithm != core.Bully, ec.Algorithm, c.Algorithm)
	cs.refuse("Election.Transport", ec.Transport != nil, "Start sets it to the membership Node")
	cs.refuse("Election.Recorder", ec.Recorder != nil, "Start sets it from Config.Registerer")
	cs.refuse("Election.Logger", ec.Logger != nil, "set Config.Logger")
	cb := ec.Callbacks
	cs.refuse("Election.Callbacks", cb.OnStartedLeading != nil || cb.OnStoppedLeading != nil || cb.OnNewLeader != nil,
		"set Config.Callbacks")
}

// setBind applies c.BindAddr to mc.
func (c *Config) setBind(mc *membership.Config) error {
	if c.BindAddr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(c.BindAddr)
	p, perr := strconv.Atoi(port)
	if err != nil || perr != nil || net.ParseIP(host) == nil || p < 0 || p > 65535 {
		return fmt.Errorf("coordelect: Config.BindAddr = %q: want IP:port (port 0 picks one)", c.BindAddr)
	}
	mc.BindAddr, mc.BindPort = host, p
	return nil
}

// chain returns a function that applies f (may be nil), then g.
func chain(f, g func(*memberlist.Config)) func(*memberlist.Config) {
	if f == nil {
		return g
	}
	return func(c *memberlist.Config) {
		f(c)
		g(c)
	}
}

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
	"github.com/coordelect/coordelect/membership"
	"github.com/coordelect/coordelect/metrics"
)

// Config configures Start. It holds the local member's identity once
// (the embedded election.Identity: Name, Rating, NonVoter, Algorithm,
// Payload, read as cfg.Name and so on); Start gives it to the membership
// layer, which publishes it, and the elector reads it from there. Only
// Name is required.
type Config struct {
	// Identity is this member. Name is its memberlist node name and its
	// election ID, unique in the cluster, at most membership.MaxStringLen
	// bytes: required. Rating: the live voter with the highest rating
	// leads, ties broken by Name; default 0; change it at run time with
	// Handle.Elector().SetRating, which both layers see. NonVoter: follow
	// the coordinator without ever standing. Algorithm: the same on every
	// member; default core.Bully. Payload: an opaque string published to
	// the others, typically the address of this member's service API
	// (Handle.Leader returns the coordinator's); at most
	// membership.MaxPayloadLen (256) bytes; change it with
	// Handle.Node().SetPayload.
	election.Identity

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

	// Membership, when set, says how the member listens, joins and
	// gossips: memberlist profile, encryption, label, queues, memberlist
	// tuning. Default membership.DefaultOptions(). Each zero field takes
	// its default (membership.Options.WithDefaults: &membership.Options{
	// SecretKey: k} is the defaults with encryption), but BindPort, where 0
	// picks a free port: give the address in BindAddr. BindAddr and Seeds
	// above, when set, replace its BindAddr, BindPort and Seeds. It holds
	// no identity, no election setting and no logger: those are set
	// here once.
	Membership *membership.Options
	// Election, when set, is the starting point of the elector's
	// configuration: timings, QuorumSize, preemption; Start publishes the
	// settings every member must share (membership.Config.SetElection).
	// Default election.DefaultConfig(). Start fills in Transport,
	// Recorder, Logger and Callbacks, and refuses any of them set here.
	Election *election.Config
}

// DefaultLeaveTimeout is Config.LeaveTimeout's default.
const DefaultLeaveTimeout = time.Second

// conflicts collects the fields of Election that Start owns.
type conflicts []error

func (cs *conflicts) refuse(field string, set bool, why string) {
	if set {
		*cs = append(*cs, fmt.Errorf("coordelect: Config.%s is set: %s", field, why))
	}
}

// build derives the two lower configurations from c.
func (c *Config) build() (membership.Config, election.Config, error) {
	mc, ec := membership.DefaultConfig(), election.DefaultConfig()
	if c.Membership != nil {
		mc.Options = *c.Membership
	}
	if c.Election != nil {
		ec = *c.Election
	}
	var cs conflicts
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
	ec.Logger, ec.Callbacks = c.Logger, c.Callbacks
	mc.Identity, mc.Logger = c.Identity, c.Logger
	mc.SetElection(ec) // the settings every member shares
	if c.Seeds != nil {
		mc.Seeds = c.Seeds
	}
	if c.MemberlistSink != nil {
		mc.Memberlist = chain(mc.Memberlist, metrics.ConfigureMemberlist(c.Name))
	}
	return mc, ec, mc.Validate() // election.New validates ec
}

// checkElection refuses what Election sets that Start owns.
func (c *Config) checkElection(cs *conflicts, ec *election.Config) {
	cs.refuse("Election.Transport", ec.Transport != nil, "Start sets it to the membership Node")
	cs.refuse("Election.Recorder", ec.Recorder != nil, "Start sets it from Config.Registerer")
	cs.refuse("Election.Logger", ec.Logger != nil, "set Config.Logger")
	cb := ec.Callbacks
	cs.refuse("Election.Callbacks", cb.OnStartedLeading != nil || cb.OnStoppedLeading != nil || cb.OnNewLeader != nil || cb.Claim != nil,
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

package membership

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
)

// The memberlist profiles Config.Profile names.
const (
	ProfileLAN   = "lan"   // memberlist.DefaultLANConfig: crash seen in ~5-7 s
	ProfileLocal = "local" // memberlist.DefaultLocalConfig: loopback and tests
	ProfileWAN   = "wan"   // memberlist.DefaultWANConfig
)

var profiles = map[string]func() *memberlist.Config{
	ProfileLAN:   memberlist.DefaultLANConfig,
	ProfileLocal: memberlist.DefaultLocalConfig,
	ProfileWAN:   memberlist.DefaultWANConfig,
}

// Config configures a Node. Start from DefaultConfig.
//
// It holds the local member's identity once (Identity: Name, Rating,
// NonVoter, Algorithm, Payload), which the Node publishes in its metadata
// and the elector reads from the Node (Node.Identity); the settings every
// member must share (SetElection); and how the member listens, joins and
// gossips (Options). The fields of all three read as Config's own:
// cfg.Name, cfg.QuorumSize, cfg.BindAddr.
type Config struct {
	// Identity is this member: Name is its memberlist node name and its
	// election ID, unique in the cluster, at most MaxStringLen bytes,
	// required; Rating is its initial rating (change it with
	// election.Elector.SetRating, or Node.SetRating without an elector);
	// NonVoter marks a member that follows the coordinator but never
	// stands; Algorithm, published as its name, must be the same on every
	// member; Payload, at most MaxPayloadLen bytes, is an opaque string
	// such as the address of the member's own service API, so that a
	// replica can send a client to the coordinator
	// (election.Elector.LeaderPayload; change it with Node.SetPayload).
	election.Identity

	// QuorumSize, HeartbeatInterval, HeartbeatMisses and QuorumLease are,
	// with Identity.Algorithm, the election settings every member must
	// share (SetElection copies them from an election.Config). They travel
	// in the metadata with ProtocolVersion; a member whose values differ
	// is refused at join, on both sides, with an *IncompatibleError naming
	// the field and both values (New returns it). Default 0: then every
	// member must leave them unset.
	QuorumSize        int
	HeartbeatInterval time.Duration
	HeartbeatMisses   int
	QuorumLease       time.Duration

	// Logger is the parent logger: the node logs under its sub-logger
	// "membership", memberlist under "membership.memberlist". Pass the
	// service's logger, not log.Named("membership"). Default nil: discard.
	Logger hclog.Logger

	// Options say how the member listens, joins and gossips.
	Options
}

// Options are the parts of a Config that do not describe the member nor
// the election: addresses, seeds, memberlist profile, encryption, queues.
//
// A zero field means its default (WithDefaults; New applies them), so
// Options{SecretKey: k} is the defaults with encryption. An explicit "off"
// is a negative value or a named constant, never zero (RejoinInterval:
// NoRejoin). The one exception is BindPort, where 0 picks a free port, as
// everywhere ports are given: DefaultOptions' 7946 is the default of
// DefaultOptions only, and coordelect.Config.BindAddr sets both.
type Options struct {
	// BindAddr is the IP address to listen on (UDP and TCP). Default
	// "0.0.0.0" (also when ""), which advertises the first private IP;
	// tests use "127.0.0.1". Ignored when Transport is set.
	BindAddr string
	// BindPort is the port to listen on; 0 picks a free one (see Addr).
	// DefaultOptions sets 7946. Ignored when Transport is set.
	BindPort int
	// AdvertiseAddr and AdvertisePort are the IP and port other members
	// reach this node at, when not the bound ones (NAT, containers).
	// Default "" and 0: advertise what was bound. AdvertisePort 0 with an
	// AdvertiseAddr means BindPort.
	AdvertiseAddr string
	AdvertisePort int
	// Seeds are "host:port" addresses of members to join; a host may be a
	// DNS name, resolved afresh at every join (see Resolver), and every
	// address it resolves to is joined (a Kubernetes headless Service), but
	// this node's own. New joins them once; if none answers (or a name has
	// no address yet), they are
	// tried again after 20 ms, 40 ms, ... doubling up to RejoinInterval,
	// until one does; after that, every RejoinInterval, the seed
	// addresses that are not live members of this node's view are joined
	// again, together with the addresses of members that left or died
	// recently (see RejoinInterval). Having joined, New
	// also joins the highest-rated voter it learnt of (one more push-pull),
	// usually the coordinator, so that the coordinator knows the new
	// member at once rather than after gossip rounds. Default none (a new
	// cluster).
	Seeds []string
	// Resolver resolves the seeds' DNS names: at New's first join, at every
	// re-join and at each Join, so that a name whose addresses change (a
	// headless Service as pods come and go) is followed, and a name that
	// has no address yet is joined once it has one. Addresses that are this
	// node's own (Addr) are skipped. Default nil: net.DefaultResolver.
	Resolver Resolver
	// Profile selects memberlist's timing defaults: ProfileLAN (default,
	// also when ""), ProfileLocal or ProfileWAN.
	Profile string
	// SecretKey, when set, encrypts and authenticates all gossip and
	// messages with AES-GCM: 16, 24 or 32 bytes (AES-128/192/256), the same
	// on every member. Keyring may instead supply several keys for rotation;
	// if both are set, SecretKey is added to Keyring and made primary.
	// Default none (plaintext).
	SecretKey []byte
	Keyring   *memberlist.Keyring
	// Label is the cluster label stamped on every packet and stream;
	// members with another label are ignored. At most 255 bytes. Default "".
	Label string
	// RejoinInterval is how often the seeds (and recently departed
	// members) are joined again, so that the two sides of a healed
	// partition meet once memberlist has reaped the dead on each side, and
	// the longest wait between retries while no seed has answered yet.
	// A seed this node holds alive is not joined again (memberlist's own
	// push-pulls keep the two in step); while some seed is alive, the
	// dead seeds and the departed members are joined by about four
	// members of the cluster per interval, drawn at random, not by all
	// (Stats.RejoinsSkipped counts the intervals a node left out). A node
	// that holds no seed alive joins them all. NoRejoin (any negative
	// value) disables re-joining and retries. Independently of it, a
	// member whose answer to a probe shows a new boot ID that gossip has
	// not brought yet (a restarted seed that knows nobody) is joined at
	// once. Default (also when 0) 10 s.
	RejoinInterval time.Duration
	// ReorderTimeout is how long a reliable message that arrived ahead of
	// an earlier one on the same link is held, waiting for the gap to fill,
	// before the gap is skipped. About twice the worst round trip between
	// members. Default (also when 0) 250 ms.
	ReorderTimeout time.Duration
	// QueueSize caps received messages waiting for the elector to read
	// Events: at most QueueSize wait to be checked and QueueSize more to be
	// read; beyond, messages are dropped and counted (membership events are
	// never dropped). Default (also when 0) 4096.
	QueueSize int
	// SendQueueSize caps frames queued for one peer; Send fails beyond it.
	// Default (also when 0) 256.
	SendQueueSize int
	// Transport, when set, replaces the UDP/TCP transport (see
	// FaultNetwork for fault injection in tests). The Node owns it: it is
	// shut down by Close, or by New if New fails. Default nil: UDP and TCP
	// on BindAddr:BindPort, as memberlist.NetTransport, except that each
	// datagram is copied into a buffer of its size instead of being held
	// in a fresh 64 KiB one (members on either transport interoperate).
	Transport memberlist.NodeAwareTransport
	// Memberlist, when set, is called with the memberlist configuration
	// after this Config has been applied, to tune what Config does not
	// expose: probe timings, CIDRsAllowed, ... DeadNodeReclaimTime is set
	// to 1 ns before it is called, so that a member declared dead may come
	// back under its name at another address at once (a pod recreated
	// with a new IP); memberlist's own default, 0, refuses it until the
	// dead one is forgotten (GossipToTheDeadTime: 30 s with the LAN
	// profile).
	// Delegate, Events, Merge, Conflict, Ping, Alive, Logger and LogOutput
	// are set after it returns, and so are the DelegateProtocol fields
	// (the announcement of named elections).
	Memberlist func(*memberlist.Config)
	// UnnamedOnly makes the member run the unnamed election alone, as a
	// member of a build without named elections does: it does not
	// announce them (the others send it frames, not batches, and hold it
	// a candidate of no named election), and it is no
	// election.BatchTransport for its elector (Named is false). For tests
	// of mixed clusters, and to hold a member to the frames of the older
	// build. Default false: the member runs named elections.
	UnnamedOnly bool
}

// Resolver looks up a host name's IP addresses; *net.Resolver is one.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// DefaultConfig returns a configuration with every default filled in;
// Name must still be set.
func DefaultConfig() Config {
	return Config{Options: DefaultOptions()}
}

// DefaultOptions returns the default Options: listen on 0.0.0.0:7946 with
// memberlist's LAN profile, re-join every 10 s.
func DefaultOptions() Options {
	return Options{
		BindAddr:       "0.0.0.0",
		BindPort:       7946,
		Profile:        ProfileLAN,
		RejoinInterval: 10 * time.Second,
		ReorderTimeout: 250 * time.Millisecond,
		QueueSize:      4096,
		SendQueueSize:  256,
	}
}

// NoRejoin is the RejoinInterval that turns re-joining (and the retries of
// the first join) off; any negative value does.
const NoRejoin time.Duration = -1

// WithDefaults returns o with each zero field set to its default
// (DefaultOptions), but BindPort, where 0 picks a free port. New and
// Validate apply it.
func (o Options) WithDefaults() Options {
	d := DefaultOptions()
	if o.BindAddr == "" {
		o.BindAddr = d.BindAddr
	}
	if o.Profile == "" {
		o.Profile = d.Profile
	}
	if o.RejoinInterval == 0 {
		o.RejoinInterval = d.RejoinInterval
	}
	if o.ReorderTimeout == 0 {
		o.ReorderTimeout = d.ReorderTimeout
	}
	if o.QueueSize == 0 {
		o.QueueSize = d.QueueSize
	}
	if o.SendQueueSize == 0 {
		o.SendQueueSize = d.SendQueueSize
	}
	return o
}

// SetElection copies from ec, with its defaults filled in, the settings
// every member must share (QuorumSize, HeartbeatInterval, HeartbeatMisses,
// QuorumLease), so that members that run different ones refuse each other.
// The identity (Algorithm included) is not in ec: the elector reads it
// from the Node.
func (c *Config) SetElection(ec election.Config) {
	ec = ec.WithDefaults()
	c.QuorumSize, c.HeartbeatInterval = ec.QuorumSize, ec.HeartbeatInterval
	c.HeartbeatMisses, c.QuorumLease = ec.HeartbeatMisses, ec.QuorumLease
}

// Validate checks the configuration, its zero Options taking their
// defaults (Options.WithDefaults). Errors name the field and the value.
func (c *Config) Validate() error {
	d := *c
	d.Options = c.Options.WithDefaults()
	checks := []func() error{
		d.validateName, d.validateAddrs, d.validateSeeds,
		d.validateCluster, d.validateSizes,
	}
	for _, check := range checks {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

func fieldError(field string, value any, format string, args ...any) error {
	return fmt.Errorf("membership: Config.%s = %#v: %s", field, value, fmt.Sprintf(format, args...))
}

func (c *Config) validateName() error {
	_, algErr := core.ParseAlgorithm(c.Algorithm.String())
	switch {
	case c.Name == "":
		return fieldError("Name", c.Name, "required")
	case len(c.Name) > MaxStringLen:
		return fieldError("Name", c.Name, "longer than %d bytes", MaxStringLen)
	case algErr != nil:
		return fmt.Errorf("membership: Config.Algorithm = %v: want bully, ring or peterson", c.Algorithm)
	case len(c.Payload) > MaxPayloadLen:
		return fmt.Errorf("membership: Config.Payload = <%d bytes>: longer than MaxPayloadLen = %d bytes", len(c.Payload), MaxPayloadLen)
	}
	return nil
}

func (c *Config) validateAddrs() error {
	if c.Transport == nil {
		if net.ParseIP(c.BindAddr) == nil {
			return fieldError("BindAddr", c.BindAddr, "not an IP address")
		}
		if c.BindPort < 0 || c.BindPort > 65535 {
			return fieldError("BindPort", c.BindPort, "want 0 (any) to 65535")
		}
	}
	if c.AdvertiseAddr != "" && net.ParseIP(c.AdvertiseAddr) == nil {
		return fieldError("AdvertiseAddr", c.AdvertiseAddr, "not an IP address")
	}
	if c.AdvertisePort < 0 || c.AdvertisePort > 65535 {
		return fieldError("AdvertisePort", c.AdvertisePort, "want 0 (the bound port) to 65535")
	}
	if c.Transport != nil && c.AdvertiseAddr != "" && c.AdvertisePort == 0 {
		return fieldError("AdvertisePort", c.AdvertisePort, "required with AdvertiseAddr and a Transport (BindPort is not used)")
	}
	return nil
}

func (c *Config) validateSeeds() error {
	for i, s := range c.Seeds {
		host, port, err := net.SplitHostPort(s)
		if err != nil || host == "" {
			return fieldError(fmt.Sprintf("Seeds[%d]", i), s, "want host:port")
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return fieldError(fmt.Sprintf("Seeds[%d]", i), s, "port must be 1 to 65535")
		}
	}
	return nil
}

func (c *Config) validateCluster() error {
	if _, ok := profiles[c.Profile]; !ok {
		return fieldError("Profile", c.Profile, "want %q, %q or %q", ProfileLAN, ProfileLocal, ProfileWAN)
	}
	switch len(c.SecretKey) {
	case 0, 16, 24, 32:
	default:
		// Never print the key itself.
		return fmt.Errorf("membership: Config.SecretKey = <%d bytes>: want 16, 24 or 32 bytes", len(c.SecretKey))
	}
	if len(c.Label) > memberlist.LabelMaxSize {
		return fieldError("Label", c.Label, "longer than %d bytes", memberlist.LabelMaxSize)
	}
	return nil
}

func (c *Config) validateSizes() error {
	switch {
	case c.QuorumSize < 0:
		return fieldError("QuorumSize", c.QuorumSize, "must be >= 0")
	case c.HeartbeatInterval < 0:
		return fieldError("HeartbeatInterval", c.HeartbeatInterval.String(), "must be >= 0")
	case c.HeartbeatMisses < 0:
		return fieldError("HeartbeatMisses", c.HeartbeatMisses, "must be >= 0")
	case c.QuorumLease < 0:
		return fieldError("QuorumLease", c.QuorumLease.String(), "must be >= 0")
	case c.ReorderTimeout <= 0:
		return fieldError("ReorderTimeout", c.ReorderTimeout.String(), "must be > 0 (0: the default)")
	case c.QueueSize < 1:
		return fieldError("QueueSize", c.QueueSize, "must be >= 1 (0: the default)")
	case c.SendQueueSize < 1:
		return fieldError("SendQueueSize", c.SendQueueSize, "must be >= 1 (0: the default)")
	}
	return nil
}

// memberlistConfig builds memberlist's configuration around d.
func (c *Config) memberlistConfig(d *delegate, logger hclog.Logger) *memberlist.Config {
	mc := profiles[c.Profile]()
	mc.Name = c.Name
	mc.BindAddr, mc.BindPort = c.BindAddr, c.BindPort
	mc.AdvertiseAddr, mc.AdvertisePort = c.AdvertiseAddr, c.AdvertisePort
	if c.AdvertisePort == 0 {
		// memberlist advertises AdvertisePort whenever AdvertiseAddr is
		// set; default it to the bound port (it fills in a picked one).
		mc.AdvertisePort = c.BindPort
	}
	mc.SecretKey, mc.Keyring, mc.Label = c.SecretKey, c.Keyring, c.Label
	if c.Transport != nil {
		mc.Transport = c.Transport
	}
	mc.DeadNodeReclaimTime = deadNodeReclaimTime // a restart at a new address (restart.go)
	if c.Memberlist != nil {
		c.Memberlist(mc)
	}
	mc.Delegate, mc.Events, mc.Merge, mc.Conflict, mc.Ping, mc.Alive = d, d, d, d, d, d
	if !c.UnnamedOnly {
		// The announcement of named elections (namedProtocol): the
		// highest delegate protocol version it understands; the version
		// it speaks stays 0, which every member understands.
		mc.DelegateProtocolMin, mc.DelegateProtocolMax, mc.DelegateProtocolVersion = 0, namedProtocol, 0
	}
	mc.LogOutput = nil
	w := logger.Named("memberlist").StandardWriter(&hclog.StandardLoggerOptions{InferLevels: true})
	mc.Logger = log.New(&logWatch{next: w, keyMismatch: d.keyMismatch}, "", 0)
	return mc
}

// namedProtocol is the memberlist delegate protocol version (its
// Node.DMax, gossiped with every alive message) by which a member
// announces that it runs named elections: that it decodes batch frames
// (batch.go) and candidacy frames (candidacy.go). The node metadata
// cannot carry it: a member of an older build refuses metadata with a
// flag bit or a field it does not know, and would refuse this member. An
// older member announces 0 (memberlist's default), and takes frames
// alone; memberlist accepts the two ranges together, since every member
// speaks version 0.
const namedProtocol = 1

// keyMismatchLog is what memberlist logs when a packet or stream was
// encrypted with a key this node does not hold (security.go).
var keyMismatchLog = []byte("no installed keys could decrypt the message")

// logWatch passes memberlist's log lines on, and reports the ones that
// show a key mismatch, which memberlist reports only in its log.
type logWatch struct {
	next        io.Writer
	keyMismatch func(line string)
}

func (w *logWatch) Write(p []byte) (int, error) {
	if bytes.Contains(p, keyMismatchLog) {
		w.keyMismatch(string(bytes.TrimSpace(p)))
	}
	return w.next.Write(p)
}

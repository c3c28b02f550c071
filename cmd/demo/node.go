package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/coordelect/coordelect"
	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/membership"
	"github.com/coordelect/coordelect/metrics"
)

const nodeSynopsis = `usage: demo node -name NAME [flags]

Runs one coordelect node in this process: a memberlist member and an elector
running the unnamed election and the named ones of -jobs, with /status and
/leader (JSON; /leader?election=JOB for a job), /metrics (Prometheus),
/healthz (200 while it runs) and /readyz (JSON: 200 once it knows a
coordinator, else 503 and why) over HTTP. Start one per process or host and
point them at each other with -join. SIGINT or SIGTERM resigns (a
coordinator hands off), leaves the cluster and exits 0.`

// leaveTimeout bounds how long a stopping node waits for its leave message
// to go out.
const leaveTimeout = 2 * time.Second

// nodeOptions is a validated `demo node` command line.
type nodeOptions struct {
	mem   membership.Config
	el    election.Config
	http  string
	level hclog.Level
	jobs  []string // the named elections the node runs (-jobs)
}

// parseNodeFlags parses and checks every flag of `demo node`, so that
// nothing starts unless all of them are good.
func parseNodeFlags(args []string, stdout io.Writer) (*nodeOptions, error) {
	var (
		name, bind, advertise, join, key string
		jobs                             string
		alg                              algorithmFlag
		level                            = levelFlag{hclog.Info}
		o                                = &nodeOptions{mem: membership.DefaultConfig()}
	)
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	fs.StringVar(&name, "name", "", "this node's name, unique in the cluster (required)")
	fs.StringVar(&bind, "bind", "127.0.0.1:7946", "IP:PORT for gossip and election traffic (UDP and TCP); port 0 picks one")
	fs.StringVar(&advertise, "advertise", "", "IP:PORT the others reach this node at, when not -bind (NAT, containers; in a Kubernetes pod, $(POD_IP):PORT from the Downward API)")
	fs.StringVar(&o.http, "http", "127.0.0.1:0", "HOST:PORT for /status, /metrics and /healthz; port 0 (the default) picks a free one, printed at start")
	fs.StringVar(&join, "join", "", "HOST:PORT[,HOST:PORT...] of members to join (re-joined every 10 s while not live members); a DNS name stands for every address it resolves to at each join (a headless Service), this node's own skipped")
	fs.Int64Var(&o.mem.Rating, "rating", 0, "this node's rating: the live node with the highest rating leads (ties: the name)")
	fs.Var(&alg, "algorithm", "election algorithm: bully, ring or peterson (the same on every node)")
	fs.StringVar(&key, "key", "", "gossip encryption key, base64 of 16, 24 or 32 bytes (the same on every node)")
	fs.IntVar(&o.el.QuorumSize, "quorum", 0, "quorum guard: the cluster size S (the same on every node); 0 turns it off")
	fs.IntVar(&o.el.ExpectVoters, "expect", 0, "hold the first election until N voters (this node included) have been visible, however long (with -quorum: a majority of it, if fewer); 0: the -quorum size, else 2 with -join (another member), else none")
	fs.DurationVar(&o.el.ExpectWindow, "expect-window", election.DefaultExpectWindow, "how long a node that has seen its -expect voters waits for its view to stop growing; with -bootstrap, also how long it waits for them at all")
	fs.BoolVar(&o.el.Bootstrap, "bootstrap", false, "the first node of a new cluster: lead after -expect-window even without having seen the -expect voters (without it, a node that never reaches its cluster never leads)")
	fs.DurationVar(&o.el.SoloDelay, "solo-delay", election.DefaultSoloDelay, "without -quorum: how long a node that lost its last other voters at once waits before it leads alone (a partition shorter than this heals with the term unchanged)")
	fs.StringVar(&jobs, "jobs", strconv.Itoa(defaultJobs), jobsUsage+" (the same on every node)")
	fs.StringVar(&o.mem.Profile, "profile", membership.ProfileLAN, "memberlist timings: lan, local (one host) or wan")
	fs.Var(&level, "log-level", "log level: trace, debug, info, warn, error or off")
	if err := parseFlags(fs, args, stdout, nodeSynopsis); err != nil {
		return nil, err
	}
	o.mem.Algorithm, o.level = alg.a, level.l
	if err := o.setMembership(name, bind, advertise, join, key); err != nil {
		return nil, err
	}
	var err error
	if o.jobs, err = parseJobs(jobs, maxNodeJobs); err != nil {
		return nil, err
	}
	return o, o.check()
}

// setMembership fills in the membership configuration from the flags.
func (o *nodeOptions) setMembership(name, bind, advertise, join, key string) error {
	switch {
	case name == "":
		return usagef("-name is required: this node's name, unique in the cluster")
	case len(name) > membership.MaxStringLen:
		return usagef("-name: %d bytes; want at most %d", len(name), membership.MaxStringLen)
	}
	o.mem.Name = name
	var err error
	if o.mem.BindAddr, o.mem.BindPort, err = checkHostPort("bind", bind, true, 0); err != nil {
		return err
	}
	if advertise != "" {
		if o.mem.AdvertiseAddr, o.mem.AdvertisePort, err = checkHostPort("advertise", advertise, true, 1); err != nil {
			return err
		}
	}
	o.mem.Seeds = splitList(join)
	for _, s := range o.mem.Seeds {
		if _, _, err := checkHostPort("join", s, false, 1); err != nil {
			return err
		}
	}
	o.mem.SecretKey, err = decodeKey(key)
	o.mem.SetElection(o.el) // the settings every member must share
	return err
}

// check checks what the flags alone did not.
func (o *nodeOptions) check() error {
	if _, _, err := checkHostPort("http", o.http, false, 0); err != nil {
		return err
	}
	switch o.mem.Profile {
	case membership.ProfileLAN, membership.ProfileLocal, membership.ProfileWAN:
	default:
		return usagef("-profile %q: want lan, local or wan", o.mem.Profile)
	}
	if o.el.QuorumSize < 0 {
		return usagef("-quorum %d: want 0 (off) or the cluster size", o.el.QuorumSize)
	}
	if o.el.ExpectVoters < 0 {
		return usagef("-expect %d: want 0 (the default) or the number of voters to wait for", o.el.ExpectVoters)
	}
	if w := o.el.ExpectWindow; w <= 0 || w%election.DefaultTick != 0 {
		return usagef("-expect-window %v: want a positive multiple of %v", w, election.DefaultTick)
	}
	if d := o.el.SoloDelay; d <= 0 || d%election.DefaultTick != 0 {
		return usagef("-solo-delay %v: want a positive multiple of %v", d, election.DefaultTick)
	}
	if err := o.mem.Validate(); err != nil {
		return usagef("%v", err) // e.g. a -name longer than membership allows
	}
	return nil
}

// runNode runs `demo node` until ctx ends, then stops gracefully. The node
// is a service embedding coordelect as the README shows: coordelect.Start,
// the Handle's Handler and its Close, so that what a service gets is what
// this command runs.
func runNode(ctx context.Context, args []string, stdout, stderr io.Writer, sink *metrics.MemberlistSink) error {
	o, err := parseNodeFlags(args, stdout)
	if err != nil {
		return err // errHelp: exit status 0
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "demo", Level: o.level, Output: stderr})
	ln, err := net.Listen("tcp", o.http)
	if err != nil {
		return fmt.Errorf("-http: %w", err)
	}
	reg := prometheus.NewRegistry()
	h, err := coordelect.Start(ctx, o.config(logger, reg, sink))
	if err != nil {
		_ = ln.Close()
		return flagError(err)
	}
	if err := startJobs(h, o.jobs); err != nil {
		_ = h.Close(context.Background())
		_ = ln.Close()
		return err
	}
	srv := serveNode(h, reg, ln, logger)
	fmt.Fprintf(stdout, "node %s: gossip %s, http://%s/status\n", o.mem.Name, h.Addr(), ln.Addr())
	select {
	case <-ctx.Done():
		logger.Info("stopping: resigning and leaving the cluster")
	case <-h.Done():
		logger.Error("elector stopped", "error", h.Err())
	}
	err = h.Close(context.Background()) // hand off, leave (an unconfirmed leave is a warning), shut down
	shutdown(srv, logger)
	return flagError(err)
}

// startJobs starts the named elections jobs on h, each standing with
// spread placement; they end with h.
func startJobs(h *coordelect.Handle, jobs []string) error {
	for _, job := range jobs {
		if _, err := h.Election(job, election.ElectionOptions{Placement: election.PlaceSpread}); err != nil {
			return fmt.Errorf("-jobs: %w", err)
		}
	}
	return nil
}

// flagError names the flag behind a configuration error that only the
// cluster could reveal: a key the seeds do not share.
func flagError(err error) error {
	var km *membership.KeyMismatchError
	if errors.As(err, &km) {
		return fmt.Errorf("-key: %w", km)
	}
	return err
}

// config is the coordelect configuration of the node.
func (o *nodeOptions) config(logger hclog.Logger, reg *prometheus.Registry, sink *metrics.MemberlistSink) coordelect.Config {
	mo, ec := o.mem.Options, o.el
	return coordelect.Config{
		Identity: o.mem.Identity, Logger: logger, LeaveTimeout: leaveTimeout,
		Registerer: reg, MemberlistSink: sink, // nil sink: without memberlist's own metrics
		Membership: &mo, Election: &ec,
	}
}

// serveNode serves the node's endpoints on ln: the Handle's handler
// (/status, /leader, /healthz, /readyz) and its metrics (/metrics).
func serveNode(h *coordelect.Handle, reg *prometheus.Registry, ln net.Listener, logger hclog.Logger) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("/", h.Handler())
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := newServer(mux, logger)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("http server stopped", "error", err)
		}
	}()
	return srv
}

// newServer returns an HTTP server for handler with sane timeouts for a
// local tool (no WriteTimeout: the event stream is long-lived).
func newServer(handler http.Handler, logger hclog.Logger) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       time.Minute,
		ErrorLog:          logger.Named("http").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
}

// shutdown stops srv, waiting a little for requests in flight.
func shutdown(srv *http.Server, logger hclog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		logger.Warn("http server did not stop cleanly", "error", err)
		_ = srv.Close()
	}
}

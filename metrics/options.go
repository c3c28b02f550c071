package metrics

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Option configures New.
type Option func(*options)

type options struct {
	electionLabels    int
	electionLabelsSet bool

	node      string
	nodeSet   bool
	buckets   []float64
	transport TransportStats
	sink      *MemberlistSink
	sinkNode  string
}

// WithNode adds the constant label node=name to every series of the
// Recorder (prometheus.WrapRegistererWith), so that several nodes can share
// one Registerer. Default: no node label (one Registerer per node).
func WithNode(name string) Option {
	return func(o *options) { o.node, o.nodeSet = name, true }
}

// WithDurationBuckets replaces the buckets of
// coordelect_election_duration_seconds, in seconds, strictly increasing.
// Default DefaultDurationBuckets.
func WithDurationBuckets(buckets ...float64) Option {
	return func(o *options) { o.buckets = slices.Clone(buckets) }
}

// WithTransportStats exports the membership layer's counts (a
// *membership.Node): its receive-side drops join
// coordelect_messages_dropped_total under their own reasons, and the rest
// appear as coordelect_transport_*. They are read at each scrape. Default:
// none.
func WithTransportStats(src TransportStats) Option {
	return func(o *options) { o.transport = src }
}

// WithMemberlist exports memberlist's own metrics (coordelect_memberlist_*)
// for the memberlist instance configured with ConfigureMemberlist(node),
// through sink, which must be go-metrics' global sink (see
// MemberlistSink.Install). Unregister stops it. Default: none.
func WithMemberlist(sink *MemberlistSink, node string) Option {
	return func(o *options) { o.sink, o.sinkNode = sink, node }
}

func buildOptions(opts []Option) (options, error) {
	o := options{buckets: DefaultDurationBuckets, electionLabels: DefaultElectionLabels}
	for _, opt := range opts {
		opt(&o)
	}
	return o, o.validate()
}

func (o *options) validate() error {
	var errs []error
	if o.nodeSet && o.node == "" {
		errs = append(errs, errors.New(`metrics: WithNode(""): the node name must not be empty`))
	}
	if o.electionLabels < 0 {
		errs = append(errs, fmt.Errorf("metrics: WithElectionLabels(%d): must not be negative", o.electionLabels))
	}
	if err := checkBuckets(o.buckets); err != nil {
		errs = append(errs, err)
	}
	if o.sink != nil && o.sinkNode == "" {
		errs = append(errs, errors.New(`metrics: WithMemberlist(sink, ""): the node name must not be empty`))
	}
	return errors.Join(errs...)
}

func checkBuckets(b []float64) error {
	if len(b) == 0 {
		return errors.New("metrics: WithDurationBuckets(): at least one bucket is required")
	}
	for i, v := range b {
		if math.IsNaN(v) || v < 0 || i > 0 && v <= b[i-1] {
			return fmt.Errorf("metrics: WithDurationBuckets(%v): bucket %d = %v: buckets must be non-negative and strictly increasing", b, i, v)
		}
	}
	return nil
}

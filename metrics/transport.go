package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/membership"
)

// TransportStats is the membership layer's source of counts;
// *membership.Node implements it. Stats must be safe to call from any
// goroutine (a scrape) and cheap.
type TransportStats interface {
	Stats() membership.Stats
}

const droppedHelp = "Election messages ignored or lost, by reason: the state machine's " +
	"(stale_term, misaddressed, unexpected, order), the elector's (send_failed) and, " +
	"with transport stats, the membership layer's receive side " +
	"(malformed, version, unknown_sender, stale, duplicate, queue_full)."

// droppedCollector is coordelect_messages_dropped_total: the elector's
// counts in a CounterVec, plus, at each scrape, the transport's receive-side
// drops as more reasons of the same family.
type droppedCollector struct {
	vec      *prometheus.CounterVec
	desc     *prometheus.Desc
	src      TransportStats
	byReason map[string]prometheus.Counter // the known reasons; read-only after initialise
}

func newDroppedCollector(src TransportStats) *droppedCollector {
	const name = namespace + "_messages_dropped_total"
	return &droppedCollector{
		vec:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: droppedHelp}, []string{"reason"}),
		desc: prometheus.NewDesc(name, droppedHelp, []string{"reason"}, nil),
		src:  src,
	}
}

// ElectorDropReasons lists the reasons the Elector reports: the core's
// and election.DropSendFailed.
func ElectorDropReasons() []string {
	out := make([]string, 0, core.NumDropReasons+1)
	for r := range core.DropReason(core.NumDropReasons) {
		out = append(out, r.String())
	}
	return append(out, election.DropSendFailed)
}

func (c *droppedCollector) initialise() {
	c.byReason = make(map[string]prometheus.Counter)
	for _, r := range ElectorDropReasons() {
		c.byReason[r] = c.vec.WithLabelValues(r)
	}
}

func (c *droppedCollector) Describe(ch chan<- *prometheus.Desc) { c.vec.Describe(ch) }

func (c *droppedCollector) Collect(ch chan<- prometheus.Metric) {
	c.vec.Collect(ch)
	if c.src == nil {
		return
	}
	s := c.src.Stats()
	for _, r := range membership.DropReasons() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(s.Dropped[r]), r.String())
	}
}

// transportCollector exports the rest of membership.Stats, read at each
// scrape.
type transportCollector struct {
	src                                         TransportStats
	sent, received, reordered, gapsSkipped      *prometheus.Desc
	sendFailures, refused, rejoins, rejoinFails *prometheus.Desc
}

func newTransportCollector(src TransportStats) *transportCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(namespace+"_transport_"+name, help, labels, nil)
	}
	return &transportCollector{
		src:  src,
		sent: d("sent_total", "Frames the membership transport handed to memberlist (TCP written or UDP sent)."),
		received: d("received_total",
			"Messages the membership transport delivered to the elector."),
		reordered: d("reordered_total",
			"Reliable messages held back because an earlier one on the same link had not arrived."),
		gapsSkipped: d("gaps_skipped_total",
			"Link sequence numbers given up on after the reorder timeout (messages lost on a link)."),
		sendFailures: d("send_failures_total",
			"Frames that were not sent, by reason: memberlist_error (memberlist failed to send), "+
				"queue_full (the peer's send queue was full; Send refused), abandoned (the peer left or the node closed).",
			"reason"),
		refused: d("refused_members_total",
			"Members refused, by reason: tag_collision (core.Tag of the name equals a live member's), "+
				"bad_meta (metadata not from this coordelect version).", "reason"),
		rejoins:     d("rejoins_total", "Periodic re-joins of the seeds."),
		rejoinFails: d("rejoin_failures_total", "Periodic re-joins that reached no seed."),
	}
}

func (c *transportCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.sent, c.received, c.reordered, c.gapsSkipped,
		c.sendFailures, c.refused, c.rejoins, c.rejoinFails} {
		ch <- d
	}
}

func (c *transportCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(c.sent, s.Sent)
	counter(c.received, s.Received)
	counter(c.reordered, s.Reordered)
	counter(c.gapsSkipped, s.GapsSkipped)
	counter(c.sendFailures, s.SendFailed, "memberlist_error")
	counter(c.sendFailures, s.SendQueueFull, "queue_full")
	counter(c.sendFailures, s.SendAbandoned, "abandoned")
	counter(c.refused, s.RefusedTagCollision, "tag_collision")
	counter(c.refused, s.RefusedBadMeta, "bad_meta")
	counter(c.rejoins, s.Rejoins)
	counter(c.rejoinFails, s.RejoinFailures)
}

// Package metrics records coordelect's metrics in Prometheus.
//
// New returns a Recorder, the Prometheus implementation of
// election.Recorder: hand it to election.Config.Recorder and the Elector
// reports its term, coordinator, state, messages, elections and members to
// it. New registers the collectors on the prometheus.Registerer it is given
// and never touches the global registry, so two nodes in one process each
// keep their own series in one of two ways:
//
//   - one registry per node (each served on its own /metrics), or
//   - one registry for the process and WithNode(name) on each Recorder,
//     which wraps the Registerer with prometheus.WrapRegistererWith so that
//     every series of that node carries a constant label node="name".
//
// Both can be combined; the dashboard (docs/grafana/coordelect.json) and the
// alert rules (docs/prometheus/alerts.yml) group by job, instance and node,
// so they work either way. Example shows a Recorder on a registry of its
// own and what it exports.
//
// # Metrics
//
// Every name starts with coordelect_; docs/operations.md has the full table.
//
//	coordelect_term                          gauge    highest term seen (epoch<<32 | winner's tag)
//	coordelect_is_coordinator                gauge    1 while this node is coordinator
//	coordelect_coordinator_info{coordinator} gauge    1 for the coordinator this node follows
//	coordelect_state{state}                  gauge    1 for the node's state (sleep, cand, lost, ...)
//	coordelect_messages_sent_total{type}     counter  messages handed to the transport
//	coordelect_messages_received_total{type} counter  messages accepted by the state machine
//	coordelect_messages_dropped_total{reason} counter messages ignored or lost
//	coordelect_elections_total{result}       counter  started, won, lost, restarted
//	coordelect_elections_started_total{cause} counter elections started, by why (silence, down, ...)
//	coordelect_election_duration_seconds     histogram time without an agreed coordinator
//	coordelect_leader_changes_total          counter  changes to a new coordinator or term
//	coordelect_members{state}                gauge    known members, alive or dead
//	coordelect_heartbeat_misses_total        counter  heartbeat intervals spent in silence
//	coordelect_quorum_lease_seconds          gauge    the lease a guarded coordinator asks for
//	coordelect_sitting_out                   gauge    1 while a guarded ring member sits out
//
// With WithTransportStats, the membership layer's counts join them
// (receive-side drops as more reasons of coordelect_messages_dropped_total,
// the rest as coordelect_transport_*); with WithMemberlist, memberlist's own
// go-metrics (health score, probes, gossip) appear as coordelect_memberlist_*
// through a MemberlistSink.
package metrics

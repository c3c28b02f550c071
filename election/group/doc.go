// Package group hosts the named elections of one member: many independent
// coordinators over one membership. Like a core.Node it has no goroutines,
// no clock, no sockets and no randomness; its owner feeds it events and
// takes what changed:
//
//	g, err := group.New(cfg) // cfg: the member's core.Config
//	g.Add(group.DefaultName, group.Options{})
//	g.Add("compactor", group.Options{Placement: group.PlaceSpread})
//	for {
//		select {
//		case <-ticker.C:
//			g.Tick()
//		case b := <-batches:
//			g.Step(b)
//		case ev := <-membership:
//			g.PeerUp(ev.Peer) // or PeerDown, PeerRating, PeerCandidate
//		}
//		rd := g.Ready()
//		for _, b := range rd.Batches {
//			transport.SendBatch(b.Clone()) // one packet per destination
//		}
//		for _, u := range rd.Updates {
//			report(u.Name, u.Ready.Status, u.Ready.Counters)
//		}
//	}
//
// # Names
//
// A name is a core.Node: every name runs the same core state machine
// (the algorithm, the timings, the preemption policy and the quorum guard
// of the member's core.Config), so there is no second copy of an
// algorithm. Each name has its own term, coordinator, fencing token,
// lease and hand-off. Add and Remove create and end names at run time;
// the unnamed election of a single-election user is the name DefaultName.
// A name is 1 to MaxNameLen bytes of UTF-8 without control characters.
//
// A batch pair for a name the group does not host is counted
// (Counters.UnknownName) and dropped: only Add creates a name, so a peer
// cannot make a member allocate one, and options (placement, candidacy,
// quorum size) are local decisions that a message does not carry.
//
// # Membership
//
// Membership is shared: PeerUp, PeerDown, PeerRating and SetRating are
// given to the group once and reach every name's node in the same call.
// A dead member is thus detected once, and every name it led starts its
// election in that one PeerDown. The group knows every member it has
// seen (members are never forgotten, as in a core.Roster); a name added
// later starts with the members the group holds alive (every member it
// knows, in Textbook mode).
//
// # Candidates
//
// A member stands for some names and not others. The core models a member
// that must not stand as a non-voter (core.Peer.NonVoter), and the group
// maps candidacy onto it, per name: member m is a voter in name x's roster
// unless m stands for no name (NonVoter in its membership entry), or m
// said it does not stand for x (PeerCandidate on the other members,
// Options.Abstain or SetCandidate on m itself). A non-candidate still
// hosts the name: it follows and reports the coordinator and its term, and
// it is heartbeated; it never stands, is never handed the role, and, with
// the quorum guard, does not acknowledge heartbeats: it is no part of the
// name's majority, whose size Options.QuorumSize gives (the number of
// candidates; at most that many members may stand for the name at once,
// as the guard requires of voters).
//
// Every member must learn the same candidacies (and ratings) of the
// others, as the membership layer makes it learn ratings today: a member
// that believes a non-candidate stands may wait for it in an election.
//
// The core fixes a node's own candidacy when it builds it, so
// SetCandidate builds the name's node anew, as a member that restarts
// would be: a coordinator that stops standing resigns first (the next
// candidate by rating succeeds it) and is rebuilt once its hand-off is
// over; the new node learns the coordinator and term from its heartbeats.
//
// # Placement
//
// The core elects the live candidate of highest (rating, ID); a placement
// is the rating each member has for each name.
//
//   - PlaceRating: the member's own rating, for every name (the bully rule,
//     as with one election).
//   - PlaceSpread: weighted rendezvous hashing (SpreadRating): each member
//     is rated per name by a stable hash of the name and its ID, weighted
//     by its rating (Weight), so that each member ranks first for its
//     weight's share of the names. Pure rendezvous hashing leaves
//     binomial imbalance (at n = 20 and 1,000 names the busiest member
//     leads about 1.26 times the mean), so the first place is
//     load-bounded: names, in the order of their hash, are assigned to
//     their highest-rated candidate that leads fewer than ceil(1.15 * its
//     weight's share of the spread names), and that member rates
//     2*2^44 above its rendezvous rating (consistent hashing with bounded
//     loads). The next places are the assigned member's successors, in
//     the name's own rendezvous order, each rating 2^44 above it: the
//     3*HeartbeatWatchers members that rank highest for that member by
//     rendezvous hashing of the two IDs (12 with the defaults). The other
//     members follow in plain rendezvous order.
//
// Successors make the failure detector a member's, not a name's. A
// name's watchers (the members its coordinator heartbeats every round,
// whose detectors act on its silence: core, "Heartbeat fan-out") are
// the HeartbeatWatchers live candidates ranked highest after the
// coordinator, so the watchers of all the names a member leads are
// among its successors, and its heartbeat rotation, which follows the
// ring order shared by every name and numbers the intervals on the
// group's clock (core.Host.SetClock), visits the same members in the
// same interval for all its names. However many names a member leads, it
// sends one packet per interval to each of its successors and to about
// HeartbeatBatch (B) others: at most 3W + B members a round (17 with the
// defaults) against a one-name coordinator's W + B (9). With plain
// rendezvous order the watchers of its names would be spread over every
// member, each heartbeated every round. Its silence reaches all the names
// it led through the same packets, so a watcher's detectors give up on
// all the names it watches in the same tick; its names go to its
// successors, each to the one it ranks first, in proportion to their
// weights.
//
// Ratings are int64, computed in integer arithmetic, and depend only on
// the name, the member IDs and ratings, the spread names and the
// candidacies: every member that knows the same computes the same. A
// crash or a recovery changes no rating, so the names of the living never
// move when a member fails; a member that joins, or a change of rating,
// of candidacy or of the spread names, moves the few names whose first
// place changes. The group works the assignment out again, in
// O(names * members) (BenchmarkPlace), at most once a HeartbeatInterval
// however many changes came together, and for a name added before its
// start-up delay ends (BenchmarkAddBurst). A member that returns takes its
// names back only as the core's preemption policy says (PreemptAlways:
// at once; PreemptNever: never while their coordinators live).
//
// Members are never forgotten (as in a core.Roster): a member that left
// for good still counts in the load bound, and its names' first places
// stay with it.
//
// # Batching
//
// Ready returns the messages to send grouped by destination: one Batch
// per destination, holding a (name, core.Message) pair for every name
// that has something for it. A coordinator's heartbeat rounds run on each
// name's own clock, from the tick it won, so the group aligns them: the
// group's round instants are the multiples of HeartbeatInterval of its
// own tick count, and
//
//   - routine heartbeats (a round of the same term and confirmation as the
//     name's round before) wait in the group until the next instant, so
//     that every name's round to a destination goes in one packet per
//     interval;
//   - everything else goes with the next Ready: election traffic, acks,
//     releases, and the first round of a term or of a change of
//     confirmation;
//   - a name led with the quorum guard whose rounds fall between instants
//     is given a round at the next instant (core.Node.VerifyRound), after
//     which its rounds fall on the instants and never wait (a held round's
//     acks would come back late, and the lease the core asks for would
//     stretch). Without the guard a round cannot be moved so, and waits:
//     the same few ticks every round, so that followers hear the same
//     period.
//
// Acks answer a batch of heartbeats, so they leave in one batch too: with
// the guard a member sends each other member one packet of heartbeats and
// one of acks per interval, whatever the number of names.
//
// # Time
//
// The group counts ticks as a core.Node does; Tick is Skip(1) for every
// name (core.Node.Skip: the same as Tick, in O(1) while nothing is due),
// Advance passes a late loop's jump on, and NextDeadline is the earliest
// of the names' deadlines and, while heartbeats wait, the next instant.
//
// # Drivers
//
// The simulator (package sim's Config.Names) and the runtime
// (election.Elector, and through it the root package's named elections)
// drive a Group each member; package membership carries its batches
// (one frame per destination).
package group

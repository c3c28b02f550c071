// Package coordelect elects one coordinator among the replicas of a
// service, with no external store: hashicorp/memberlist gossip supplies
// liveness and the member list, and an elector on top (bully by default)
// turns a suspected coordinator failure into an election.
//
// # Where to start
//
// Start builds the three parts a replica needs, in one call: a
// membership.Node (memberlist), an election.Elector running on it, and,
// with a prometheus.Registerer, their metrics (package metrics). The
// returned Handle answers who leads (Leader, IsLeader, Subscribe), checks
// a leader's term before its side effects (Check, LeaseContext,
// VerifyLeader), hands the role on (Resign, TransferTo), serves a status,
// leader, health and readiness http.Handler, and Close shuts everything
// down in order: hand-off, leave, shutdown. ExampleStart runs one replica
// on loopback.
//
//	h, err := coordelect.Start(ctx, coordelect.Config{
//		Identity: election.Identity{
//			Name:    "replica-1",
//			Rating:  3,
//			Payload: "10.0.0.1:8080", // where clients reach this replica
//		},
//		BindAddr: "10.0.0.1:7946",
//		Seeds:    []string{"10.0.0.2:7946"},
//		Callbacks: election.Callbacks{
//			OnStartedLeading: func(ctx context.Context, term uint64) {
//				h := coordelect.FromContext(ctx) // this member's Handle
//				runLeaderWork(ctx, h, term)      // h.Check(term) before each side effect
//			},
//		},
//	})
//	if err != nil { ... }
//	defer h.Close(context.Background())
//
// The term handed to OnStartedLeading is a fencing token: package fencing
// keeps a store from taking the writes of a deposed coordinator
// (election.Callbacks.Claim). election.Config.QuorumSize, set through
// Config.Election, turns on the quorum guard, under which a coordinator
// leads only while a majority of the voters acknowledges it.
//
// The lower layers stay usable on their own (packages election,
// membership and metrics); Start is the assembly docs/design.md
// describes. The local member's identity (election.Identity: Name,
// Rating, NonVoter, Algorithm, Payload) is set once, in Config: the
// membership layer publishes it and the elector reads it from there
// (election.Transport.Identity); no other configuration holds it.
//
// What is guaranteed, the algorithms and the failure model are in
// docs/design.md and docs/algorithms.md; running it, its metrics and its
// alerts in docs/operations.md.
package coordelect

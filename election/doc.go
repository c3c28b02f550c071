// Package election is the runtime driver of coordelect: it runs one of the
// election algorithms of package core (bully by default) for one node of a
// service, over a Transport (package membership implements it on
// hashicorp/memberlist; package electiontest in memory), and tells the
// service who leads.
//
// One goroutine per Elector owns the core.Node. It sleeps until the node's
// next deadline (core.Node.NextDeadline) and brings the node's clock, in
// ticks of Config.Tick, to the monotonic clock at each wake; transport
// events become Step, PeerUp, PeerDown and PeerRating; local requests
// (Resign, SetRating) are run on the same goroutine. After every event the loop sends what the node queued and
// reports changes: observers (Observe, Leader, IsLeader, Status), the
// Callbacks (on a notifier goroutine, while any are due), the Recorder and the
// logger. Nothing the loop calls may block it.
//
//	e, err := election.New(election.Config{
//		Transport: tr, // gives this node's Identity: name, rating, algorithm
//		Callbacks: election.Callbacks{
//			OnStartedLeading: func(ctx context.Context, term uint64) {
//				span, _ := election.SpanFromContext(ctx)
//				runLeaderWork(ctx, span) // span.Check() before each write; returns when ctx is done
//			},
//		},
//	})
//	if err != nil { ... }
//	go e.Run(ctx) // on ctx's end a leader hands off before Run returns
//
// # Terms are fencing tokens
//
// Every coordinator has a term: epoch<<32 | tag, where the epoch counts
// elections and the tag names the winner (core.Term, core.Tag). A term is
// unique per coordinator, even on the two sides of a partition, and a new
// coordinator's term is greater than every term its electorate has seen.
// The election alone cannot stop a deposed coordinator that has not yet
// heard of its successor (a pause, a partition) from acting: guard every
// write to shared state with the term handed to OnStartedLeading. The
// store remembers the highest term that has written and refuses writes with
// a lower one (a fencing token, as in Chubby's sequencers). See
// docs/design.md.
//
// # Leadership spans
//
// This node's leadership comes in spans: maximal intervals during which
// it is the valid leader (Check passes). Each span has its own context,
// cancelled when it ends, and its own Claim, OnStartedLeading and
// OnStoppedLeading; the context carries the Span (SpanFromContext), whose
// Check, Valid, Deadline and Verify answer for that span alone. With the
// quorum guard a term can hold several spans: a lease that lapses and is
// confirmed again in the same term starts a new one, with the next
// Span.Number.
//
// # Quorum guard
//
// With Config.QuorumSize = S > 0, a coordinator leads only while a majority
// of S members acknowledges its heartbeats within Config.QuorumLease; when
// the lease lapses it stops leading (the span's context is cancelled) and
// followers stop reporting it. A minority side of a
// partition then reports no coordinator instead of electing its own.
// Without the guard each side of a partition elects a coordinator (split
// brain); terms still order them.
package election

package election

import "fmt"

// IdentityTransport is an optional capability of a Transport that
// publishes this node's identity to the other members (membership.Node
// does). New compares what it publishes with the Config and refuses a
// mismatch, naming the field and both values: a node whose elector and
// membership disagree on its rating or its non-voter flag would rank
// itself differently from how the others rank it (a non-voter set on the
// elector only would be handed the coordinator role by Resign, and ignore
// it).
//
// LocalIdentity is called once, by New; it must not block.
type IdentityTransport interface {
	Transport
	// LocalIdentity returns this node's published rating, non-voter flag
	// and algorithm name (core.Algorithm.String()); algorithm "" means the
	// transport publishes none, and is not compared.
	LocalIdentity() (rating int64, nonVoter bool, algorithm string)
}

// checkIdentity refuses a Config that disagrees with what its Transport
// publishes about this node.
func (c *Config) checkIdentity(v *validator) {
	it, ok := c.Transport.(IdentityTransport)
	if !ok {
		return
	}
	rating, nonVoter, alg := it.LocalIdentity()
	mismatch := func(field string, ours, theirs any) {
		v.errs = append(v.errs, fmt.Errorf(
			"election: Config.%s = %v but the Transport publishes %v for this node: set both from one value (coordelect.Config, or membership.Config.SetElection)",
			field, ours, theirs))
	}
	if rating != c.Rating {
		mismatch("Rating", c.Rating, rating)
	}
	if nonVoter != c.NonVoter {
		mismatch("NonVoter", c.NonVoter, nonVoter)
	}
	if alg != "" && alg != c.Algorithm.String() {
		mismatch("Algorithm", c.Algorithm, fmt.Sprintf("%q", alg))
	}
}

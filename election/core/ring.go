package core

// newRingAlgorithm is replaced by the ring and active/relay implementations.
func newRingAlgorithm(n *Node, a Algorithm) algorithm { return &bully{n: n} }

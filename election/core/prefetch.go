package core

import (
	"unsafe"

	"github.com/coordelect/coordelect/internal/prefetch"
)

// A driver's hint to load a node's algorithm state ahead of its next
// input. Invariant: it changes no state of the node; a driver that never
// calls it sees the same behaviour.

// PrefetchState asks the processor to load the first cache lines of the
// node's algorithm state, which lives apart from the Node and which most
// inputs read (Skip counts its timers down, NextDeadline reads them), and
// returns without waiting for them. It is a hint for a driver that knows
// which node its next input goes to (the simulator: at n = 10,000 the
// first read of that state was a cache miss per event). It does nothing
// while the algorithm is quiet (a ring member between elections): a
// heartbeat then reads none of it.
func (n *Node) PrefetchState() {
	if !n.algorithmQuiet() { // inlined: a quiet member costs no call
		n.prefetchState()
	}
}

func (n *Node) prefetchState() {
	var p unsafe.Pointer
	var size uintptr
	switch a := n.alg.(type) {
	case *peterson:
		p, size = unsafe.Pointer(a), unsafe.Sizeof(*a)
	case *ring:
		p, size = unsafe.Pointer(a), unsafe.Sizeof(*a)
	case *bully:
		p, size = unsafe.Pointer(a), unsafe.Sizeof(*a)
	default:
		return
	}
	prefetch.Lines(p, min(stateLines, int(size+63)/64))
}

// stateLines is how many cache lines PrefetchState asks for: what Skip
// and NextDeadline read of the rings' state (the link and the election's
// timer) and most of bully's.
const stateLines = 3

//go:build !amd64

package prefetch

import "unsafe"

// Lines reads the first byte at p, so that its cache line loads while
// the event before runs (a load, not a prefetch: it waits for the line).
// lines is ignored.
func Lines(p unsafe.Pointer, lines int) {
	prefetchSink += *(*byte)(p)
}

// prefetchSink keeps prefetch's reads from being dropped.
var prefetchSink byte

package prefetch

import "unsafe"

// Lines asks the processor to load the lines cache lines (64 bytes
// each) that start at p, and returns without waiting for them
// (PREFETCHT0). It reads nothing and cannot fault.
//
//go:noescape
func Lines(p unsafe.Pointer, lines int)

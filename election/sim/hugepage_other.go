//go:build !linux

package sim

import "unsafe"

// adviseHuge does nothing: huge pages are asked for on Linux only.
func adviseHuge(p unsafe.Pointer, size uintptr) {}

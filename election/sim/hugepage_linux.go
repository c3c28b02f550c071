package sim

import (
	"syscall"
	"unsafe"
)

// adviseHuge asks the kernel to back the memory at p..p+size with huge
// pages (madvise MADV_HUGEPAGE; this machine's transparent huge pages are
// madvise-only), before it is first touched: a 1-GB slice then faults in
// 2-MB pages instead of 4-KB ones. Only whole 4-KB pages inside the range
// are advised; a refusal changes nothing but the speed, and is ignored.
func adviseHuge(p unsafe.Pointer, size uintptr) {
	const page = 4096
	start := (uintptr(p) + page - 1) &^ (page - 1)
	end := (uintptr(p) + size) &^ (page - 1)
	if size < 4<<20 || end <= start {
		return // too small to hold an aligned huge page worth the call
	}
	mem := unsafe.Slice((*byte)(unsafe.Add(p, start-uintptr(p))), end-start)
	_ = syscall.Madvise(mem, syscall.MADV_HUGEPAGE)
}

// Package grow sizes the slices that every member keeps of every other
// (membership's table, the election core's roster), and gives back the
// room of maps that a burst grew.
package grow

import "maps"

// RoomForOne returns s with room for one more element: s itself, or a
// copy 1/8 larger (and 8). append (slices.Insert, slices.Grow) doubles a
// slice of up to 256 elements and grows a larger one by 1/4 or more, so up
// to a fifth of a large per-member slice stood unused: at n = 1,000 each
// member's roster ring grew from 832 to 1,232 places. The slices it grows
// take an O(n) insert anyway, so the more frequent copies change no order.
func RoomForOne[T any](s []T) []T {
	if len(s) < cap(s) {
		return s
	}
	out := make([]T, len(s), len(s)+len(s)/8+8)
	copy(out, s)
	return out
}

// Clip returns s without its spare room: s itself if it has none, else a
// copy as long as s (one allocation), so that the array RoomForOne grew,
// up to an eighth of it unused, can be collected. Pointers into s stay
// valid for s, not for the copy.
func Clip[T any](s []T) []T {
	if len(s) == cap(s) {
		return s
	}
	out := make([]T, len(s))
	copy(out, s)
	return out
}

// ShrinkMap returns m, or a copy of it once it holds less than an eighth
// of peak, the most entries it has held since it was made (64 at least):
// a map keeps the room it grew to. The caller keeps peak up to date as m
// grows; ShrinkMap sets it to the copy's size.
func ShrinkMap[K comparable, V any](m map[K]V, peak *int) map[K]V {
	if *peak < 64 || 8*len(m) > *peak {
		return m
	}
	out := make(map[K]V, len(m))
	maps.Copy(out, m)
	*peak = len(out)
	return out
}

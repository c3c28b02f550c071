// Package grow sizes the slices that every member keeps of every other
// (membership's table, the election core's roster).
package grow

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

package grow

import "testing"

func TestRoomForOne(t *testing.T) {
	s := make([]int, 3, 4)
	if got := RoomForOne(s); &got[0] != &s[0] {
		t.Error("a slice with room was copied")
	}
	full := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	got := RoomForOne(full)
	if len(got) != 16 || cap(got) != 16+2+8 {
		t.Errorf("len %d cap %d, want 16 and 26", len(got), cap(got))
	}
	for i, v := range full {
		if got[i] != v {
			t.Fatalf("element %d = %d, want %d", i, got[i], v)
		}
	}
	if got := RoomForOne[int](nil); cap(got) != 8 {
		t.Errorf("nil: cap %d, want 8", cap(got))
	}
}

func TestClip(t *testing.T) {
	full := []int{1, 2, 3}
	if got := Clip(full); &got[0] != &full[0] {
		t.Error("a slice without spare room was copied")
	}
	roomy := RoomForOne(full) // cap 3 + 0 + 8
	roomy = append(roomy, 4)
	got := Clip(roomy)
	if len(got) != 4 || cap(got) != 4 {
		t.Fatalf("len %d cap %d, want 4 and 4", len(got), cap(got))
	}
	if &got[0] == &roomy[0] {
		t.Error("the clipped slice shares the grown array")
	}
	for i, v := range roomy {
		if got[i] != v {
			t.Fatalf("element %d = %d, want %d", i, got[i], v)
		}
	}
	if got := Clip(make([]int, 0, 5)); len(got) != 0 || cap(got) != 0 {
		t.Errorf("empty with room: len %d cap %d, want 0 and 0", len(got), cap(got))
	}
}

func TestShrinkMap(t *testing.T) {
	m := map[int]bool{}
	peak := 0
	for i := range 100 {
		m[i] = true
		peak = max(peak, len(m))
	}
	for i := range 87 {
		delete(m, i)
		if got := ShrinkMap(m, &peak); len(got) != len(m) {
			t.Fatalf("ShrinkMap kept %d of %d entries", len(got), len(m))
		}
	}
	if peak != 100 {
		t.Fatalf("13 of a peak of 100: copied (peak %d), want kept", peak)
	}
	delete(m, 87)
	if got := ShrinkMap(m, &peak); len(got) != 12 || peak != 12 || !got[99] || got[87] {
		t.Fatalf("12 of a peak of 100: got %d entries, peak %d; want a copy of 12", len(got), peak)
	}
	small, p := map[int]bool{1: true}, 40
	if ShrinkMap(small, &p); p != 40 {
		t.Fatalf("a peak below 64: copied, want kept")
	}
}

package election

import "testing"

// TestCandidateBits: a member's candidacy reads back as set, the first
// 64 members' in place and the others' in the words made for them, and
// the bits are empty once no member runs the name.
func TestCandidateBits(t *testing.T) {
	var b candidateBits
	if !b.empty() {
		t.Fatal("new bits not empty")
	}
	b.set(130, false, false) // clear already: nothing is made
	if b.more != nil {
		t.Fatal("clearing a bit made words")
	}
	members := []int{0, 5, 63, 64, 127, 128, 200}
	for k, i := range members {
		b.set(i, true, k%2 == 0)
	}
	for k, i := range members {
		if runs, stands := b.get(i); !runs || stands != (k%2 == 0) {
			t.Errorf("member %d: runs %v stands %v, want true %v", i, runs, stands, k%2 == 0)
		}
	}
	if runs, stands := b.get(1); runs || stands {
		t.Error("member 1 set")
	}
	if runs, _ := b.get(1000); runs {
		t.Error("member 1000 set")
	}
	for _, i := range members {
		b.set(i, false, false)
	}
	if !b.empty() {
		t.Fatal("bits not empty once every member is cleared")
	}
}

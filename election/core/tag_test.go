package core

import (
	"strconv"
	"testing"
)

// tagSeeds are IDs at the edges of what strconv.ParseUint(id, 10, 32)
// accepts, which decimal32 must read as it does.
var tagSeeds = []string{
	"", "0", "1", "7", "007", "100", "4294967295", "4294967296", "04294967295",
	"00000000000000000000001", "99999999999999999999", "18446744073709551616",
	"+1", "-1", "1_000", "0x10", "0b1", " 1", "1 ", "1a", "a1", "node-1",
	"\u0661", "12\u00003", "host.example:7946",
}

// TestDecimal32 checks decimal32 against strconv.ParseUint on the seeds.
func TestDecimal32(t *testing.T) {
	for _, id := range tagSeeds {
		checkDecimal32(t, id)
	}
}

// FuzzDecimal32 checks decimal32 against strconv.ParseUint.
func FuzzDecimal32(f *testing.F) {
	for _, id := range tagSeeds {
		f.Add(id)
	}
	f.Fuzz(checkDecimal32)
}

func checkDecimal32(t *testing.T, id string) {
	v, err := strconv.ParseUint(id, 10, 32)
	got, ok := decimal32(id)
	if ok != (err == nil) || ok && uint64(got) != v {
		t.Fatalf("decimal32(%q) = %d, %v; strconv.ParseUint: %d, %v", id, got, ok, v, err)
	}
}

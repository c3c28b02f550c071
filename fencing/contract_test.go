package fencing_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/coordelect/coordelect/fencing"
)

// checkContract runs the rules of fencing.Fence against f: write(line)
// makes the change "append line", and ledger returns the lines that took
// effect.
func checkContract[W any](t *testing.T, f fencing.Fence[W], write func(line string) W, ledger func() []string) {
	t.Helper()
	ctx := context.Background()
	step := func(what string, err, want error) {
		t.Helper()
		if want == nil && err != nil || want != nil && !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", what, err, want)
		}
	}
	step("Write before any Claim", f.Write(ctx, 1, write("x")), fencing.ErrUnclaimed)
	step("Claim(5)", f.Claim(ctx, 5), nil)
	step("Claim(5) again", f.Claim(ctx, 5), nil)
	step("Write(5)", f.Write(ctx, 5, write("a")), nil)
	step("Claim(4) below the fence", f.Claim(ctx, 4), fencing.ErrStale)
	step("Write(4) below the fence", f.Write(ctx, 4, write("x")), fencing.ErrStale)
	step("Write(6) above the fence", f.Write(ctx, 6, write("x")), fencing.ErrUnclaimed)
	step("Claim(7)", f.Claim(ctx, 7), nil)
	step("Write(5) once 7 claimed, before 7 wrote", f.Write(ctx, 5, write("x")), fencing.ErrStale)
	step("Write(7)", f.Write(ctx, 7, write("b")), nil)
	if got := ledger(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("the changes that took effect: %q, want [a b]", got)
	}
}

// Memory keeps the contract of fencing.Fence.
func TestMemoryContract(t *testing.T) {
	var m fencing.Memory
	var lines []string
	checkContract(t, &m, func(line string) func() error {
		return func() error { lines = append(lines, line); return nil }
	}, func() []string { return lines })
}

// The HTTP store of Example_store keeps the contract of fencing.Fence.
func TestExampleStoreContract(t *testing.T) {
	srv := &ledgerServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	checkContract(t, ledgerClient{url: ts.URL}, func(line string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, line); return err }
	}, srv.ledger)
}

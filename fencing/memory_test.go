package fencing_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/coordelect/coordelect/fencing"
)

func TestMemoryClaimAndWrite(t *testing.T) {
	ctx := context.Background()
	var m fencing.Memory
	if err := m.Write(ctx, 1, func() error { return nil }); !errors.Is(err, fencing.ErrUnclaimed) {
		t.Fatalf("write before any claim: %v, want ErrUnclaimed", err)
	}
	if err := m.Claim(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if err := m.Claim(ctx, 5); err != nil {
		t.Fatalf("re-claim of the same term: %v, want nil", err)
	}
	ran := false
	if err := m.Write(ctx, 5, func() error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("write in the claimed term: %v (ran %v)", err, ran)
	}
	if err := m.Claim(ctx, 4); !errors.Is(err, fencing.ErrStale) {
		t.Fatalf("claim of an older term: %v, want ErrStale", err)
	}
	if err := m.Claim(ctx, 9); err != nil {
		t.Fatal(err)
	}
	// The deposed term 5 is refused although term 9 has not written yet.
	ran = false
	if err := m.Write(ctx, 5, func() error { ran = true; return nil }); !errors.Is(err, fencing.ErrStale) || ran {
		t.Fatalf("write of a deposed term: %v (ran %v), want ErrStale and fn not run", err, ran)
	}
	boom := errors.New("boom")
	if err := m.Write(ctx, 9, func() error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("fn's error: %v", err)
	}
	if term, writes := m.Term(); term != 9 || writes != 1 {
		t.Fatalf("Term() = %d, %d; want 9, 1 (the failed fn does not count)", term, writes)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := m.Claim(cancelled, 10); !errors.Is(err, context.Canceled) {
		t.Fatalf("claim with a cancelled context: %v", err)
	}
}

// TestMemoryConcurrentTerms: writers of many terms race with the claims of
// later terms; the writes that get through are in non-decreasing term
// order, and none is older than a claim that had returned before it began.
func TestMemoryConcurrentTerms(t *testing.T) {
	ctx := context.Background()
	var (
		m       fencing.Memory
		mu      sync.Mutex
		log     []uint64 // terms of the accepted writes, in order
		claimed = make([]chan struct{}, 21)
		wg      sync.WaitGroup
	)
	for i := range claimed {
		claimed[i] = make(chan struct{})
	}
	for term := uint64(1); term <= 20; term++ {
		wg.Go(func() {
			if err := m.Claim(ctx, term); err != nil && !errors.Is(err, fencing.ErrStale) {
				t.Error(err)
			}
			close(claimed[term])
			for range 50 {
				err := m.Write(ctx, term, func() error {
					mu.Lock()
					log = append(log, term)
					mu.Unlock()
					return nil
				})
				if err != nil && !errors.Is(err, fencing.ErrStale) {
					t.Error(err)
				}
			}
		})
	}
	// A writer of term 1 that starts after term 20's claim has returned
	// must be refused every time.
	<-claimed[20]
	if err := m.Write(ctx, 1, func() error { return nil }); !errors.Is(err, fencing.ErrStale) {
		t.Errorf("term 1 after term 20 claimed: %v, want ErrStale", err)
	}
	wg.Wait()
	for i := 1; i < len(log); i++ {
		if log[i] < log[i-1] {
			t.Fatalf("write %d in term %d after a write in term %d", i, log[i], log[i-1])
		}
	}
	if _, writes := m.Term(); writes != uint64(len(log)) {
		t.Fatalf("writes = %d, log has %d", writes, len(log))
	}
}

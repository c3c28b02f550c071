package fencing

import (
	"context"
	"fmt"
	"sync"
)

// Memory is a fence in this process's memory, with the same rules as SQL:
// for tests, examples and services whose shared state lives in one process.
// The zero value holds term 0, ready to be claimed. Its methods may be
// called concurrently.
type Memory struct {
	mu     sync.Mutex
	term   uint64
	writes uint64
}

// Claim advances the fence to term. It returns ErrStale if the fence is
// already past term and nil if it holds term already (a retried Claim).
func (m *Memory) Claim(ctx context.Context, term uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.term > term {
		return fmt.Errorf("%w: claiming term %s, the fence holds %s", ErrStale, termText(term), termText(m.term))
	}
	m.term = term
	return nil
}

// Write runs fn while the fence holds term, with the fence locked (a Claim
// waits until fn returns): it returns ErrStale if a later term holds the
// fence, ErrUnclaimed if term never claimed it, else fn's error. fn must
// not call m's methods.
func (m *Memory) Write(ctx context.Context, term uint64, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.term > term:
		return fmt.Errorf("%w: write in term %s, the fence holds %s", ErrStale, termText(term), termText(m.term))
	case m.term < term:
		return fmt.Errorf("%w: write in term %s, the fence holds %s", ErrUnclaimed, termText(term), termText(m.term))
	}
	if err := fn(); err != nil {
		return err
	}
	m.writes++
	return nil
}

// Term returns the term the fence holds and the number of writes it let
// through.
func (m *Memory) Term() (term, writes uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.term, m.writes
}

package electiontest

import (
	"context"
	"fmt"
	"strings"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
)

// Member is one Elector of a test cluster, running in a goroutine of its
// own from Run until it is halted or stopped. The in-memory Cluster here
// and the real-memberlist one in membership/membershiptest both run their
// Electors as Members; so can a benchmark.
type Member struct {
	Name    string
	Elector *election.Elector

	cancel context.CancelFunc
	done   chan struct{} // closed when Run has returned
	err    error         // what Run returned, once done is closed
}

// Run creates an Elector from cfg (cfg.Transport set) and runs it until
// Halt or Stop, or until its transport closes.
func Run(name string, cfg election.Config) (*Member, error) {
	e, err := election.New(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Member{Name: name, Elector: e, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		m.err = e.Run(ctx)
	}()
	return m, nil
}

// Wait waits until Run has returned and returns its error. It may be
// called any number of times.
func (m *Member) Wait() error {
	<-m.done
	return m.err
}

// Done is closed when Run has returned.
func (m *Member) Done() <-chan struct{} { return m.done }

// Halt stops the Elector as a crash does: Close first (no hand-off), then
// the end of Run's context; it returns what Run returned.
func (m *Member) Halt() error {
	m.Elector.Close()
	m.cancel()
	return m.Wait()
}

// Stop ends Run's context, as a service shutting down does: a coordinator
// hands off first. It returns what Run returned.
func (m *Member) Stop() error {
	m.cancel()
	return m.Wait()
}

// Agree reports the leadership that every one of ms reports: ok is false
// when ms is empty, when one of them reports no coordinator, or when two
// differ in coordinator or term.
func Agree(ms ...*Member) (leader string, term uint64, ok bool) {
	for i, m := range ms {
		l, tm, has := m.Elector.Leader()
		if !has || i > 0 && (l != leader || tm != term) {
			return "", 0, false
		}
		leader, term = l, tm
	}
	return leader, term, len(ms) > 0
}

// Describe prints what each of ms reports, one line each, for failure
// messages.
func Describe(ms ...*Member) string {
	var b strings.Builder
	for _, m := range ms {
		st := m.Elector.Status()
		fmt.Fprintf(&b, "\n  %s: state=%v coordinator=%q term=%v electing=%v",
			m.Name, st.State, st.Coordinator, core.Term(st.Term), st.Electing)
	}
	return b.String()
}

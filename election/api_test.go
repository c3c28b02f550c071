package election_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/electiontest"
)

// newSolo returns an Elector on a fresh network, not running.
func newSolo(t *testing.T, tune func(*election.Config)) (*election.Elector, *electiontest.Network) {
	t.Helper()
	net := electiontest.NewNetwork()
	cfg := election.Config{Transport: net.MustJoin(election.Identity{Name: "solo", Rating: 1})}
	if tune != nil {
		tune(&cfg)
	}
	e, err := election.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e, net
}

// TestCloseIdempotent: Close may be called any number of times, from many
// goroutines, during and after Run; the Elector runs only once.
func TestCloseIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := newSolo(t, nil)
		run := make(chan error, 1)
		go func() { run <- e.Run(context.Background()) }()
		synctest.Wait()
		if err := e.Run(context.Background()); !errors.Is(err, election.ErrRunning) {
			t.Errorf("second concurrent Run = %v, want ErrRunning", err)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { e.Close() })
		}
		wg.Wait()
		if err := <-run; err != nil {
			t.Errorf("Run = %v after Close, want nil", err)
		}
		if err := e.Close(); err != nil {
			t.Errorf("Close after Close = %v", err)
		}
		for name, err := range map[string]error{
			"Run":       e.Run(context.Background()),
			"Resign":    e.Resign(context.Background()),
			"SetRating": e.SetRating(5),
		} {
			if !errors.Is(err, election.ErrClosed) {
				t.Errorf("%s after Close = %v, want ErrClosed", name, err)
			}
		}
	})
}

// TestCloseBeforeRun: an Elector closed before it ran refuses to run and
// closes its observers.
func TestCloseBeforeRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := newSolo(t, nil)
		ch := e.Observe()
		e.Close()
		if err := e.Run(context.Background()); !errors.Is(err, election.ErrClosed) {
			t.Errorf("Run after Close = %v, want ErrClosed", err)
		}
		<-ch // the initial value
		if _, ok := <-ch; ok {
			t.Error("Observe channel open after Close without Run")
		}
		if !e.Status().Stopped {
			t.Error("status not stopped after Close")
		}
	})
}

// TestSingleNode: a lone node elects itself after its start-up window;
// SetRating before Run is applied and Status reports it.
func TestSingleNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := newSolo(t, nil)
		if err := e.SetRating(9); err != nil {
			t.Fatal(err)
		}
		if st := e.Status(); st.State != core.StateSleep || st.Rating != 9 || len(st.Members) != 1 {
			t.Errorf("status before Run = %+v", st)
		}
		ctx, cancel := context.WithCancel(context.Background())
		run := make(chan error, 1)
		go func() { run <- e.Run(ctx) }()
		took := electiontest.Eventually(t, time.Second, e.IsLeader, func() string { return fmt.Sprint(e.Status()) })
		if took < election.DefaultHeartbeatInterval || took > election.DefaultHeartbeatInterval+time.Millisecond {
			t.Errorf("lone node led after %v, want the start-up window %v", took, election.DefaultHeartbeatInterval)
		}
		cancel()
		if err := <-run; err != nil {
			t.Errorf("Run = %v", err)
		}
	})
}

// TestObserveLatestValue: an Observe channel holds the current value at
// once, keeps only the newest of several changes nobody read, never holds
// up the election, and is closed after a final empty value.
func TestObserveLatestValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, voters(5), nil)
		a := c.members["a"]
		ch := a.e.Observe()
		if l := <-ch; l.Known() {
			t.Fatalf("initial value %v, want none yet", l)
		}
		leader := "e"
		term, _ := c.waitAgreed(time.Second, leader, 0)
		// Three hand-offs (e -> d -> e -> d: the next by rating) while
		// nobody reads ch.
		for range 3 {
			if err := c.members[leader].e.Resign(context.Background()); err != nil {
				t.Fatal(err)
			}
			prev := term
			electiontest.Eventually(t, time.Second, func() bool {
				l, tm := c.agreed()
				leader, term = l, tm
				return l != "" && tm > prev
			}, c.describe)
		}
		if n := len(ch); n != 1 {
			t.Fatalf("channel holds %d values, want 1", n)
		}
		want := election.Leadership{Coordinator: leader, Term: term}
		if got := <-ch; got != want {
			t.Errorf("read %v, want the newest %v", got, want)
		}
		select {
		case l := <-ch:
			t.Errorf("a second value %v was queued", l)
		default:
		}
		a.e.Close()
		if l, ok := <-ch; !ok || l.Known() {
			t.Errorf("after Close read %v (open %v), want a final empty value", l, ok)
		}
		if _, ok := <-ch; ok {
			t.Error("channel still open after Close")
		}
		if l, ok := <-a.e.Observe(); !ok || l.Known() {
			t.Errorf("Observe after Close gave %v (open %v)", l, ok)
		}
	})
}

// TestCallbacksOrder: a leader whose OnStartedLeading blocks on its context
// (the client-go pattern) is displaced; its context is cancelled, and the
// later callbacks arrive in order once it returns.
func TestCallbacksOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		specs := voters(3)
		c := newCluster(t, specs[:2], nil)
		b := c.members["b"]
		b.cb.block = true // set before b first leads; read under no race: b's notifier starts later
		first, _ := c.waitAgreed(time.Second, "b", 0)
		c.specs["c"] = specs[2]
		c.start("c")
		second, _ := c.waitAgreed(time.Second, "c", first)
		synctest.Wait()
		events, ctxs := b.cb.snapshot()
		want := []string{
			"leader b@" + core.Term(first).String(), "started " + core.Term(first).String(),
			"stopped", "leader c@" + core.Term(second).String(),
		}
		if !slices.Equal(events, want) {
			t.Errorf("callbacks = %q, want %q", events, want)
		}
		if ctxs[0].Err() == nil {
			t.Error("leadership context not cancelled on step-down")
		}
	})
}

// TestMetricsAndStatus: the Recorder sees states, terms, messages,
// elections, their durations and members; Status reports the view.
func TestMetricsAndStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, voters(3), nil)
		old, _ := c.waitAgreed(time.Second, "c", 0)
		c.crash("c")
		term, _ := c.waitAgreed(time.Second, "b", old)
		electiontest.Hold(t, time.Millisecond, 2*heartbeat, termsSafe(c)) // let b heartbeat
		c.net.AnnounceDown("c")
		electiontest.Eventually(t, time.Second, func() bool { return c.members["a"].e.Status().AliveMembers() == 2 }, c.describe)
		synctest.Wait()

		b := c.members["b"].rec.snapshot()
		if b.state != core.StateCoordinator || b.term != term || b.leader != (election.Leadership{Coordinator: "b", Term: term, IsSelf: true}) {
			t.Errorf("b recorded state %v term %v leader %v", b.state, core.Term(b.term), b.leader)
		}
		if b.ElectionsWon != 1 || b.ElectionsStarted < 2 || b.leaderChanges != 2 {
			t.Errorf("b recorded elections %d won of %d started, leader changes %d", b.ElectionsWon, b.ElectionsStarted, b.leaderChanges)
		}
		if b.sent[core.MsgHeartbeat] == 0 || b.Received[core.MsgCoordinator] == 0 || b.HeartbeatMisses < 3 {
			t.Errorf("b recorded sent %v received %v misses %d", b.sent, b.Received, b.HeartbeatMisses)
		}
		if a := c.members["a"].rec.snapshot(); a.Received[core.MsgHeartbeat] == 0 {
			t.Errorf("a recorded received %v, want b's heartbeats", a.Received)
		}
		// b's failover: from missing K heartbeats, through asking c and,
		// at once, a whether it hears c (a pre-vote): a's grant ends it
		// after a round trip, without waiting T for c's answer.
		answer, tick, rt := election.DefaultAnswerTimeout.Seconds(), election.DefaultTick.Seconds(), (2 * latency).Seconds()
		if len(b.durations) != 2 || b.durations[1] < rt || b.durations[1] > answer-tick || b.alive != 2 || b.known != 3 {
			t.Errorf("b recorded durations %v, members %d/%d", b.durations, b.alive, b.known)
		}
		st := c.members["a"].e.Status()
		wantMembers := []election.Member{{ID: "a", Rating: 1, Alive: true}, {ID: "b", Rating: 2, Alive: true}, {ID: "c", Rating: 3}}
		slices.SortFunc(st.Members, func(x, y election.Member) int { return strings.Compare(x.ID, y.ID) })
		if st.ID != "a" || st.Coordinator != "b" || st.Term != term || st.State != core.StateLost ||
			st.Algorithm != core.Bully || !slices.Equal(st.Members, wantMembers) || st.AliveMembers() != 2 {
			t.Errorf("a's status = %+v", st)
		}
	})
}

// TestLogging: the logger is named "election", carries the node, and logs
// leadership at Info.
func TestLogging(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		var mu sync.Mutex
		logger := hclog.New(&hclog.LoggerOptions{Name: "svc", Output: &lockedWriter{w: &buf, mu: &mu}, Level: hclog.Info})
		e, _ := newSolo(t, func(cfg *election.Config) { cfg.Logger = logger })
		ctx, cancel := context.WithCancel(context.Background())
		go e.Run(ctx)
		electiontest.Eventually(t, time.Second, e.IsLeader, func() string { return "" })
		cancel()
		e.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, want := range []string{"[INFO]  svc.election: started leading: node=solo term=1.", "new coordinator: node=solo coordinator=solo"} {
			if !strings.Contains(buf.String(), want) {
				t.Errorf("log lacks %q:\n%s", want, buf.String())
			}
		}
		if strings.Contains(buf.String(), "[DEBUG]") {
			t.Error("debug lines logged at level Info")
		}
	})
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestLossyNetwork: with a fifth of all messages lost, a 5-node cluster
// still settles on its highest-rated member and keeps it.
func TestLossyNetwork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, nil, nil)
		rng := rand.New(rand.NewPCG(1, 2))
		c.net.SetDrop(func(core.Message) bool { return rng.IntN(5) == 0 })
		for _, s := range voters(5) {
			c.specs[s.id] = s
			c.start(s.id)
		}
		c.waitAgreed(2*time.Second, "e", 0)
		electiontest.Hold(t, time.Millisecond, 3*time.Second, termsSafe(c))
		// Lost heartbeats make followers check on the coordinator now and
		// then; each time it answers with a fresh announcement.
		c.waitAgreed(time.Second, "e", 0)
		if dropped := c.net.Stats().Dropped; dropped < 50 {
			t.Errorf("only %d messages dropped; the test tested little", dropped)
		}
	})
}

// termsSafe returns a check of the term invariants: no node's term ever
// decreases, and a term only ever names one coordinator.
func termsSafe(c *cluster) func() error {
	last := map[string]uint64{}
	owner := map[uint64]string{}
	return func() error {
		for _, id := range c.ids() {
			st := c.members[id].e.Status()
			if st.Term < last[id] {
				return fmt.Errorf("%s: term went back from %v to %v", id, core.Term(last[id]), core.Term(st.Term))
			}
			last[id] = st.Term
			l, term, ok := c.members[id].e.Leader()
			if o, seen := owner[term]; ok && seen && o != l {
				return fmt.Errorf("term %v names both %s and %s", core.Term(term), o, l)
			}
			if ok {
				owner[term] = l
			}
		}
		return nil
	}
}

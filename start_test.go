package coordelect_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/coordelect/coordelect"
	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/membership"
)

// waitTimeout bounds every wait on the real network: generous for -race
// on a loaded machine; the usual case takes milliseconds.
const waitTimeout = 15 * time.Second

// replica is the configuration of one test replica on loopback.
func replica(name string, rating int64, seeds ...string) coordelect.Config {
	mo := membership.DefaultOptions()
	mo.Profile = membership.ProfileLocal
	return coordelect.Config{
		Identity: election.Identity{Name: name, Rating: rating, Payload: "http://" + name + ".example:8080"},
		BindAddr: "127.0.0.1:0", Seeds: seeds, Membership: &mo,
		Registerer: prometheus.NewRegistry(),
	}
}

// waitLeader waits until every handle reports want as the coordinator and
// returns the lowest term they report it in.
func waitLeader(t *testing.T, want string, hs ...*coordelect.Handle) uint64 {
	t.Helper()
	timeout := time.After(waitTimeout)
	var low uint64
	for _, h := range hs {
		sub := h.Subscribe()
		defer sub.Close()
		last := election.Leadership{}
		for last.Coordinator != want {
			select {
			case l, ok := <-sub.C:
				if !ok {
					t.Fatalf("%s stopped", h.Node().LocalID())
				}
				last = l
			case <-timeout:
				t.Fatalf("%s reports %v, want %s", h.Node().LocalID(), last, want)
			}
		}
		if low == 0 || last.Term < low {
			low = last.Term
		}
	}
	return low
}

// TestThreeReplicas runs three replicas as the README's example does, over
// real memberlist on loopback: they agree on the highest rating and its
// payload, the leader's Close hands off to the next rating in a higher
// term, TransferTo moves the role, and Close
// shuts everything down and unregisters the metrics (TestMain checks that
// no goroutine is left).
func TestThreeReplicas(t *testing.T) {
	ctx := context.Background()
	start := func(cfg coordelect.Config) *coordelect.Handle {
		h, err := coordelect.Start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close(ctx) })
		return h
	}
	a := start(replica("a", 1))
	b := start(replica("b", 2, a.Addr()))
	cCfg := replica("c", 3, a.Addr())
	c := start(cCfg)
	term := waitLeader(t, "c", a, b, c)
	if l := a.Leader(); l.Payload != "http://c.example:8080" || l.IsSelf {
		t.Errorf("a sees leader %v with payload %q", l, l.Payload)
	}
	if !c.IsLeader() || a.IsLeader() {
		t.Errorf("IsLeader: c %v, a %v", c.IsLeader(), a.IsLeader())
	}
	waitMembers(t, b, 3) // the election can agree before gossip has brought every member to b
	checkLeaderHandler(t, b.Handler(), "c", "http://c.example:8080")
	if n, err := testutil.GatherAndCount(cCfg.Registerer.(prometheus.Gatherer), "coordelect_is_coordinator"); err != nil || n != 1 {
		t.Errorf("c's registry: %d coordelect_is_coordinator series, %v", n, err)
	}

	if err := c.Close(ctx); err != nil {
		t.Fatalf("Close of the leader: %v", err)
	}
	if code := probeCode(c.Handler(), "/healthz"); code != http.StatusServiceUnavailable {
		t.Errorf("/healthz after Close: %d, want 503", code)
	}
	if n, _ := testutil.GatherAndCount(cCfg.Registerer.(prometheus.Gatherer)); n != 0 {
		t.Errorf("%d series left registered after Close", n)
	}
	if next := waitLeader(t, "b", a, b); next <= term {
		t.Errorf("term after the hand-off %d, want above %d", next, term)
	}
	if err := c.Close(ctx); err != nil {
		t.Errorf("second Close = %v", err)
	}
	select {
	case <-c.Done():
	default:
		t.Error("Done open after Close")
	}

	if err := b.TransferTo(ctx, "a"); err != nil {
		t.Fatalf("TransferTo(a) = %v", err)
	}
	waitLeader(t, "a", a, b)
	// The last two stop at once, as a whole service does: each leaves
	// while the other does, so neither leave is confirmed; that is no
	// error.
	var wg sync.WaitGroup
	for _, h := range []*coordelect.Handle{a, b} {
		wg.Go(func() {
			if err := h.Close(ctx); err != nil {
				t.Errorf("Close: %v", err)
			}
			if err := h.Err(); err != nil {
				t.Errorf("Err after Close = %v", err)
			}
		})
	}
	wg.Wait()
}

// waitMembers waits until h's membership holds n members alive.
func waitMembers(t *testing.T, h *coordelect.Handle, n int) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(waitTimeout)
	for {
		alive := 0
		for _, m := range h.Node().Members() {
			if m.Alive {
				alive++
			}
		}
		if alive == n {
			return
		}
		select {
		case <-tick.C:
		case <-timeout:
			t.Fatalf("%s: members %+v, want %d alive", h.Node().LocalID(), h.Node().Members(), n)
		}
	}
}

// checkLeaderHandler checks the /leader document h serves.
func checkLeaderHandler(t *testing.T, h http.Handler, coordinator, payload string) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/leader", nil))
	var doc election.LeaderDocument
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil || w.Code != http.StatusOK {
		t.Fatalf("/leader: %d %s (%v)", w.Code, w.Body, err)
	}
	if doc.Coordinator != coordinator || doc.Payload != payload || doc.Term == 0 {
		t.Errorf("/leader = %+v", doc)
	}
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/status", nil))
	var st election.StatusDocument
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || len(st.Members) != 3 {
		t.Fatalf("/status = %s (%v), want 3 members", w.Body, err)
	}
	for _, m := range st.Members {
		if !strings.HasPrefix(m.Addr, "127.0.0.1:") || !m.Alive {
			t.Errorf("/status member %+v", m)
		}
	}
	if code := probeCode(h, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d, want 200", code)
	}
	if code := probeCode(h, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz: %d, want 200", code)
	}
}

// probeCode returns the status code h answers path with.
func probeCode(h http.Handler, path string) int {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
	return w.Code
}

// TestStartConfigErrors: Start refuses a bad Config naming the field and
// the value, and the parts of Election that it owns. (Membership holds no
// identity: a second one cannot be written.)
func TestStartConfigErrors(t *testing.T) {
	tests := map[string]struct {
		change func(*coordelect.Config)
		want   string
	}{
		"transport": {func(c *coordelect.Config) { c.Election = &election.Config{Transport: &membership.Node{}} },
			"Config.Election.Transport is set"},
		"callbacks": {func(c *coordelect.Config) {
			c.Election = &election.Config{Callbacks: election.Callbacks{OnStoppedLeading: func(uint64) {}}}
		},
			"Config.Election.Callbacks is set"},
		"claim": {func(c *coordelect.Config) {
			c.Election = &election.Config{Callbacks: election.Callbacks{Claim: func(context.Context, uint64) error { return nil }}}
		},
			"Config.Election.Callbacks is set"},
		"no name":       {func(c *coordelect.Config) { c.Name = "" }, `Config.Name = "": required`},
		"algorithm":     {func(c *coordelect.Config) { c.Algorithm = 7 }, `Config.Algorithm = algorithm(7): want bully, ring or peterson`},
		"bind":          {func(c *coordelect.Config) { c.BindAddr = "localhost:1" }, `Config.BindAddr = "localhost:1"`},
		"payload size":  {func(c *coordelect.Config) { c.Payload = strings.Repeat("x", membership.MaxPayloadLen+1) }, "Config.Payload = <257 bytes>"},
		"elector value": {func(c *coordelect.Config) { c.Election = &election.Config{HeartbeatMisses: -1} }, "Config.HeartbeatMisses = -1"},
		"options value": {func(c *coordelect.Config) { c.Membership.Profile = "fast" }, `Config.Profile = "fast"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := replica("a", 3)
			mo := *cfg.Membership
			cfg.Membership = &mo
			tc.change(&cfg)
			h, err := coordelect.Start(context.Background(), cfg)
			if err == nil {
				h.Close(context.Background())
				t.Fatal("Start accepted it")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Start = %v\nwant it to say %q", err, tc.want)
			}
		})
	}
}

// TestOneIdentity: the identity set once in Config is what the membership
// layer publishes and what the elector runs with, and a rating changed at
// run time through the Elector changes it in both.
func TestOneIdentity(t *testing.T) {
	cfg := replica("a", 3)
	cfg.NonVoter, cfg.Algorithm = true, core.Ring
	h, err := coordelect.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	if got := h.Node().Identity(); got != cfg.Identity {
		t.Errorf("the membership layer publishes %+v, want %+v", got, cfg.Identity)
	}
	st := h.Elector().Status()
	if st.ID != "a" || st.Rating != 3 || !st.NonVoter || st.Algorithm != core.Ring {
		t.Errorf("the elector runs as %+v, want a, 3, non-voter, ring", st)
	}
	if err := h.Elector().SetRating(9); err != nil {
		t.Fatal(err)
	}
	if r := h.Node().Identity().Rating; r != 9 {
		t.Errorf("after Elector().SetRating(9) the membership layer publishes %d", r)
	}
	if r := h.Elector().Status().Rating; r != 9 {
		t.Errorf("after Elector().SetRating(9) the elector reports %d", r)
	}
}

// TestCloseTogether: a leave that is not confirmed in time is no error of
// Close. It happens when the replicas of a service stop together (the
// README's example exited 1 on it, with the LAN profile and a 1 s
// LeaveTimeout): each leaves while the other does, so neither leave
// is confirmed. Here a LeaveTimeout shorter than one gossip round of the
// LAN profile (200 ms) makes sure of it.
func TestCloseTogether(t *testing.T) {
	ctx := context.Background()
	var hs []*coordelect.Handle
	for i, name := range []string{"a", "b"} {
		cfg := coordelect.Config{Identity: election.Identity{Name: name, Rating: int64(i)}, BindAddr: "127.0.0.1:0", LeaveTimeout: time.Millisecond}
		if i > 0 {
			cfg.Seeds = []string{hs[0].Addr()}
		}
		h, err := coordelect.Start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close(ctx) })
		hs = append(hs, h)
	}
	waitLeader(t, "b", hs...)
	var wg sync.WaitGroup
	for _, h := range hs {
		wg.Go(func() {
			if err := h.Close(ctx); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	wg.Wait()
}

// TestHandleInCallbacks: the leader's work reaches its Handle through its
// context (FromContext), also before Start has returned it, and the Handle
// offers the checks a leader makes before its side effects.
func TestHandleInCallbacks(t *testing.T) {
	type seen struct {
		claim, lead *coordelect.Handle
		check       error
		valid       bool
		ctxErr      error
		deadline    bool
		verify      error
	}
	got := make(chan seen, 1)
	var claimed *coordelect.Handle
	cfg := replica("a", 1)
	cfg.Callbacks = election.Callbacks{
		Claim: func(ctx context.Context, term uint64) error {
			claimed = coordelect.FromContext(ctx)
			return nil
		},
		OnStartedLeading: func(ctx context.Context, term uint64) {
			h := coordelect.FromContext(ctx)
			lctx, cancel := h.LeaseContext(ctx, term)
			_, deadline := h.LeaseDeadline(term)
			got <- seen{claim: claimed, lead: h, check: h.Check(term), valid: h.Valid(term), ctxErr: lctx.Err(),
				deadline: deadline, verify: h.VerifyLeader(ctx)}
			cancel()
			<-ctx.Done()
		},
	}
	h, err := coordelect.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	var s seen
	select {
	case s = <-got:
	case <-time.After(waitTimeout):
		t.Fatal("a lone replica did not start leading")
	}
	if s.claim != h || s.lead != h {
		t.Errorf("FromContext in Claim %p, in OnStartedLeading %p; want the Handle %p", s.claim, s.lead, h)
	}
	if s.check != nil || !s.valid || s.ctxErr != nil || s.deadline || !errors.Is(s.verify, election.ErrNoQuorumGuard) {
		t.Errorf("in its leadership: %+v; want Check nil, Valid, a live LeaseContext, no deadline (no guard), VerifyLeader ErrNoQuorumGuard", s)
	}
	if coordelect.FromContext(context.Background()) != nil {
		t.Error("FromContext of another context is not nil")
	}
}

// TestMembershipZeroOptions: Config.Membership with only some fields set
// takes the defaults for the others (membership's
// TestOptionsZeroMeansDefault checks each field).
func TestMembershipZeroOptions(t *testing.T) {
	cfg := replica("a", 1)
	cfg.Membership = &membership.Options{Profile: membership.ProfileLocal}
	h, err := coordelect.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start with zero options: %v", err)
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

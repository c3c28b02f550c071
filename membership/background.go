package membership

import (
	"sync"
	"time"
)

// The Node's background work (publishing the metadata, joins, the
// shutdown after a fatal error) waits most of the time: for a SetRating,
// for a timer, for an error that never comes. It keeps no goroutine while
// it waits: a timer (time.AfterFunc) or the event itself starts one, which
// returns when the work is done, so a waiting task costs no goroutine
// stack per member.

// spawner starts the Node's on-demand goroutines, counted in wg, and its
// timers. After close it starts neither, and re-arms no timer, so that
// Close's wg.Wait waits for every goroutine and no timer outlives it.
type spawner struct {
	wg *sync.WaitGroup

	mu     sync.Mutex
	closed bool
	timers []*time.Timer
}

// goFunc runs f on a new goroutine, unless the spawner is closed; it
// reports whether it did.
func (s *spawner) goFunc(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
	return true
}

// afterFunc sets *t to time.AfterFunc(d, f), a timer stopped by close,
// unless closed. t is written and read (reset) under the spawner's lock
// only: f may run before afterFunc returns.
func (s *spawner) afterFunc(t **time.Timer, d time.Duration, f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	*t = time.AfterFunc(d, f)
	s.timers = append(s.timers, *t)
}

// reset re-arms *t (set by afterFunc) to fire after d, unless closed.
func (s *spawner) reset(t **time.Timer, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed && *t != nil {
		(*t).Reset(d)
	}
}

// close stops the timers; later goFunc, afterFunc and reset do nothing.
func (s *spawner) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, t := range s.timers {
		t.Stop()
	}
	s.timers = nil
}

// onDemand runs a piece of work on a goroutine of its own while it is
// due, one run at a time: kick starts a goroutine if none runs, or has the
// running one run the work once more when it is done (the work reads its
// input afresh, so kicks made during a run need one more run, not one
// each). The check and the goroutine's exit are under mu, so no kick goes
// unserved.
type onDemand struct {
	mu      sync.Mutex
	running bool
	again   bool
}

// kick has work run (see onDemand), on a goroutine from sp.
func (d *onDemand) kick(sp *spawner, work func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.running {
		d.again = true
		return
	}
	d.running = sp.goFunc(func() { d.loop(work) })
}

func (d *onDemand) loop(work func()) {
	for {
		work()
		d.mu.Lock()
		if !d.again {
			d.running = false
			d.mu.Unlock()
			return
		}
		d.again = false
		d.mu.Unlock()
	}
}

// joinJobs are the joins due, taken by the joiner goroutine
// (Node.runJoins).
type joinJobs struct {
	mu        sync.Mutex
	ready     bool     // New has made its own joins: others may start
	restarted []string // addresses to join at once (askJoin), at most maxRestartedJoins
	rejoin    bool     // the seeds' turn (Node.rejoin), every RejoinInterval
	departed  []string // members that departed lately, to join (Node.rejoinDeparted)
}

// maxRestartedJoins caps the restarted members' addresses waiting for a
// join; more are dropped (askJoin).
const maxRestartedJoins = 16

// take returns the jobs due and clears them.
func (j *joinJobs) take() (restarted []string, rejoin bool, departed []string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	restarted, rejoin, departed = j.restarted, j.rejoin, j.departed
	j.restarted, j.rejoin, j.departed = nil, false, nil
	return restarted, rejoin, departed
}

package membership

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/coordelect/coordelect/internal/testport"
	"github.com/hashicorp/memberlist"
)

// noPushPull turns memberlist's periodic state exchange off, so that only
// the joins under test can bring members together.
func noPushPull(c *Config) {
	c.Memberlist = func(mc *memberlist.Config) {
		fastTimings(mc)
		mc.PushPullInterval = 0
	}
}

// A seed that crashes and comes back at its address without seeds of its
// own knows nobody. The others still hold it alive, probe it, and its
// answer carries a boot ID their view does not have yet: they join it,
// and it is back in the cluster. Periodic push-pull and re-joins are off,
// so nothing else could bring it back.
func TestRestartedSeedFoundWithoutJoin(t *testing.T) {
	checkLeaks(t)
	port := testport.Free(t)
	ms := cluster(t, 3, func(c *Config) { noPushPull(c); atPort(c, "n1", port) })
	// Let the joins' alive broadcasts run out (a few 20 ms gossip rounds):
	// gossip still carrying them to the restarted seed would tell it of
	// the others, as it would not in a cluster that has been up a while.
	<-time.After(500 * time.Millisecond)
	ms[0].stop(t)
	cfg := testConfig("n1")
	noPushPull(&cfg)
	cfg.BindPort, cfg.Rating = port, 11
	began := time.Now()
	n1 := start(t, cfg)
	n1.waitPeerEvents(t, "n2", "up:n2/20")
	n1.waitPeerEvents(t, "n3", "up:n3/30")
	t.Logf("the restarted seed saw both members %v after its restart (probe interval 100 ms)", time.Since(began))
}

// A member whose seed is not listening yet retries it with backoff from
// tens of milliseconds; with a re-join interval of an hour only the
// backoff can bring the two together.
func TestSeedRetriedWithBackoff(t *testing.T) {
	checkLeaks(t)
	port := testport.Free(t)
	cfg := testConfig("n2")
	cfg.Seeds, cfg.RejoinInterval = []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}, time.Hour
	n2 := start(t, cfg)
	if n2.joined.Load() {
		t.Fatal("reached a seed that was not listening")
	}
	c1 := testConfig("n1")
	c1.BindPort, c1.Rating = port, 10
	n1 := start(t, c1)
	n1.waitPeerEvents(t, "n2", "up:n2/0")
	n2.waitPeerEvents(t, "n1", "up:n1/10")
	if s := n2.Stats(); s.Rejoins == 0 {
		t.Fatalf("stats %+v: want a retry", s)
	}
}

// A seed given by DNS name: "localhost" resolves to 127.0.0.1 (and maybe
// ::1, where nobody listens); memberlist joins every address it resolves
// to, and one answering is enough.
func TestSeedByDNSName(t *testing.T) {
	checkLeaks(t)
	n1 := start(t, testConfig("n1"))
	_, port, _ := net.SplitHostPort(n1.Addr())
	cfg := testConfig("n2")
	cfg.Seeds = []string{net.JoinHostPort("localhost", port)}
	n2 := start(t, cfg)
	n2.waitPeerEvents(t, "n1", "up:n1/0")
	n1.waitPeerEvents(t, "n2", "up:n2/0")
}

// A seed restarted after the others declared it dead, with no seeds of
// its own, is found by the others' re-join of the members that departed
// lately, every fastRejoinWait: within about half a second, although
// RejoinInterval is an hour here (the target: back within 1 s).
func TestSeedRestartedAfterDeathFound(t *testing.T) {
	checkLeaks(t)
	port := testport.Free(t)
	ms := cluster(t, 3, func(c *Config) { noPushPull(c); c.RejoinInterval = time.Hour; atPort(c, "n1", port) })
	<-time.After(500 * time.Millisecond)
	ms[0].stop(t)
	ms[1].waitPeerEvents(t, "n1", "down:n1")
	ms[2].waitPeerEvents(t, "n1", "down:n1")
	cfg := testConfig("n1")
	noPushPull(&cfg)
	cfg.BindPort, cfg.Rating = port, 11
	began := time.Now()
	n1 := start(t, cfg)
	n1.waitPeerEvents(t, "n2", "up:n2/20")
	n1.waitPeerEvents(t, "n3", "up:n3/30")
	t.Logf("the seed restarted after its death saw both members %v after its restart", time.Since(began))
}

// A member re-joins only the seeds it does not hold alive: a seed in its
// view is in its part of the cluster, and memberlist's own push-pulls
// keep the two in step. Re-joining it every RejoinInterval anyway would
// cost every member a push-pull of the whole member list per interval.
// Once the
// seed is known, the periods pass with nobody to join; when the seed
// dies, it is joined again.
func TestRejoinSkipsLiveSeeds(t *testing.T) {
	checkLeaks(t)
	n1 := start(t, testConfig("n1"))
	cfg := testConfig("n2")
	cfg.Seeds, cfg.RejoinInterval = []string{n1.Addr()}, 50*time.Millisecond
	n2 := start(t, cfg)
	n2.waitPeerEvents(t, "n1", "up:n1/0")
	before := n2.Stats()
	if !waitUntil(waitTimeout, func() bool { return n2.Stats().RejoinsSkipped >= before.RejoinsSkipped+3 }) {
		t.Fatalf("stats %+v: want periods skipped while the seed is alive", n2.Stats())
	}
	if s := n2.Stats(); s.Rejoins != before.Rejoins {
		t.Fatalf("re-joined a live seed: Rejoins %d, then %d", before.Rejoins, s.Rejoins)
	}
	n1.stop(t)
	n2.waitPeerEvents(t, "n1", "down:n1")
	if !waitUntil(waitTimeout, func() bool { return n2.Stats().RejoinFailures > before.RejoinFailures }) {
		t.Fatalf("stats %+v: want the dead seed tried again", n2.Stats())
	}
}

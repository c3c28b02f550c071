package e2e

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// chromiumPath is where the Debian package chromium installs the browser.
const chromiumPath = "/usr/bin/chromium"

var updateScreenshot = flag.Bool("update-screenshot", false,
	"copy the browser test's screenshot to docs/img/demo.png (the README's)")

// pageState is what the page shows, read from its DOM.
type pageState struct {
	Agreed string     `json:"agreed"` // body[data-agreed]: the coordinator all running nodes agree on
	Nodes  []pageNode `json:"nodes"`
	Jobs   []pageJob  `json:"jobs"`
	Banner string     `json:"banner"`
}

// pageJob is one job's tile.
type pageJob struct {
	Name   string `json:"name"`
	Leader string `json:"leader"` // the agreed leader, "" when none
	Term   string `json:"term"`
	Agreed bool   `json:"agreed"`
	Text   string `json:"text"` // the tile's leader line
}

type pageNode struct {
	Name        string   `json:"name"`
	Up          bool     `json:"up"`
	State       string   `json:"state"`
	Coordinator string   `json:"coordinator"`
	Badge       string   `json:"badge"` // the state as the table shows it
	Leads       []string `json:"leads"` // the chips of the jobs it leads
}

const readPage = `(() => ({
	agreed: document.body.dataset.agreed || "",
	banner: document.querySelector("#banner").textContent,
	nodes: [...document.querySelectorAll("#nodes tbody tr")].map((r) => ({
		name: r.dataset.node, up: r.dataset.up === "true",
		state: r.dataset.state || "", coordinator: r.dataset.coordinator || "",
		badge: r.querySelector(".badge").textContent,
		leads: [...r.querySelectorAll(".leads .chip")].map((c) => c.textContent),
	})),
	jobs: [...document.querySelectorAll("#jobs .job")].map((j) => ({
		name: j.dataset.job, leader: j.dataset.leader || "", term: j.dataset.term || "",
		agreed: j.dataset.agreed === "true", text: j.querySelector(".job-leader").textContent,
	})),
}))()`

// jobsLed reports whether the page shows n jobs, each with an agreed
// leader among the running nodes, shown on its tile and as a chip of that
// node's row alone.
func (s pageState) jobsLed(n int) bool {
	if len(s.Jobs) != n {
		return false
	}
	chips := map[string]string{} // job -> the node whose row has its chip
	for _, x := range s.Nodes {
		for _, j := range x.Leads {
			if _, dup := chips[j]; dup || !x.Up {
				return false
			}
			chips[j] = x.Name
		}
	}
	for _, j := range s.Jobs {
		if !j.Agreed || j.Leader == "" || chips[j.Name] != j.Leader || j.Text != "node "+j.Leader {
			return false
		}
	}
	return len(chips) == n
}

// agreedBy reports whether the page shows coordinator c agreed by every
// running node, with up nodes running, and c leading.
func (s pageState) agreedBy(c string, up int) bool {
	n := 0
	for _, x := range s.Nodes {
		if !x.Up {
			continue
		}
		n++
		if x.Coordinator != c || (x.Name == c) != (x.State == "coordinator") {
			return false
		}
	}
	return s.Agreed == c && c != "" && n == up
}

// skipWithoutChromium skips the test when the browser is missing, except
// under CI=true.
func skipWithoutChromium(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %s is missing (apt-get install -y chromium): %v", chromiumPath, err)
		}
		t.Skipf("skipping the browser test: %s not found (Debian: apt-get install -y chromium)", chromiumPath)
	}
}

// The page in a real headless Chromium: it shows 5 nodes and one
// coordinator, and the 12 jobs each with a leader; a click on the
// coordinator's Crash button shows, within a few seconds, a new
// coordinator agreed by the 4 others and the crashed node's jobs led by
// survivors, the other jobs where they were.
func TestBrowserCrashCoordinator(t *testing.T) {
	skipWithoutChromium(t)
	tc := startDemo(t)
	ctx, cancel := newBrowser(t, browserBudget)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(tc.url), chromedp.WaitVisible(chromedp.CSS("#nodes tbody tr"))); err != nil {
		t.Fatalf("opening %s: %v", tc.url, err)
	}
	first := waitPage(ctx, t, "5 nodes and one coordinator agreed by all", func(s pageState) bool {
		return len(s.Nodes) == 5 && s.agreedBy(s.Agreed, 5)
	})
	old := first.Agreed
	first = waitPage(ctx, t, "12 jobs, each led by one node", func(s pageState) bool { return s.jobsLed(12) })
	before := map[string]string{} // job -> leader
	var moving []string           // the jobs of the coordinator
	for _, j := range first.Jobs {
		before[j.Name] = j.Leader
		if j.Leader == old {
			moving = append(moving, j.Name)
		}
	}
	if len(moving) == 0 {
		t.Fatalf("coordinator %s leads no job (%+v): the crash would move none", old, first.Jobs)
	}
	for _, n := range first.Nodes { // the table uses the legend's words
		if want := map[bool]string{true: "coordinator", false: "follower"}[n.Name == old]; n.Badge != want {
			t.Errorf("node %s shown as %q in the table, want %q (the legend's word)", n.Name, n.Badge, want)
		}
	}

	clicked := time.Now()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`button[data-action="crash"][data-node="`+old+`"]`))); err != nil {
		t.Fatalf("clicking crash on %s: %v", old, err)
	}
	next := waitPage(ctx, t, "a new coordinator agreed by the 4 others", func(s pageState) bool {
		return s.Agreed != old && s.agreedBy(s.Agreed, 4)
	})
	took := time.Since(clicked)
	t.Logf("crash of coordinator %s clicked: the page showed %s agreed by the 4 others %v later (banner %q)",
		old, next.Agreed, took, next.Banner)
	if took > 5*time.Second {
		t.Errorf("agreement took %v, want a few seconds at most", took)
	}
	next = waitPage(ctx, t, "the jobs of "+old+" led by survivors", func(s pageState) bool {
		for _, j := range s.Jobs {
			if j.Leader == old {
				return false
			}
		}
		return s.jobsLed(12)
	})
	t.Logf("the page showed the jobs %q of %s led by survivors %v after the click", moving, old, time.Since(clicked))
	for _, j := range next.Jobs {
		if !slices.Contains(moving, j.Name) && j.Leader != before[j.Name] {
			t.Errorf("job %s moved from %s to %s, though %s did not lead it", j.Name, before[j.Name], j.Leader, old)
		}
	}
	saveScreenshot(ctx, t)
}

// The page with the quorum guard, in a real headless Chromium: before any
// data the buttons are disabled; a partition shows "no quorum" for the
// minority, in the banner and the table, with side colours the legend's
// states do not use; after the heal the agreement is timed from the heal.
func TestBrowserQuorumPartition(t *testing.T) {
	skipWithoutChromium(t)
	tc := startDemo(t, "-quorum", "5")
	ctx, cancel := newBrowser(t, browserBudget+coldStartTimeout) // the browser must outlast the cold start
	defer cancel()

	// No event stream: "connecting…" and nothing to click.
	block := []*network.BlockPattern{{URLPattern: "*://*:*/api/events", Block: true}}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.SetBlockedURLs, network.SetBlockedURLsParams{URLPatterns: block}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(tc.url), chromedp.WaitReady(chromedp.CSS("#banner"))); err != nil {
		t.Fatal(err)
	}
	const offline = `({banner: document.querySelector("#banner").textContent,
		enabled: [...document.querySelectorAll("button")].filter((b) => !b.disabled).map((b) => b.id || b.textContent)})`
	type offlineState struct {
		Banner  string   `json:"banner"`
		Enabled []string `json:"enabled"`
	}
	off, err := chromedp.Run(ctx, chromedp.Evaluate[offlineState](offline))
	if err != nil {
		t.Fatal(err)
	}
	if off.Banner != "connecting…" || len(off.Enabled) != 0 {
		t.Errorf("before any data: banner %q, buttons enabled %q; want connecting… and none", off.Banner, off.Enabled)
	}
	if _, err := chromedp.Call(ctx, network.SetBlockedURLs, network.SetBlockedURLsParams{URLPatterns: []*network.BlockPattern{}}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	// The first agreement of 5 demo nodes started at once with the guard:
	// about 0.5 s under the race detector on an idle machine without the
	// browser, but 2 s to more than 60 s with it (12 runs in the sixth
	// session, before and after its loop change alike; 31.6 s once in
	// CI), where the process is starved: no lease
	// holds while a round trip takes longer than QuorumLease (docs/design.md,
	// "Leases"; docs/reliability.md, "A starved guarded cold start"). The
	// page is what this test checks, so it waits for that agreement as long
	// as a starved cold start needs and logs it.
	began := time.Now()
	waitPageFor(ctx, t, "5 agreed by all", coldStartTimeout, func(s pageState) bool { return s.agreedBy("5", 5) })
	t.Logf("the page showed 5 agreed by all %v after it loaded", time.Since(began).Round(time.Millisecond))
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#partition"))); err != nil {
		t.Fatal(err)
	}
	s := waitPage(ctx, t, "4 and 5 without quorum, 3 leading 1, 2 and 3", func(s pageState) bool {
		badges := make([]string, len(s.Nodes))
		for i, n := range s.Nodes {
			badges[i] = n.Badge
		}
		return slices.Equal(badges, []string{"follower", "follower", "coordinator", "no quorum", "no quorum"}) &&
			strings.Contains(s.Banner, "Coordinator 3")
	})
	if want := "4 and 5 have no quorum"; !strings.Contains(s.Banner, want) || strings.Contains(s.Banner, "Electing") {
		t.Errorf("banner %q; want it to say %q", s.Banner, want)
	}
	// The sides' halos are in colours no state of the legend uses.
	const colours = `(() => {
		const css = (el, p) => getComputedStyle(el)[p];
		return {
			sides: [...document.querySelectorAll(".node.group1 circle.halo, .node.group2 circle.halo")].map((c) => css(c, "stroke")),
			legend: [...document.querySelectorAll(".legend .dot")].map((d) => css(d, "background-color")),
		};
	})()`
	type colourSet struct{ Sides, Legend []string }
	cs, err := chromedp.Run(ctx, chromedp.Evaluate[colourSet](colours))
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Sides) != 5 || len(cs.Legend) < 7 {
		t.Fatalf("read %d halos and %d legend colours; want 5 and 7", len(cs.Sides), len(cs.Legend))
	}
	for _, c := range cs.Sides {
		for _, l := range cs.Legend {
			if hueClash(c, l) {
				t.Errorf("a partition side is drawn in %s, the hue of %s, a state of the legend", c, l)
			}
		}
	}
	lead, err := chromedp.Run(ctx, chromedp.Evaluate[string](`leadText(["3", "4", "5"])`))
	if err != nil || lead != "3, 4 and 5 all lead" {
		t.Errorf("leadText of three: %q, %v", lead, err)
	}

	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#heal"))); err != nil {
		t.Fatal(err)
	}
	waitPage(ctx, t, "5 agreed by all after the heal", func(s pageState) bool { return s.agreedBy("5", 5) })
	var entry string
	if !poll(waitTimeout, func() bool {
		entry, err = chromedp.Run(ctx, chromedp.Evaluate[string](
			`[...document.querySelectorAll("#log li.agreed span")].map((e) => e.textContent).find((t) => t.includes("after the heal")) || ""`))
		return err == nil && entry != ""
	}) {
		// The first agreement after the heal (on 4, before 5 takes the role
		// back by a hand-off, or on 5 at once) is timed from the heal.
		t.Fatalf("no agreement timed from the heal in the page's log: %v", err)
	}
	t.Logf("after the heal: %q", entry)
}

// hueClash reports whether two CSS colours "rgb(r, g, b)" are both
// saturated and less than 30 degrees of hue apart: one could be taken for
// the other (greys are told apart by the states' other cues).
func hueClash(a, b string) bool {
	ha, sa := hueSat(a)
	hb, sb := hueSat(b)
	if sa < 0.25 || sb < 0.25 {
		return false
	}
	d := math.Abs(ha - hb)
	return math.Min(d, 360-d) < 30
}

// hueClash tells the old partition colour from the "active" purple it was
// confused with, and the new ones apart from every state.
func TestHueClash(t *testing.T) {
	if !hueClash("rgb(142, 107, 242)", "rgb(155, 93, 229)") { // #8e6bf2, the old side 1, and active
		t.Error("the old side colour and active purple not found alike")
	}
	if hueClash("rgb(14, 143, 143)", "rgb(74, 123, 247)") || hueClash("rgb(214, 51, 138)", "rgb(155, 93, 229)") {
		t.Error("the new side colours found like a state's")
	}
	if hueClash("rgb(154, 165, 184)", "rgb(14, 143, 143)") {
		t.Error("a grey clashes")
	}
}

// hueSat is the HSL hue (degrees) and saturation of "rgb(r, g, b)".
func hueSat(css string) (hue, sat float64) {
	var r, g, b float64
	if _, err := fmt.Sscanf(css, "rgb(%g, %g, %g)", &r, &g, &b); err != nil {
		return 0, 0
	}
	r, g, b = r/255, g/255, b/255
	hi, lo := max(r, g, b), min(r, g, b)
	d, l := hi-lo, (hi+lo)/2
	if d == 0 {
		return 0, 0
	}
	sat = d / (1 - math.Abs(2*l-1))
	switch hi {
	case r:
		hue = math.Mod((g-b)/d+6, 6)
	case g:
		hue = (b-r)/d + 2
	default:
		hue = (r-g)/d + 4
	}
	return hue * 60, sat
}

// newBrowser starts headless Chromium with a fresh profile and no
// background traffic; cancel stops it. Every browser call of the test
// must end within budget.
func newBrowser(t *testing.T, budget time.Duration) (context.Context, context.CancelFunc) {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1360, 900),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx, chromedp.WithErrorf(t.Logf))
	ctx, cancelTimeout := context.WithTimeout(ctx, budget)
	return ctx, func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	}
}

// waitPage reads the page every 20 ms until cond holds, and returns it.
func waitPage(ctx context.Context, t *testing.T, what string, cond func(pageState) bool) pageState {
	t.Helper()
	return waitPageFor(ctx, t, what, waitTimeout, cond)
}

// coldStartTimeout bounds the wait for a guarded cluster's first agreement
// (see TestBrowserQuorumPartition). browserBudget is what a test's other
// browser calls may take together; the quorum test's browser gets both
// (until the sixth session its context expired after 30 s, so a cold start
// that took 31.6 s in CI failed the 60-s wait with "context deadline
// exceeded").
const (
	coldStartTimeout = 120 * time.Second
	browserBudget    = 30 * time.Second
)

// waitPageFor is waitPage with its own timeout.
func waitPageFor(ctx context.Context, t *testing.T, what string, timeout time.Duration, cond func(pageState) bool) pageState {
	t.Helper()
	var s pageState
	var err error
	ok := poll(timeout, func() bool {
		s, err = chromedp.Run(ctx, chromedp.Evaluate[pageState](readPage))
		return err == nil && cond(s)
	})
	if !ok {
		t.Fatalf("page: %s: not within %v (last read %+v, %v)", what, timeout, s, err)
	}
	return s
}

// saveScreenshot saves the page into the test's directory and, with
// -update-screenshot, as the README's docs/img/demo.png.
func saveScreenshot(ctx context.Context, t *testing.T) {
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(t.TempDir(), "demo.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
	if *updateScreenshot {
		if err := os.WriteFile(filepath.Join(repoRoot(t), "docs", "img", "demo.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

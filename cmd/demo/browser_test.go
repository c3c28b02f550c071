package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

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
	Banner string     `json:"banner"`
}

type pageNode struct {
	Name        string `json:"name"`
	Up          bool   `json:"up"`
	State       string `json:"state"`
	Coordinator string `json:"coordinator"`
}

const readPage = `(() => ({
	agreed: document.body.dataset.agreed || "",
	banner: document.querySelector("#banner").textContent,
	nodes: [...document.querySelectorAll("#nodes tbody tr")].map((r) => ({
		name: r.dataset.node, up: r.dataset.up === "true",
		state: r.dataset.state || "", coordinator: r.dataset.coordinator || "",
	})),
}))()`

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

// The page in a real headless Chromium: it shows 5 nodes and one
// coordinator; a click on the coordinator's Crash button shows, within a
// few seconds, a new coordinator agreed by the 4 others.
func TestBrowserCrashCoordinator(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %s is missing (apt-get install -y chromium): %v", chromiumPath, err)
		}
		t.Skipf("skipping the browser test: %s not found (Debian: apt-get install -y chromium)", chromiumPath)
	}
	tc := startCluster(t)
	ctx, cancel := newBrowser(t)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(tc.url), chromedp.WaitVisible(chromedp.CSS("#nodes tbody tr"))); err != nil {
		t.Fatalf("opening %s: %v", tc.url, err)
	}
	first := waitPage(ctx, t, "5 nodes and one coordinator agreed by all", func(s pageState) bool {
		return len(s.Nodes) == 5 && s.agreedBy(s.Agreed, 5)
	})
	old := first.Agreed

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
	saveScreenshot(ctx, t)
}

// newBrowser starts headless Chromium with a fresh profile and no
// background traffic; cancel stops it.
func newBrowser(t *testing.T) (context.Context, context.CancelFunc) {
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
	ctx, cancelTimeout := context.WithTimeout(ctx, 30*time.Second)
	return ctx, func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	}
}

// waitPage reads the page every 20 ms until cond holds, and returns it.
func waitPage(ctx context.Context, t *testing.T, what string, cond func(pageState) bool) pageState {
	t.Helper()
	var s pageState
	var err error
	ok := poll(waitTimeout, func() bool {
		s, err = chromedp.Run(ctx, chromedp.Evaluate[pageState](readPage))
		return err == nil && cond(s)
	})
	if !ok {
		t.Fatalf("page: %s: not within %v (last read %+v, %v)", what, waitTimeout, s, err)
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
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "img", "demo.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

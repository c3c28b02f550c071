package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// waitTimeout bounds every wait for the cluster; generous for -race on two
// cores, while the usual case takes well under a second.
const waitTimeout = 15 * time.Second

// syncBuffer is a bytes.Buffer safe for the concurrent writes of loggers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testCluster is a local cluster run by runCluster on 127.0.0.1 port 0.
type testCluster struct {
	*localCluster
	url    string
	stdout syncBuffer
	stderr syncBuffer
}

// startCluster runs the local cluster with args (plus -http 127.0.0.1:0)
// until the end of the test, and checks then that it stopped cleanly and
// left no goroutine behind.
func startCluster(t *testing.T, args ...string) *testCluster {
	t.Helper()
	checkLeaks(t)
	tc := &testCluster{}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	args = append([]string{"-http", "127.0.0.1:0"}, args...)
	go func() {
		done <- runCluster(ctx, args, &tc.stdout, &tc.stderr, nil, func(c *localCluster, url string) {
			tc.localCluster, tc.url = c, url
			close(ready)
		})
	}()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("runCluster %q: %v\n%s", args, err, tc.stderr.String())
	case <-time.After(waitTimeout):
		t.Fatalf("runCluster %q: not ready after %v", args, waitTimeout)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("runCluster: %v", err)
			}
		case <-time.After(waitTimeout):
			t.Errorf("runCluster did not stop within %v", waitTimeout)
		}
		if t.Failed() {
			t.Logf("demo output:\n%s%s", tc.stdout.String(), tc.stderr.String())
		}
	})
	return tc
}

// checkLeaks fails t if goroutines started during the test outlive its
// cleanups (register it first). memberlist lets connection handlers finish
// after Shutdown, so it polls.
func checkLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		var err error
		if !poll(waitTimeout, func() bool { err = goleak.Find(ignore); return err == nil }) {
			t.Error(err)
		}
	})
}

// poll checks cond every 10 ms until it holds (true) or timeout passes
// (false).
func poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			return cond()
		case <-tick.C:
		}
	}
	return true
}

// waitFor polls cond until it holds and fails the test if it does not
// within timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !poll(timeout, cond) {
		t.Fatalf("%s: not within %v", what, timeout)
	}
}

// httpClient is for the tests' requests; nothing it asks for should take
// long.
var httpClient = &http.Client{Timeout: 5 * time.Second}

// getDoc is getJSON for a document served with any status (/readyz).
func getDoc(url string, v any) (int, error) {
	resp, err := httpClient.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, json.NewDecoder(resp.Body).Decode(v)
}

// getJSON decodes the JSON document at url into v, or returns the status.
func getJSON(url string, v any) (int, error) {
	resp, err := httpClient.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	return resp.StatusCode, json.NewDecoder(resp.Body).Decode(v)
}

// post posts body (may be "") to url and returns the status and the
// response.
func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// mustPost posts and fails the test unless the action succeeded.
func (tc *testCluster) mustPost(t *testing.T, path, body string) {
	t.Helper()
	if code, resp := post(t, tc.url+path, body); code != http.StatusOK {
		t.Fatalf("POST %s %s: %d %s", path, body, code, resp)
	}
}

// waitAgreed waits until every running node agrees on coordinator want
// (any, when ""), and returns the view.
func (tc *testCluster) waitAgreed(t *testing.T, want string) clusterView {
	t.Helper()
	var v clusterView
	waitFor(t, waitTimeout, fmt.Sprintf("coordinator %q agreed", want), func() bool {
		v = tc.view()
		return v.Agreed && (want == "" || v.Coordinator == want)
	})
	return v
}

// run runs the demo with args until it finishes (the live modes: forever)
// and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdout, stderr, nil)
}

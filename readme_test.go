package coordelect_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coordelect/coordelect/internal/testport"
)

// readmeExample returns the first Go code block of README.md's "Embed it"
// section.
func readmeExample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Embed it\n")
	if !ok {
		t.Fatal(`README.md has no "## Embed it" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	_, code, ok := strings.Cut(sec, "```go\n")
	if code, _, ok = strings.Cut(code, "```\n"); !ok {
		t.Fatal(`README.md's "Embed it" has no Go code block`)
	}
	return code
}

// TestREADMEExample builds README.md's embedding example as it is written
// there, as a main package inside this module (through a build overlay,
// so that nothing is written into the module), checks that it is a
// complete program of at most 40 lines, and runs it alone: it serves
// /election/healthz and /election/readyz (200 once it leads itself), and
// memberlist's own metrics at /metrics (the dashboard's memberlist
// panels), and exits 0 on SIGTERM.
func TestREADMEExample(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	code := readmeExample(t)
	if n := strings.Count(code, "\n"); n > 40 {
		t.Errorf("the example has %d lines, want at most 40", n)
	}
	if !strings.HasPrefix(code, "package main\n") || !strings.Contains(code, "coordelect.Start(") {
		t.Errorf("the example is not a main package calling coordelect.Start:\n%s", code)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte(code), 0o600); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	virtual := filepath.Join(root, "internal", "readmeexample", "main.go")
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{virtual: src}})
	ov := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "replica")
	cmd := exec.Command(goTool, "build", "-overlay", ov, "-o", bin, "./internal/readmeexample")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	runREADMEExample(t, bin)
}

// runREADMEExample runs the example's binary as one replica on loopback
// and checks what it serves.
func runREADMEExample(t *testing.T, bin string) {
	api := net.JoinHostPort("127.0.0.1", strconv.Itoa(testport.Free(t))) // the replica listens there
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "-name", "a", "-bind", "127.0.0.1:0", "-http", api)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("replica stderr:\n%s", stderr.String())
		}
	}()
	client := &http.Client{Timeout: 5 * time.Second}
	get := func(path string) (int, string) {
		resp, err := client.Get("http://" + api + path)
		if err != nil {
			return 0, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitOK := func(path string) string {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		timeout := time.After(waitTimeout)
		for {
			code, body := get(path)
			if code == http.StatusOK {
				return body
			}
			select {
			case <-tick.C:
			case <-timeout:
				t.Fatalf("GET %s: %d %q, want 200 within %v", path, code, body, waitTimeout)
			}
		}
	}
	if body := waitOK("/election/healthz"); body != "ok\n" {
		t.Errorf("/election/healthz: %q", body)
	}
	if body := waitOK("/election/readyz"); !strings.Contains(body, `"coordinator": "a"`) {
		t.Errorf("/election/readyz: %q, want coordinator a", body)
	}
	if code, body := get("/metrics"); code != http.StatusOK || !strings.Contains(body, "coordelect_memberlist_health_score") {
		t.Errorf("/metrics: %d, without memberlist's metrics (coordelect_memberlist_health_score)", code)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err // for the deferred Wait
		if err != nil {
			t.Errorf("after SIGTERM: %v, want exit status 0", err)
		}
	case <-time.After(waitTimeout):
		t.Errorf("still running %v after SIGTERM", waitTimeout)
	}
}

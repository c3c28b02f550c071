package e2e

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"
)

// waitTimeout bounds every wait for the cluster and the page; generous for
// -race on two cores, while the usual case takes well under a second.
const waitTimeout = 15 * time.Second

// repoRoot is the root module's directory, three levels up from this one.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "demo", "main.go")); err != nil {
		t.Fatalf("%s is not the coordelect repository: %v", root, err)
	}
	return root
}

var (
	buildOnce sync.Once
	demoBin   string
	buildErr  error
	buildOut  []byte
)

// TestMain removes the demo binary that buildDemo built, if any.
func TestMain(m *testing.M) {
	code := m.Run()
	if demoBin != "" {
		_ = os.RemoveAll(filepath.Dir(demoBin))
	}
	os.Exit(code)
}

// buildDemo builds the demo from the repository this module sits in (with
// the race detector when this test binary has it) once per test binary.
func buildDemo(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool in PATH to build the demo binary")
	}
	root := repoRoot(t)
	buildOnce.Do(func() {
		var dir string
		if dir, buildErr = os.MkdirTemp("", "coordelect-e2e-"); buildErr != nil {
			return
		}
		demoBin = filepath.Join(dir, "demo")
		args := []string{"build", "-o", demoBin}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command(goTool, append(args, "./cmd/demo")...)
		cmd.Dir = root
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build ./cmd/demo: %v\n%s", buildErr, buildOut)
	}
	return demoBin
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
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

// demo is one run of the demo's live local cluster.
type demo struct {
	url            string
	stdout, stderr syncBuffer
}

var openLine = regexp.MustCompile(`^coordelect demo: .*; open (http://\S+)$`)

// startDemo runs the demo's live cluster with args (plus -http
// 127.0.0.1:0) until the end of the test, then stops it with SIGINT and
// checks that it stopped cleanly (exit status 0) in time.
func startDemo(t *testing.T, args ...string) *demo {
	t.Helper()
	d := &demo{}
	cmd := exec.Command(buildDemo(t), append([]string{"-http", "127.0.0.1:0"}, args...)...)
	cmd.Stderr = &d.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{}) // closed once Wait has returned, with waitErr
	url := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			d.stdout.Write([]byte(line + "\n"))
			if m := openLine.FindStringSubmatch(line); m != nil {
				select {
				case url <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, out)
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
			t.Errorf("the demo exited before the end of the test: %v", waitErr)
		default:
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Errorf("interrupting the demo: %v", err)
			}
			select {
			case <-exited:
				if waitErr != nil {
					t.Errorf("the demo did not stop cleanly on SIGINT: %v", waitErr)
				}
			case <-time.After(waitTimeout):
				_ = cmd.Process.Kill()
				<-exited
				t.Errorf("the demo did not stop within %v of SIGINT", waitTimeout)
			}
		}
		if t.Failed() {
			t.Logf("demo output:\n%s%s", d.stdout.String(), d.stderr.String())
		}
	})
	select {
	case d.url = <-url:
	case <-exited:
		t.Fatalf("demo %q exited before serving its page: %v", args, waitErr)
	case <-time.After(waitTimeout):
		t.Fatalf("demo %q: no page within %v", args, waitTimeout)
	}
	return d
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

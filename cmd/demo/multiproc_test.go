package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coordelect/coordelect/election"
)

// proc is one `demo node` process.
type proc struct {
	name   string
	cmd    *exec.Cmd
	gossip string // memberlist address
	http   string // base URL
	stderr syncBuffer
	exited chan struct{} // closed once Wait has returned
	err    error         // Wait's result
}

// buildDemo builds this command into a temporary directory.
func buildDemo(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool in PATH to build the demo binary")
	}
	bin := filepath.Join(t.TempDir(), "demo")
	out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

var readyLine = regexp.MustCompile(`^node (\S+): gossip (\S+), (http://\S+)/status$`)

// startNode starts `demo node` with args on loopback ports picked by the
// process, waits for the line that gives them, and kills the process at
// the end of the test.
func startNode(t *testing.T, bin, name string, args ...string) *proc {
	t.Helper()
	args = append([]string{"node", "-name", name, "-bind", "127.0.0.1:0", "-http", "127.0.0.1:0", "-profile", "local"}, args...)
	p := &proc{name: name, cmd: exec.Command(bin, args...), exited: make(chan struct{})}
	p.cmd.Stderr = &p.stderr
	line := make(chan string, 1)
	p.cmd.Stdout = &firstLine{ch: line}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.kill(t) })
	select {
	case s := <-line:
		m := readyLine.FindStringSubmatch(s)
		if m == nil || m[1] != name {
			t.Fatalf("%s: first line %q; stderr:\n%s", name, s, p.stderr.String())
		}
		p.gossip, p.http = m[2], m[3]
	case <-time.After(waitTimeout):
		t.Fatalf("%s: not started within %v; stderr:\n%s", name, waitTimeout, p.stderr.String())
	}
	return p
}

// firstLine is a Writer that sends the first line written to it on ch and
// discards the rest.
type firstLine struct {
	buf  []byte
	ch   chan<- string
	sent bool
}

func (f *firstLine) Write(b []byte) (int, error) {
	if !f.sent {
		f.buf = append(f.buf, b...)
		if i := bytes.IndexByte(f.buf, '\n'); i >= 0 {
			f.ch <- string(f.buf[:i])
			f.sent, f.buf = true, nil
		}
	}
	return len(b), nil
}

// kill SIGKILLs the process if it still runs and waits for it.
func (p *proc) kill(t *testing.T) {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.exited:
	case <-time.After(waitTimeout):
		t.Errorf("%s: still running after SIGKILL", p.name)
	}
	if t.Failed() {
		t.Logf("%s stderr:\n%s", p.name, p.stderr.String())
	}
}

// status reads the process's /status.
func (p *proc) status() (election.StatusDocument, error) {
	var st election.StatusDocument
	code, err := getJSON(p.http+"/status", &st)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("status %d", code)
	}
	return st, err
}

// agreed reports the coordinator and term every process reports, if they
// all report the same one.
func agreed(procs []*proc) (coordinator string, term uint64, ok bool) {
	for i, p := range procs {
		st, err := p.status()
		if err != nil || st.Coordinator == "" || i > 0 && (st.Coordinator != coordinator || st.Term != term) {
			return "", 0, false
		}
		coordinator, term = st.Coordinator, st.Term
	}
	return coordinator, term, true
}

// waitAgreedOn waits until every process reports coordinator want.
func waitAgreedOn(t *testing.T, procs []*proc, want string) uint64 {
	t.Helper()
	var term uint64
	waitFor(t, waitTimeout, "agreement on "+want, func() bool {
		var c string
		var ok bool
		c, term, ok = agreed(procs)
		return ok && c == want
	})
	return term
}

// Four `demo node` processes on loopback (encrypted gossip) elect the
// highest-rated. SIGTERM of the coordinator hands off to the next at once,
// and the process leaves and exits 0; SIGKILL of that one makes the
// survivors agree on the next after the heartbeat timeout.
func TestMultiProcessFailover(t *testing.T) {
	bin := buildDemo(t)
	key := "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // 32 bytes
	first := startNode(t, bin, "n1", "-rating", "1", "-key", key)
	procs := []*proc{first}
	for i := 2; i <= 4; i++ {
		procs = append(procs, startNode(t, bin, fmt.Sprint("n", i), "-rating", fmt.Sprint(i), "-key", key, "-join", first.gossip))
	}
	term := waitAgreedOn(t, procs, "n4")
	if body := get(t, procs[3].http+"/metrics"); !strings.Contains(body, "coordelect_is_coordinator 1") {
		t.Errorf("n4 /metrics does not say it leads")
	}
	if body := get(t, procs[0].http+"/healthz"); body != "ok\n" {
		t.Errorf("n1 /healthz: %q", body)
	}

	stopped := time.Now()
	if err := procs[3].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	next := waitAgreedOn(t, procs[:3], "n3")
	t.Logf("SIGTERM of coordinator n4: n1..n3 agreed on n3 %v later", time.Since(stopped))
	procs[3].waitExit(t)
	waitFor(t, waitTimeout, "n4 seen as gone after its leave", func() bool {
		st, err := procs[0].status()
		i := slices.IndexFunc(st.Members, func(m election.StatusMember) bool { return m.Name == "n4" })
		return err == nil && (i < 0 || !st.Members[i].Alive)
	})

	killed := time.Now()
	if err := procs[2].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	last := waitAgreedOn(t, procs[:2], "n2")
	t.Logf("SIGKILL of coordinator n3: n1, n2 agreed on n2 %v later", time.Since(killed))
	if !(term < next && next < last) {
		t.Errorf("terms %d, %d, %d: want them growing", term, next, last)
	}
}

// waitExit waits for the process to exit with status 0.
func (p *proc) waitExit(t *testing.T) {
	t.Helper()
	select {
	case <-p.exited:
		if p.err != nil {
			t.Errorf("%s: %v, want exit status 0", p.name, p.err)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("%s still running %v after SIGTERM", p.name, waitTimeout)
	}
}

// Three `demo node` processes told to expect a cluster of 7 (-quorum 7)
// never elect anyone; stopped together with SIGINT, each leaves while the
// others do, so no leave is confirmed, and every one exits 0 all the same
// (the unconfirmed leave is a warning, as in Handle.Close, which demo node
// runs).
func TestMultiProcessStopWithoutQuorum(t *testing.T) {
	bin := buildDemo(t)
	first := startNode(t, bin, "n1", "-quorum", "7")
	procs := []*proc{first}
	for i := 2; i <= 3; i++ {
		procs = append(procs, startNode(t, bin, fmt.Sprint("n", i), "-quorum", "7", "-join", first.gossip))
	}
	waitFor(t, waitTimeout, "every node sees the 3 members, and no coordinator", func() bool {
		for _, p := range procs {
			st, err := p.status()
			alive := 0
			for _, m := range st.Members {
				if m.Alive {
					alive++
				}
			}
			if err != nil || alive != 3 || st.Coordinator != "" {
				return false
			}
		}
		return true
	})
	var r election.Readiness
	if code, err := getDoc(first.http+"/readyz", &r); err != nil || code != http.StatusServiceUnavailable ||
		len(r.Reasons) != 1 || !strings.Contains(r.Reasons[0], "3 of 7 voters visible") {
		t.Errorf("n1 /readyz: %d %+v (%v); want 503, waiting for the expected voters or no quorum, 3 of 7", code, r, err)
	}
	for _, p := range procs {
		if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range procs {
		p.waitExit(t)
		if t.Failed() {
			t.Logf("%s stderr:\n%s", p.name, p.stderr.String())
		}
	}
}

package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// runRefused runs `demo node` with args, which the cluster must refuse, and
// returns its exit code and stderr once it has exited.
func runRefused(t *testing.T, bin, name string, args ...string) (int, string) {
	t.Helper()
	args = append([]string{"node", "-name", name, "-bind", "127.0.0.1:0", "-http", "127.0.0.1:0", "-profile", "local"}, args...)
	cmd := exec.Command(bin, args...)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if err == nil {
			return 0, stderr.String()
		}
		if !errors.As(err, &ee) {
			t.Fatalf("%s: %v", name, err)
		}
		return ee.ExitCode(), stderr.String()
	case <-time.After(waitTimeout):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("%s: still running %v after it was refused; stderr:\n%s", name, waitTimeout, stderr.String())
	}
	return 0, ""
}

// A second `demo node` under a name a running member holds, or with another
// algorithm or quorum size, exits non-zero with one line that names what
// is wrong; the running cluster keeps its coordinator and term.
func TestMultiProcessRefusedNodeExits(t *testing.T) {
	bin := buildDemo(t)
	a := startNode(t, bin, "a", "-rating", "2")
	b := startNode(t, bin, "b", "-rating", "1", "-join", a.gossip)
	procs := []*proc{a, b}
	term := waitAgreedOn(t, procs, "a")
	for _, tc := range []struct {
		name string
		args []string
		want []string // in the last line of stderr
	}{
		{"a", []string{"-rating", "9"}, []string{`name "a" is taken`, a.gossip}},
		{"c", []string{"-rating", "9", "-algorithm", "ring"}, []string{"Algorithm", "bully", "ring"}},
		{"d", []string{"-rating", "9", "-quorum", "3"}, []string{"QuorumSize", "0", "3"}},
	} {
		code, stderr := runRefused(t, bin, tc.name, append(tc.args, "-join", a.gossip)...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		last := lines[len(lines)-1]
		if code == 0 || !strings.HasPrefix(last, "demo node: ") {
			t.Errorf("%s %v: exit %d, last line %q; want a non-zero exit and the error", tc.name, tc.args, code, last)
		}
		for _, w := range tc.want {
			if !strings.Contains(last, w) {
				t.Errorf("%s %v: last line %q does not say %q", tc.name, tc.args, last, w)
			}
		}
	}
	for _, p := range procs {
		st, err := p.status()
		if err != nil || st.Coordinator != "a" || st.Term != term {
			t.Errorf("%s after the refusals: %+v, %v; want coordinator a in term %d", p.name, st, err, term)
		}
	}
}

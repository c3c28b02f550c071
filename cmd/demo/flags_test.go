package main

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
)

// Every bad flag of the live modes prints one line that names the flag and
// exits 2 before anything starts.
func TestLiveBadFlags(t *testing.T) {
	long := strings.Repeat("x", 600)
	for _, tc := range []struct{ args, mention string }{
		{"-n 0", "-n"}, {"-n 17", "-n"}, {"-n x", "-n"},
		{"-algorithm raft", "-algorithm"}, {"-quorum 6", "-quorum"}, {"-quorum -1", "-quorum"},
		{"-quorum 3", "-quorum"}, {"-n 4 -quorum 3", "-quorum"}, {"-n 16 -quorum 14", "-quorum"},
		{"-http nohost", "-http"}, {"-http 127.0.0.1:99999", "-http"},
		{"-key !!!", "-key"}, {"-key c2hvcnQ=", "-key"}, {"-log-level loud", "-log-level"},
		{"-jobs 65", `-jobs "65"`}, {"-jobs a,a", `-jobs "a,a"`}, {"-jobs -1", `-jobs "-1"`},
		{"-nosuchflag", "-nosuchflag"}, {"extra", "extra"},
		{"node", "-name"}, {"node -name " + long, "-name"},
		{"node -name a -bind localhost:7946", "-bind"}, {"node -name a -bind 127.0.0.1:70000", "-bind"},
		{"node -name a -advertise 10.0.0.1", "-advertise"}, {"node -name a -advertise 10.0.0.1:0", "-advertise"},
		{"node -name a -join 127.0.0.1", "-join"}, {"node -name a -join 127.0.0.1:7946,127.0.0.1:0", "-join"},
		{"node -name a -rating x", "-rating"}, {"node -name a -algorithm raft", "-algorithm"},
		{"node -name a -quorum -1", "-quorum"}, {"node -name a -profile fast", "-profile"},
		{"node -name a -solo-delay 0s", "-solo-delay"}, {"node -name a -solo-delay 15ms", "-solo-delay"},
		{"node -name a -key abc", "-key"}, {"node -name a -http :x", "-http"},
		{"node -name a -log-level loud", "-log-level"}, {"node -name a extra", "extra"},
		{"node -name a -jobs default", `-jobs "default"`},
	} {
		var out, errb bytes.Buffer
		rc := run(strings.Fields(tc.args), &out, &errb)
		msg := strings.TrimSpace(errb.String())
		if rc != 2 || strings.Count(msg, "\n") != 0 || out.Len() != 0 {
			t.Errorf("%.40q: rc=%d, stderr %q, stdout %q; want rc 2, one line, no output", tc.args, rc, msg, out.String())
		}
		if !strings.Contains(msg, tc.mention) {
			t.Errorf("%.40q: %q does not name %s", tc.args, msg, tc.mention)
		}
	}
}

// A key is never echoed in an error.
func TestBadKeyNotEchoed(t *testing.T) {
	const key = "c2hvcnQta2V5" // 9 bytes: too short for AES
	var out, errb bytes.Buffer
	if rc := run([]string{"-key", key}, &out, &errb); rc != 2 || strings.Contains(errb.String(), key) {
		t.Fatalf("rc=%d stderr %q: want rc 2 without the key", rc, errb.String())
	}
}

// Flags are checked before anything listens: with the -http port taken, a
// bad flag still gives the usage error, not "address in use".
func TestBadFlagsBeforeListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	for _, args := range [][]string{
		{"-http", addr, "-algorithm", "raft"},
		{"node", "-name", "a", "-http", addr, "-bind", "127.0.0.1:0", "-quorum", "-2"},
	} {
		var out, errb bytes.Buffer
		if rc := run(args, &out, &errb); rc != 2 || strings.Contains(errb.String(), "in use") {
			t.Errorf("%q: rc=%d stderr %q; want the usage error", args, rc, errb.String())
		}
	}
	// With good flags, the taken port is a runtime error (1), and nothing
	// else was started.
	var out, errb bytes.Buffer
	if rc := run([]string{"node", "-name", "a", "-http", addr, "-bind", "127.0.0.1:0"}, &out, &errb); rc != 1 ||
		!strings.Contains(errb.String(), "-http") || out.Len() != 0 {
		t.Errorf("port taken: rc=%d stderr %q stdout %q; want rc 1 naming -http", rc, errb.String(), out.String())
	}
}

// Every command prints its usage on -h to stdout and exits 0 (not "flag:
// help requested", exit 2); demo -h and demo help name every command.
func TestHelp(t *testing.T) {
	for _, tc := range []struct {
		args string
		want []string
	}{
		{"-h", []string{"usage: demo [flags]", "-algorithm", "demo node", "demo sim", "coordbench", "demo help"}},
		{"-help", []string{"usage: demo [flags]", "demo node", "demo sim", "coordbench"}},
		{"help", []string{"usage: demo [flags]", "-algorithm", "demo node", "demo sim", "coordbench", "demo help"}},
		{"node -h", []string{"usage: demo node", "-algorithm", "-http"}},
		{"help node", []string{"usage: demo node", "-join"}},
		{"sim -h", []string{"usage: demo sim", "-algorithm", "-explore", "-script"}},
		{"sim -n 3 -help", []string{"usage: demo sim", "-max-ms"}},
		{"help sim", []string{"usage: demo sim", "-seed"}},
	} {
		var out, errb bytes.Buffer
		rc := run(strings.Fields(tc.args), &out, &errb)
		if rc != 0 || errb.Len() != 0 {
			t.Errorf("%q: rc=%d stderr %q; want rc 0 and the usage on stdout", tc.args, rc, errb.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%q: stdout does not contain %q:\n%s", tc.args, w, out.String())
			}
		}
	}
	// Help for a command that does not exist is a usage error.
	var out, errb bytes.Buffer
	if rc := run([]string{"help", "nosuch"}, &out, &errb); rc != 2 || !strings.Contains(errb.String(), "nosuch") {
		t.Errorf("help nosuch: rc=%d stderr %q; want rc 2 naming it", rc, errb.String())
	}
}

// demo node's HTTP port does not default to the page's: both run on one
// host at once with their defaults.
func TestNodeHTTPDefault(t *testing.T) {
	node, err := parseNodeFlags([]string{"-name", "a"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	page, err := parseClusterFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if node.http == page.http {
		t.Fatalf("demo node -http defaults to %s, the page's address", node.http)
	}
	if _, port, _ := net.SplitHostPort(node.http); port != "0" {
		t.Errorf("demo node -http defaults to %s; want port 0 (a free port, printed at start)", node.http)
	}
}

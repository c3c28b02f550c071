package kubernetes

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// The lab stands in for a Kubernetes node: every pod is a network
// namespace with one interface, eth0, on a bridge in the test's namespace
// (ip netns, veth, bridge: as a CNI plugin wires pods), and each new pod
// gets an address never used before, as a recreated pod gets a new IP.
// The headless Service's DNS name is served by a DNS server that the test
// runs on the bridge's address and updates as pods come and go; each
// pod's /etc/resolv.conf (ip netns exec mounts /etc/netns/NS/resolv.conf
// over it) points at that server with the cluster's search domain, so the
// manifest's -join=coordelect:7946 resolves as it would in a pod.

// labDomain is the search domain of the pods' resolv.conf, and serviceFQDN
// the name the DNS server answers.
const (
	labDomain   = "default.svc.cluster.local"
	serviceFQDN = "coordelect." + labDomain + "."
)

// requireLab skips the test when it cannot build the lab (not root, no
// ip command), unless CI=true, where it fails.
func requireLab(t *testing.T) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "needs root for network namespaces"
	} else if _, err := exec.LookPath("ip"); err != nil {
		why = "needs the ip command (iproute2)"
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the rolling-restart test %s (CI=true: not skipped)", why)
	}
	t.Skipf("the rolling-restart test %s; skipped", why)
}

// labs counts the labs this process built.
var labs atomic.Int32

// lab is the bridge, the DNS server and the pods' namespaces.
type lab struct {
	t      *testing.T
	id     string // a short tag for names: the test process's PID
	bridge string
	subnet string // "10.78.N."; the bridge is .254
	dns    *dns.Server
	dnsTCP *dns.Server

	mu    sync.Mutex
	next  int      // the next pod address's last byte
	addrs []net.IP // the Service's answer

	nsMu sync.Mutex
	nss  []string // namespaces to delete
}

// ip runs the ip command.
func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// newLab builds the bridge and starts the DNS server on it; everything is
// removed at the end of the test.
func newLab(t *testing.T) *lab {
	// Names and subnet differ from one lab to the next: a deleted
	// namespace's veth goes away only once the kernel frees it.
	pid, k := os.Getpid()%100000, labs.Add(1)
	id := fmt.Sprintf("%d%c", pid, 'a'+rune(k%26))
	l := &lab{t: t, id: id, bridge: "crbr" + id,
		subnet: fmt.Sprintf("10.78.%d.", (pid+int(k))%250), next: 1}
	t.Cleanup(l.remove)
	for _, args := range [][]string{
		{"link", "add", l.bridge, "type", "bridge"},
		{"addr", "add", l.subnet + "254/24", "dev", l.bridge},
		{"link", "set", l.bridge, "up"},
	} {
		if err := ipCmd(args...); err != nil {
			t.Fatal(err)
		}
	}
	mux := dns.NewServeMux()
	mux.HandleFunc(".", l.answer)
	addr := l.subnet + "254:53"
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatalf("DNS server: %v", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		pc.Close()
		t.Fatalf("DNS server: %v", err)
	}
	l.dns = &dns.Server{PacketConn: pc, Handler: mux}
	l.dnsTCP = &dns.Server{Listener: ln, Handler: mux}
	go func() { _ = l.dns.ActivateAndServe() }()
	go func() { _ = l.dnsTCP.ActivateAndServe() }()
	return l
}

// answer serves the Service's name: its A records are the pods' current
// addresses (none: an empty answer, as for a Service without endpoints);
// AAAA is empty; other names do not exist.
func (l *lab) answer(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	if len(req.Question) != 1 || !strings.EqualFold(req.Question[0].Name, serviceFQDN) {
		m.Rcode = dns.RcodeNameError
		_ = w.WriteMsg(m)
		return
	}
	if req.Question[0].Qtype == dns.TypeA {
		l.mu.Lock()
		for _, ip := range l.addrs {
			m.Answer = append(m.Answer, &dns.A{
				Hdr: dns.RR_Header{Name: serviceFQDN, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 5},
				A:   ip,
			})
		}
		l.mu.Unlock()
	}
	_ = w.WriteMsg(m)
}

// publish adds ip to the Service's answer, and unpublish removes it.
func (l *lab) publish(ip net.IP) {
	l.mu.Lock()
	l.addrs = append(l.addrs, ip)
	l.mu.Unlock()
}

func (l *lab) unpublish(ip net.IP) {
	l.mu.Lock()
	l.addrs = slices.DeleteFunc(l.addrs, func(a net.IP) bool { return a.Equal(ip) })
	l.mu.Unlock()
}

// newNetns creates a pod's namespace with a new address, wired to the
// bridge, and its resolv.conf; it returns the namespace's name and IP.
func (l *lab) newNetns() (string, net.IP, error) {
	l.mu.Lock()
	k := l.next
	l.next++
	l.mu.Unlock()
	if k > 250 {
		return "", nil, errors.New("the lab's subnet is used up")
	}
	ns := fmt.Sprintf("cr%s-%d", l.id, k)
	veth := fmt.Sprintf("crv%s-%d", l.id, k)
	ip := net.ParseIP(l.subnet + strconv.Itoa(k))
	l.nsMu.Lock()
	l.nss = append(l.nss, ns)
	l.nsMu.Unlock()
	dir := filepath.Join("/etc/netns", ns)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	conf := fmt.Sprintf("nameserver %s254\nsearch %s svc.cluster.local cluster.local\noptions ndots:5\n", l.subnet, labDomain)
	if err := os.WriteFile(filepath.Join(dir, "resolv.conf"), []byte(conf), 0o644); err != nil {
		return "", nil, err
	}
	for _, args := range [][]string{
		{"netns", "add", ns},
		{"link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"link", "set", veth, "master", l.bridge, "up"},
		{"-n", ns, "addr", "add", ip.String() + "/24", "dev", "eth0"},
		{"-n", ns, "link", "set", "eth0", "up"},
		{"-n", ns, "link", "set", "lo", "up"},
	} {
		if err := ipCmd(args...); err != nil {
			return "", nil, err
		}
	}
	return ns, ip, nil
}

// deleteNetns removes a pod's namespace (its veth pair goes with it) and
// its resolv.conf.
func (l *lab) deleteNetns(ns string) {
	if err := ipCmd("netns", "del", ns); err != nil {
		l.t.Logf("removing %s: %v", ns, err)
	}
	_ = os.RemoveAll(filepath.Join("/etc/netns", ns))
	l.nsMu.Lock()
	l.nss = slices.DeleteFunc(l.nss, func(s string) bool { return s == ns })
	l.nsMu.Unlock()
}

// remove deletes what the lab built.
func (l *lab) remove() {
	if l.dns != nil {
		_ = l.dns.Shutdown()
		_ = l.dnsTCP.Shutdown()
	}
	l.nsMu.Lock()
	nss := slices.Clone(l.nss)
	l.nsMu.Unlock()
	for _, ns := range nss {
		l.deleteNetns(ns)
	}
	_ = ipCmd("link", "del", l.bridge)
}

// pod is one incarnation of a member: a `demo node` process in a
// namespace of its own.
type pod struct {
	name, ns string
	ip       net.IP
	cmd      *exec.Cmd
	logPath  string
	started  time.Time
	signaled time.Time // SIGTERM sent
	exited   chan struct{}
	exitCode int // valid once exited is closed
	exitAt   time.Time
}

// startPod starts `demo node` with args (the manifest's, with $(POD_NAME)
// and $(POD_IP) filled in) in a new namespace, and publishes its address,
// as the Service lists a pod once it has an IP (publishNotReadyAddresses).
func (l *lab) startPod(bin, dir, name string, args []string) (*pod, error) {
	ns, ip, err := l.newNetns()
	if err != nil {
		return nil, err
	}
	p := &pod{name: name, ns: ns, ip: ip, exited: make(chan struct{}),
		logPath: filepath.Join(dir, fmt.Sprintf("%s-%s.log", name, ns))}
	filled := make([]string, len(args))
	for i, a := range args {
		filled[i] = strings.NewReplacer("$(POD_NAME)", name, "$(POD_IP)", ip.String()).Replace(a)
	}
	logf, err := os.Create(p.logPath)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command("ip", append([]string{"netns", "exec", ns, bin}, filled...)...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	l.publish(ip)
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		l.unpublish(ip)
		return nil, err
	}
	go func() {
		err := p.cmd.Wait()
		p.exitAt = time.Now()
		logf.Close()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			p.exitCode = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				p.exitCode = 128 + int(ws.Signal())
			}
		default:
			p.exitCode = -1
		}
		close(p.exited)
	}()
	return p, nil
}

// terminate stops a pod as the kubelet does: the Service drops its
// address, it gets SIGTERM, and SIGKILL after grace. It returns once the
// process has exited; the namespace goes with it.
func (l *lab) terminate(p *pod, grace time.Duration) {
	l.unpublish(p.ip)
	p.signaled = time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	l.deleteNetns(p.ns)
}

// logEvent is a line of a pod's log that the test reads: when the pod
// started or stopped leading.
type logEvent struct {
	at    time.Time
	pod   *pod
	start bool // started leading; else stopped
	term  string
}

// leadership reads the pod's "started leading" and "stopped leading" lines
// of the unnamed election (hclog's text format, millisecond timestamps);
// the lines of named elections (demo node's -jobs), which carry their
// election= field, are not the coordinator's.
func (p *pod) leadership() ([]logEvent, error) {
	f, err := os.Open(p.logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []logEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		start := strings.Contains(line, "started leading")
		if !start && !strings.Contains(line, "stopped leading") || strings.Contains(line, " election=") {
			continue
		}
		ts, _, _ := strings.Cut(line, " ")
		at, err := time.Parse("2006-01-02T15:04:05.000Z0700", ts)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", p.logPath, line, err)
		}
		term := ""
		if _, rest, ok := strings.Cut(line, "term="); ok {
			term, _, _ = strings.Cut(rest, " ")
		}
		out = append(out, logEvent{at: at, pod: p, start: start, term: term})
	}
	return out, sc.Err()
}

// grep returns the lines of the pod's log that contain any of subs.
func (p *pod) grep(subs ...string) []string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for line := range strings.SplitSeq(string(data), "\n") {
		for _, s := range subs {
			if strings.Contains(line, s) {
				out = append(out, line)
				break
			}
		}
	}
	return out
}

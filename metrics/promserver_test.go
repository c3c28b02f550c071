package metrics

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// promServer is a real Prometheus server run by a test on 127.0.0.1.
type promServer struct {
	url     string
	logPath string
	client  *http.Client
	cmd     *exec.Cmd
	exited  chan struct{}
}

// promConfig is the server's configuration: one job scraping targets
// every second, and the rule file evaluated every second.
const promConfig = `global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
rule_files:
  - %q
scrape_configs:
  - job_name: coordelect
    static_configs:
      - targets: [%s]
`

// startPrometheus starts bin scraping targets with the rules in
// alertsFile, waits until it is ready, and stops it when the test ends.
// A port taken between choosing and binding it is retried.
func startPrometheus(t *testing.T, bin string, targets []string) *promServer {
	t.Helper()
	dir := t.TempDir()
	rules, err := filepath.Abs(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "prometheus.yml")
	quoted := "'" + strings.Join(targets, "', '") + "'"
	if err := os.WriteFile(config, fmt.Appendf(nil, promConfig, rules, quoted), 0o644); err != nil {
		t.Fatal(err)
	}
	for attempt := 0; ; attempt++ {
		p, err := launchPrometheus(t, bin, config, dir)
		if err == nil {
			return p
		}
		if attempt == 2 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
	}
}

func launchPrometheus(t *testing.T, bin, config, dir string) (*promServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	logFile, err := os.CreateTemp(dir, "prometheus-*.log")
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	p := &promServer{url: "http://" + addr, logPath: logFile.Name(), exited: make(chan struct{}),
		client: &http.Client{Timeout: 5 * time.Second}}
	p.cmd = exec.Command(bin,
		"--config.file="+config,
		"--storage.tsdb.path="+filepath.Join(dir, "data-"+strconv.Itoa(port)),
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	if err := p.waitReady(30 * time.Second); err != nil {
		p.stop()
		return nil, fmt.Errorf("prometheus not ready: %w\n%s", err, p.log())
	}
	t.Cleanup(p.stop)
	return p, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls /-/ready until it answers 200 or the process exits.
func (p *promServer) waitReady(within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		resp, err := p.client.Get(p.url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.exited:
			return errors.New("the process exited")
		case <-time.After(100 * time.Millisecond): // an external process: poll
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no 200 from /-/ready within %v (last error %v)", within, err)
		}
	}
}

// stop interrupts the server and waits for it, killing it after 10 s.
func (p *promServer) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	p.client.CloseIdleConnections()
}

func (p *promServer) log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

// sample is one element of an instant vector.
type sample struct {
	Metric map[string]string
	Value  float64
}

// query evaluates expr now through /api/v1/query; it fails on an HTTP or
// PromQL error and on a result that is not an instant vector.
func (p *promServer) query(expr string) ([]sample, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := p.api("/api/v1/query?query="+url.QueryEscape(expr), &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("result type %q, want vector", data.ResultType)
	}
	out := make([]sample, 0, len(data.Result))
	for _, r := range data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("value %v: %w", r.Value, err)
		}
		out = append(out, sample{Metric: r.Metric, Value: v})
	}
	return out, nil
}

// promRule is a rule as /api/v1/rules reports it.
type promRule struct {
	Name      string `json:"name"`
	Query     string `json:"query"`
	Type      string `json:"type"`
	State     string `json:"state"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
}

func (p *promServer) rules() ([]promRule, error) {
	var data struct {
		Groups []struct {
			Rules []promRule `json:"rules"`
		} `json:"groups"`
	}
	if err := p.api("/api/v1/rules", &data); err != nil {
		return nil, err
	}
	var out []promRule
	for _, g := range data.Groups {
		out = append(out, g.Rules...)
	}
	return out, nil
}

// api GETs path and decodes the data of a successful response into out.
func (p *promServer) api(path string, out any) error {
	resp, err := p.client.Get(p.url + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var r struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("HTTP %d: %w: %.200s", resp.StatusCode, err, body)
	}
	if r.Status != "success" {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, r.Error)
	}
	return json.Unmarshal(r.Data, out)
}

// poll calls check every 200 ms until it returns nil, and returns its last
// error once within has passed: Prometheus is a real process that scrapes
// and evaluates on its own clock.
func poll(within time.Duration, check func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := check()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

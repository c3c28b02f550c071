package main

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/coordelect/coordelect/metrics"
)

// webFiles is the page: HTML, CSS and JavaScript, no external resources.
//
//go:embed web
var webFiles embed.FS

// runCluster runs the local cluster and its web page until ctx ends, then
// stops every node gracefully. ready, if not nil, is called once the page
// is served, with the cluster and the page's URL (tests use it).
func runCluster(ctx context.Context, args []string, stdout, stderr io.Writer,
	sink *metrics.MemberlistSink, ready func(*localCluster, string)) error {
	o, err := parseClusterFlags(args, stdout)
	if err != nil {
		if errors.Is(err, errHelp) {
			return nil
		}
		return err
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "demo", Level: hclog.Info, Output: stderr})
	nodeLog := hclog.New(&hclog.LoggerOptions{Name: "node", Level: o.level, Output: stderr})
	ln, err := net.Listen("tcp", o.http)
	if err != nil {
		return fmt.Errorf("-http: %w", err)
	}
	c := newLocalCluster(o, logger, nodeLog, sink)
	c.disrupted("the start") // the first agreement reports the start-up time
	if err := c.start(); err != nil {
		_ = ln.Close()
		return err
	}
	stopServing := c.serve(ln)
	url := pageURL(ln.Addr())
	fmt.Fprintf(stdout, "coordelect demo: %d nodes (%s) on 127.0.0.1; open %s\n", o.n, o.alg, url)
	if ready != nil {
		ready(c, url)
	}
	<-ctx.Done()
	logger.Info("stopping: the coordinator hands off, every node leaves")
	stopServing()
	if o.level > hclog.Info {
		nodeLog.SetLevel(hclog.Off) // memberlist's errors while its peers shut down are noise
	}
	c.stop()
	return nil
}

// serve runs the watcher and the web page on ln. The function it returns
// ends every event stream, stops the server and the watcher, and waits.
func (c *localCluster) serve(ln net.Listener) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { (&watcher{c: c}).run(ctx) })
	srv := newServer(c.handler(), c.log)
	wg.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			c.log.Error("http server stopped", "error", err)
		}
	})
	return func() {
		c.events.close()
		shutdown(srv, c.log)
		cancel()
		wg.Wait()
	}
}

// pageURL is the URL to print for the listener: a wildcard address is
// reachable on loopback.
func pageURL(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return "http://" + a.String()
	}
	host := tcp.IP.String()
	if tcp.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, fmt.Sprint(tcp.Port))
}

// handler serves the page and its API:
//
//	GET  /                          the page (web/)
//	GET  /api/state                 the clusterView as JSON
//	GET  /api/events                server-sent events: state, log, backlog
//	POST /api/nodes/{name}/crash    stop a node as a crash would (no hand-off, no leave)
//	POST /api/nodes/{name}/restart  start it again under the same name and port
//	POST /api/nodes/{name}/resign   the coordinator hands off
//	POST /api/nodes/{name}/rating   {"rating": N} or {"delta": D}
//	POST /api/partition             {"minority": [names]} or no body for the default split
//	POST /api/heal                  end the partition
//	GET  /nodes/{name}/status       the node's status, as `demo node` serves /status
//	GET  /nodes/{name}/leader       the coordinator it reports (election.NewHandler)
//	GET  /nodes/{name}/metrics      the node's Prometheus metrics
//	GET  /nodes/{name}/healthz      200 while the node runs, 503 while it is down
//	GET  /nodes/{name}/readyz       200 while it knows a coordinator, else 503 and why
//	GET  /metrics                   every running node's metrics, each series labelled node="name"
//	GET  /healthz                   200 "ok"
//
// Cross-origin POSTs are refused (http.CrossOriginProtection), so another
// site open in the browser cannot drive the cluster.
func (c *localCluster) handler() http.Handler {
	mux := http.NewServeMux()
	static, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic(err) // the embedded tree always has web/
	}
	mux.Handle("GET /", http.FileServerFS(static))
	mux.HandleFunc("GET /api/state", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, c.view()) })
	mux.HandleFunc("GET /api/events", c.events.serve)
	mux.HandleFunc("POST /api/nodes/{name}/crash", c.act(func(r *http.Request) error { return c.crash(r.PathValue("name")) }))
	mux.HandleFunc("POST /api/nodes/{name}/restart", c.act(func(r *http.Request) error { return c.restart(r.PathValue("name")) }))
	mux.HandleFunc("POST /api/nodes/{name}/resign", c.act(func(r *http.Request) error { return c.resign(r.PathValue("name")) }))
	mux.HandleFunc("POST /api/nodes/{name}/rating", c.act(c.ratingRequest))
	mux.HandleFunc("POST /api/partition", c.act(c.partitionRequest))
	mux.HandleFunc("POST /api/heal", c.act(func(*http.Request) error { return c.heal() }))
	handlePeer(mux, "/nodes/{name}", func(r *http.Request) (*peer, error) { return c.running(r.PathValue("name")) })
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		promhttp.HandlerFor(c.gatherers(), promhttp.HandlerOpts{}).ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	return http.NewCrossOriginProtection().Handler(mux)
}

// gatherers returns the registries of the running nodes. Each node's
// series carry its node label, so they do not collide.
func (c *localCluster) gatherers() prometheus.Gatherers {
	var gs prometheus.Gatherers
	for _, s := range c.slots {
		if p := s.peer.Load(); p != nil {
			gs = append(gs, p.reg)
		}
	}
	return gs
}

// errBadRequest is a request body that does not parse.
var errBadRequest = errors.New("bad request")

// act runs an action and answers {"ok": true} or {"error": "..."} with a
// status code that fits the error.
func (c *localCluster) act(fn func(*http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := fn(r)
		code := http.StatusOK
		switch {
		case err == nil:
			writeJSON(w, code, map[string]bool{"ok": true})
			return
		case errors.Is(err, errNoNode):
			code = http.StatusNotFound
		case errors.Is(err, errConflict), errors.Is(err, errNodeDown):
			code = http.StatusConflict
		case errors.Is(err, errBadRequest):
			code = http.StatusBadRequest
		default:
			code = http.StatusInternalServerError
		}
		writeJSON(w, code, map[string]string{"error": err.Error()})
	}
}

// decodeBody decodes an optional small JSON body into v.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %v", errBadRequest, err)
	}
	return nil
}

// ratingRequest sets a rating, {"rating": N}, or moves it, {"delta": D}
// (the page's − and + buttons: several quick clicks add up).
func (c *localCluster) ratingRequest(r *http.Request) error {
	var body struct {
		Rating *int64 `json:"rating"`
		Delta  *int64 `json:"delta"`
	}
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	if (body.Rating == nil) == (body.Delta == nil) {
		return fmt.Errorf(`%w: want {"rating": N} or {"delta": D}`, errBadRequest)
	}
	name := r.PathValue("name")
	if body.Delta != nil {
		return c.moveRating(name, *body.Delta)
	}
	return c.setRating(name, *body.Rating)
}

func (c *localCluster) partitionRequest(r *http.Request) error {
	var body struct {
		Minority []string `json:"minority"`
	}
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	return c.partition(body.Minority)
}

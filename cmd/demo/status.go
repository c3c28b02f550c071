package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// errNodeDown is served for a node of the local cluster that is crashed.
var errNodeDown = errors.New("node is down")

// peerLookup finds the peer a request is about: errNodeDown when it is not
// running, another error when there is no such node.
type peerLookup func(r *http.Request) (*peer, error)

// handlePeer registers a node's endpoints under prefix ("" or
// "/nodes/{name}"):
//
//	GET prefix/status   the node's election.StatusDocument as JSON
//	GET prefix/leader   its election.LeaderDocument (503 while none is known)
//	GET prefix/healthz  200 "ok" while the node's elector runs, else 503
//	GET prefix/readyz   its election.Readiness: 200 while the node knows a
//	                    coordinator found with others, else 503 and why
//	GET prefix/metrics  the node's Prometheus registry
//
// The first four are election.NewHandler's, as a service embedding
// coordelect serves them (Handle.Handler).
func handlePeer(mux *http.ServeMux, prefix string, lookup peerLookup) {
	for _, doc := range []string{"/status", "/leader", "/healthz", "/readyz"} {
		mux.HandleFunc("GET "+prefix+doc, func(w http.ResponseWriter, r *http.Request) {
			if p := findPeer(w, r, lookup); p != nil {
				http.StripPrefix(strings.TrimSuffix(r.URL.Path, doc), p.api).ServeHTTP(w, r)
			}
		})
	}
	mux.HandleFunc("GET "+prefix+"/metrics", func(w http.ResponseWriter, r *http.Request) {
		if p := findPeer(w, r, lookup); p != nil {
			promhttp.HandlerFor(p.reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
		}
	})
}

// findPeer looks the peer up, answering 503 for a node that is down and
// 404 for an unknown one.
func findPeer(w http.ResponseWriter, r *http.Request, lookup peerLookup) *peer {
	p, err := lookup(r)
	switch {
	case errors.Is(err, errNodeDown):
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	case err != nil:
		http.Error(w, err.Error(), http.StatusNotFound)
	}
	return p
}

// writeJSON writes v as indented JSON with the given status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

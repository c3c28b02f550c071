package main

import (
	"net"
	"net/http"
	_ "net/http/pprof" // the -pprof server's handlers
)

// servePprof serves net/http/pprof on addr (-pprof) for the life of the
// process, so that a run can be profiled at any moment, its start-up
// included: 'go tool pprof http://ADDR/debug/pprof/profile?seconds=20',
// '.../debug/pprof/heap'. addr "" serves nothing.
func servePprof(addr string) error {
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	go func() { _ = http.Serve(ln, nil) }()
	return nil
}

package election_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/electiontest"
)

// A service mounts the handler under a prefix; /leader answers 503 until a
// coordinator is known, then names it and its term (raw, the fencing token,
// and as epoch.tag); /readyz says ready once a coordinator is known.
func ExampleNewHandler() {
	tr := electiontest.NewNetwork().MustJoin(election.Identity{Name: "1"})
	e, err := election.New(election.Config{Transport: tr})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/election/", http.StripPrefix("/election", election.NewHandler(e, nil)))
	get := func(path string) {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		fmt.Print(w.Code, " ", w.Body)
	}
	get("/election/leader")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	sub := e.Subscribe()
	go func() { done <- e.Run(ctx) }()
	for l := range sub.C {
		if l.IsSelf {
			break
		}
	}
	sub.Close()
	get("/election/leader")
	get("/election/readyz")
	cancel()
	<-done
	// Output:
	// 503 {
	//   "coordinator": "",
	//   "term": 0,
	//   "term_text": "",
	//   "is_self": false,
	//   "payload": ""
	// }
	// 200 {
	//   "coordinator": "1",
	//   "term": 4294967297,
	//   "term_text": "1.1",
	//   "is_self": true,
	//   "payload": ""
	// }
	// 200 {
	//   "ready": true,
	//   "reasons": [],
	//   "coordinator": "1",
	//   "term": 4294967297,
	//   "term_text": "1.1"
	// }
}

package coordelect_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/coordelect/coordelect"
	"github.com/coordelect/coordelect/election"
)

// One replica on loopback: it leads alone, and its Leader carries the
// payload it publishes. Close hands off (to nobody here), leaves and shuts
// down.
func ExampleStart() {
	ctx := context.Background()
	leading := make(chan uint64, 1)
	h, err := coordelect.Start(ctx, coordelect.Config{
		Identity: election.Identity{Name: "replica-1", Rating: 1, Payload: "http://127.0.0.1:8080"},
		BindAddr: "127.0.0.1:0", // port 0: picked by the system; h.Addr() tells
		Callbacks: election.Callbacks{OnStartedLeading: func(ctx context.Context, term uint64) {
			leading <- term // do the leader's work under ctx, every write fenced by term
		}},
	})
	if err != nil {
		panic(err)
	}
	term := <-leading
	sub := h.Subscribe() // Leader may lag the callback: wait until it says so too
	for l := range sub.C {
		if l.IsSelf {
			break
		}
	}
	sub.Close()
	l := h.Leader()
	fmt.Println("leader:", l.Coordinator, l.Payload, l.Term == term)
	fmt.Println("close:", h.Close(ctx))
	// Output:
	// leader: replica-1 http://127.0.0.1:8080 true
	// close: <nil>
}

// Subscribe's channel always holds the newest leadership; Close ends one
// subscription without touching the others.
func ExampleHandle_Subscribe() {
	ctx := context.Background()
	h, err := coordelect.Start(ctx, coordelect.Config{Identity: election.Identity{Name: "a"}, BindAddr: "127.0.0.1:0"})
	if err != nil {
		panic(err)
	}
	defer h.Close(ctx)
	first, second := h.Subscribe(), h.Subscribe()
	first.Close()
	_, open := <-first.C
	fmt.Println("first open:", open)
	for l := range second.C {
		if l.Known() {
			fmt.Println("second sees", l.Coordinator)
			break
		}
	}
	second.Close()
	// Output:
	// first open: false
	// second sees a
}

// The handler serves /status, /leader and /readyz as JSON and /healthz as
// text; mount it under a prefix of your choice.
func ExampleHandle_Handler() {
	ctx := context.Background()
	h, err := coordelect.Start(ctx, coordelect.Config{
		Identity: election.Identity{Name: "1", Payload: "10.0.0.1:8080"}, BindAddr: "127.0.0.1:0"})
	if err != nil {
		panic(err)
	}
	defer h.Close(ctx)
	sub := h.Subscribe()
	for l := range sub.C {
		if l.IsSelf {
			break
		}
	}
	sub.Close()
	mux := http.NewServeMux()
	mux.Handle("/election/", http.StripPrefix("/election", h.Handler()))
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("GET", "/election/leader", nil))
	fmt.Print(w.Code, " ", w.Body)
	w = httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("GET", "/election/healthz", nil))
	fmt.Print(w.Code, " ", w.Body)
	// Output:
	// 200 {
	//   "coordinator": "1",
	//   "term": 4294967297,
	//   "term_text": "1.1",
	//   "is_self": true,
	//   "payload": "10.0.0.1:8080"
	// }
	// 200 ok
}

package fencing_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"

	"github.com/coordelect/coordelect/fencing"
)

// ledgerServer is a store of its own behind HTTP, fenced: it keeps a
// ledger and the fence (the highest term claimed), and checks the term a
// request carries in the same critical section as the change the request
// makes. That is the whole recipe: the store decides, under its own lock
// (a database row lock, a conditional put, a mutex here), never the client.
//
//	POST /claim   Fencing-Term: t          advance the fence to t
//	POST /append  Fencing-Term: t, a line  append the line if the fence holds t
//
// Both answer 204, or 409 Conflict when a later term holds the fence, or,
// for /append, 412 Precondition Failed when t was never claimed.
type ledgerServer struct {
	mu    sync.Mutex
	fence uint64
	lines []string
}

func (s *ledgerServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	term, err := strconv.ParseUint(r.Header.Get("Fencing-Term"), 10, 64)
	body, rerr := io.ReadAll(r.Body)
	if err != nil || rerr != nil || r.Method != http.MethodPost {
		http.Error(w, "want POST with a Fencing-Term", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case term < s.fence:
		http.Error(w, fmt.Sprintf("the fence holds %d", s.fence), http.StatusConflict)
	case r.URL.Path == "/claim":
		s.fence = term
		w.WriteHeader(http.StatusNoContent)
	case r.URL.Path == "/append" && term > s.fence:
		http.Error(w, fmt.Sprintf("the fence holds %d", s.fence), http.StatusPreconditionFailed)
	case r.URL.Path == "/append":
		s.lines = append(s.lines, string(body))
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

// ledger returns the lines appended so far.
func (s *ledgerServer) ledger() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}

// ledgerClient is the coordinator's side of ledgerServer: a
// fencing.Fence[func(io.Writer) error], so its Claim plugs into
// election.Callbacks.Claim as it is, and every write names its term.
type ledgerClient struct{ url string }

var _ fencing.Fence[func(io.Writer) error] = ledgerClient{}

func (c ledgerClient) Claim(ctx context.Context, term uint64) error {
	return c.post(ctx, "/claim", term, nil)
}

// Write sends what fn writes as one line, under term.
func (c ledgerClient) Write(ctx context.Context, term uint64, fn func(io.Writer) error) error {
	var line bytes.Buffer
	if err := fn(&line); err != nil {
		return err
	}
	return c.post(ctx, "/append", term, &line)
}

// post sends one request and maps the store's refusals to fencing's
// errors.
func (c ledgerClient) post(ctx context.Context, path string, term uint64, body io.Reader) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Fencing-Term", strconv.FormatUint(term, 10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	why := strings.TrimSpace(string(msg))
	switch resp.StatusCode {
	case http.StatusNoContent:
		return nil
	case http.StatusConflict:
		return fmt.Errorf("%w: %s in term %d: %s", fencing.ErrStale, path, term, why)
	case http.StatusPreconditionFailed:
		return fmt.Errorf("%w: %s in term %d: %s", fencing.ErrUnclaimed, path, term, why)
	}
	return fmt.Errorf("%s in term %d: %s: %s", path, term, resp.Status, why)
}

// A store of one's own implements fencing.Fence: here an HTTP ledger
// service that checks the term of every request under its own lock. A
// coordinator claims its term (election.Callbacks.Claim: fence.Claim),
// then writes under it; once a successor has claimed a later term, the
// deposed coordinator's writes are refused with fencing.ErrStale, before
// the successor has written anything.
func Example_store() {
	srv := &ledgerServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	var fence fencing.Fence[func(io.Writer) error] = ledgerClient{url: ts.URL}
	ctx := context.Background()
	appendLine := func(term uint64, line string) error {
		return fence.Write(ctx, term, func(w io.Writer) error {
			_, err := io.WriteString(w, line)
			return err
		})
	}

	fmt.Println("write before claiming:", errors.Is(appendLine(5, "early"), fencing.ErrUnclaimed))
	fmt.Println("claim term 5:", fence.Claim(ctx, 5))
	fmt.Println("write in term 5:", appendLine(5, "a"))
	fmt.Println("claim term 7 (the successor):", fence.Claim(ctx, 7))
	fmt.Println("write in term 5 refused:", errors.Is(appendLine(5, "late"), fencing.ErrStale))
	fmt.Println("claim term 5 again refused:", errors.Is(fence.Claim(ctx, 5), fencing.ErrStale))
	fmt.Println("write in term 7:", appendLine(7, "b"))
	fmt.Println("ledger:", srv.ledger())
	// Output:
	// write before claiming: true
	// claim term 5: <nil>
	// write in term 5: <nil>
	// claim term 7 (the successor): <nil>
	// write in term 5 refused: true
	// claim term 5 again refused: true
	// write in term 7: <nil>
	// ledger: [a b]
}

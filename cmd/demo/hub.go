package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// logEntry is one line of the page's event log.
type logEntry struct {
	Seq  int64  `json:"seq"`
	Time int64  `json:"t"`    // ms since the Unix epoch
	Kind string `json:"kind"` // action, node, agreed, split or note
	Node string `json:"node,omitempty"`
	Text string `json:"text"`
}

const (
	maxBacklog = 300 // log entries a new page receives
	subBuffer  = 256 // frames a slow page may fall behind before it is dropped
)

// hub fans the page's server-sent events out to every open page: "state"
// (a clusterView) and "log" (a logEntry); a page that connects gets the
// last state and the log so far ("backlog"). Publishing never blocks: a
// page that falls subBuffer frames behind is disconnected, and its
// EventSource reconnects and starts over from the current state.
type hub struct {
	mu      sync.Mutex
	subs    map[chan []byte]struct{}
	closed  bool
	seq     int64
	backlog []logEntry
	state   []byte // the last state frame
}

func newHub() *hub { return &hub{subs: make(map[chan []byte]struct{})} }

// frame formats one server-sent event.
func frame(event string, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("demo: encoding %s event: %v", event, err)) // only plain structs are sent
	}
	return fmt.Appendf(nil, "event: %s\ndata: %s\n\n", event, b)
}

// subscribe registers a page; it returns its channel and the frames it
// must see first, or ok false once the hub is closed.
func (h *hub) subscribe() (ch chan []byte, initial [][]byte, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, nil, false
	}
	ch = make(chan []byte, subBuffer)
	h.subs[ch] = struct{}{}
	initial = [][]byte{[]byte("retry: 1000\n\n"), frame("backlog", h.backlog)}
	if h.state != nil {
		initial = append(initial, h.state)
	}
	return ch, initial, true
}

func (h *hub) unsubscribe(ch chan []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[ch]; ok {
		delete(h.subs, ch)
		close(ch)
	}
}

// publishState sends the cluster's state, v, to every page.
func (h *hub) publishState(v any) {
	f := frame("state", v)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.state = f
	h.broadcast(f)
}

// addLog appends e to the event log and sends it to every page.
func (h *hub) addLog(e logEntry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	e.Seq, e.Time = h.seq, time.Now().UnixMilli()
	if len(h.backlog) == maxBacklog {
		h.backlog = append(h.backlog[:0], h.backlog[1:]...)
	}
	h.backlog = append(h.backlog, e)
	h.broadcast(frame("log", e))
}

// broadcast sends f to every page without blocking; h.mu is held.
func (h *hub) broadcast(f []byte) {
	for ch := range h.subs {
		select {
		case ch <- f:
		default: // too far behind: drop it, its page reconnects
			delete(h.subs, ch)
			close(ch)
		}
	}
}

// close ends every page's stream and refuses new ones.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for ch := range h.subs {
		delete(h.subs, ch)
		close(ch)
	}
}

// serve streams the events to one page until it goes away or the hub
// closes.
func (h *hub) serve(w http.ResponseWriter, r *http.Request) {
	ch, initial, ok := h.subscribe()
	if !ok {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	defer h.unsubscribe(ch)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	rc := http.NewResponseController(w)
	for _, f := range initial {
		_, _ = w.Write(f)
	}
	for {
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case f, ok := <-ch:
			if !ok {
				return
			}
			if _, err := w.Write(f); err != nil {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

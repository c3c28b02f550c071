package election_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/electiontest"
)

// TestHandlerStatusShape: /status has exactly the keys `demo node` serves
// (README.md, "Running a cluster across processes/hosts"), with the
// members from the members function when one is given, else the elector's.
func TestHandlerStatusShape(t *testing.T) {
	tr := electiontest.NewNetwork().MustJoin(election.Identity{Name: "a", Rating: 3, Algorithm: core.Ring})
	e, err := election.New(election.Config{Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	get := func(h http.Handler) map[string]any {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/status", nil))
		if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("status %d, content type %q", w.Code, w.Header().Get("Content-Type"))
		}
		var doc map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		return doc
	}
	keys := func(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
	doc := get(election.NewHandler(e, nil))
	if got, want := keys(doc), []string{"algorithm", "coordinator", "members", "name", "rating", "startup", "state", "term"}; !slices.Equal(got, want) {
		t.Errorf("/status keys %q, want %q", got, want)
	}
	if doc["name"] != "a" || doc["state"] != "sleep" || doc["rating"] != 3.0 || doc["algorithm"] != "ring" {
		t.Errorf("/status = %v", doc)
	}
	if got, want := keys(doc["startup"].(map[string]any)), []string{"expect", "holding", "short", "voters"}; !slices.Equal(got, want) {
		t.Errorf("startup keys %q, want %q", got, want)
	}
	if su := doc["startup"].(map[string]any); su["holding"] != true || su["voters"] != 1.0 {
		t.Errorf("startup before Run = %v, want holding with 1 voter", su)
	}
	members := doc["members"].([]any)
	if len(members) != 1 {
		t.Fatalf("members = %v, want the node itself", members)
	}
	if got, want := keys(members[0].(map[string]any)), []string{"addr", "alive", "name", "rating"}; !slices.Equal(got, want) {
		t.Errorf("member keys %q, want %q", got, want)
	}
	listed := func() []election.StatusMember {
		return []election.StatusMember{{Name: "a", Addr: "127.0.0.1:7946", Rating: 3, Alive: true}, {Name: "b", Addr: "127.0.0.1:7947"}}
	}
	doc = get(election.NewHandler(e, listed))
	if m := doc["members"].([]any); len(m) != 2 || m[1].(map[string]any)["addr"] != "127.0.0.1:7947" {
		t.Errorf("members = %v, want the listed ones", m)
	}
}

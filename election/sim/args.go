package sim

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cockroachdb/datadriven"

	"github.com/coordelect/coordelect/election/core"
)

// args is a command's arguments: key=value pairs, bare words and (a,b)
// groups, in the order given.
type args struct {
	kv         map[string][]string
	positional []string
	groups     [][]string
}

func argMap(in []datadriven.CmdArg) args {
	a := args{kv: map[string][]string{}}
	for _, c := range in {
		switch {
		case len(c.Vals) > 0:
			a.kv[c.Key] = c.Vals
		case strings.HasPrefix(c.Key, "(") && strings.HasSuffix(c.Key, ")"):
			a.groups = append(a.groups, splitList(strings.Trim(c.Key, "()")))
		default:
			a.positional = append(a.positional, c.Key)
		}
	}
	return a
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func (a args) str(k, def string) string {
	if v, ok := a.kv[k]; ok {
		return v[0]
	}
	return def
}

func (a args) pos(i int) (string, error) {
	if i >= len(a.positional) {
		return "", fmt.Errorf("missing node name")
	}
	return a.positional[i], nil
}

func (a args) int(k string, def int) (int, error) {
	v, ok := a.kv[k]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v[0])
	if err != nil {
		return 0, fmt.Errorf("%s=%s: want an integer", k, v[0])
	}
	return n, nil
}

func (a args) float(k string) (float64, error) {
	v, ok := a.kv[k]
	if !ok {
		return 0, nil
	}
	f, err := strconv.ParseFloat(v[0], 64)
	if err != nil || f < 0 || f > 1 {
		return 0, fmt.Errorf("%s=%s: want a probability in [0, 1]", k, v[0])
	}
	return f, nil
}

// span parses MIN-MAX (or a single N); an error names k and its value.
func (a args) span(k string, dmin, dmax int64) (int64, int64, error) {
	v, ok := a.kv[k]
	if !ok {
		return dmin, dmax, nil
	}
	lo, hi, err := ParseSpan(v[0])
	if err != nil {
		return 0, 0, fmt.Errorf("%s=%s: want MIN-MAX with 0 <= MIN <= MAX", k, v[0])
	}
	return lo, hi, nil
}

// delay parses a message delay k=MIN-MAX in virtual ms (cluster and
// network): a span of at most maxMs; MAX = 0 (delay=0) means the default
// 1-5. ok is false when k is absent.
func (a args) delay(k string) (lo, hi int64, ok bool, err error) {
	v, ok := a.kv[k]
	if !ok {
		return 0, 0, false, nil
	}
	if lo, hi, err = a.span(k, 0, 0); err != nil {
		return 0, 0, true, err
	}
	if hi > maxMs {
		return 0, 0, true, fmt.Errorf("%s=%s: want MAX at most %d ms", k, v[0], maxMs)
	}
	if hi == 0 {
		lo, hi = 1, 5
	}
	return lo, hi, true, nil
}

// ParseSpan parses "MIN-MAX" or "N" as non-negative integers with MIN <= MAX.
func ParseSpan(s string) (int64, int64, error) {
	lo, hi, found := strings.Cut(s, "-")
	if !found {
		hi = lo
	}
	a, err1 := strconv.ParseInt(lo, 10, 64)
	b, err2 := strconv.ParseInt(hi, 10, 64)
	if err1 != nil || err2 != nil || a < 0 || b < a {
		return 0, 0, fmt.Errorf("%q: want MIN-MAX with 0 <= MIN <= MAX", s)
	}
	return a, b, nil
}

// members builds the member list from ids=(...), ratings=(...) and
// nonvoters=(...). Without ratings, each rating is the numeric ID.
func (a args) members() ([]core.Peer, error) {
	ids := a.kv["ids"]
	if len(ids) == 0 {
		return nil, fmt.Errorf("ids=(...) is required")
	}
	ratings := a.kv["ratings"]
	if len(ratings) > 0 && len(ratings) != len(ids) {
		return nil, fmt.Errorf("ratings has %d values for %d ids", len(ratings), len(ids))
	}
	nonvoter := map[string]bool{}
	for _, id := range a.kv["nonvoters"] {
		nonvoter[id] = true
	}
	return BuildMembers(ids, ratings, nonvoter)
}

// BuildMembers makes the member list: ratings[i] for ids[i], or, without
// ratings, the ID itself (which must then be an integer).
func BuildMembers(ids, ratings []string, nonvoter map[string]bool) ([]core.Peer, error) {
	out := make([]core.Peer, len(ids))
	for i, id := range ids {
		src := id
		if len(ratings) > 0 {
			src = ratings[i]
		}
		r, err := strconv.ParseInt(src, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("rating of %s = %q: want an integer", id, src)
		}
		out[i] = core.Peer{ID: id, Rating: r, NonVoter: nonvoter[id]}
	}
	return out, nil
}

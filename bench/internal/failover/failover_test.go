package failover

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// fake is a cluster whose leader changes when TakeOut is called: the
// driver's bookkeeping is checked against what it did.
type fake struct {
	leader      string
	elections   uint64
	msgs        uint64
	perFailover []uint64 // messages each round sends
	spurious    []uint64 // elections started in each round's quiet window
	round       int
	log         []string
	counted     bool
	reads       int
}

func (f *fake) Leader() (string, error) {
	if f.leader == "" {
		return "", errors.New("none")
	}
	return f.leader, nil
}

// Elections is read before and after each quiet window: the second reading
// finds the round's spurious elections.
func (f *fake) Elections() uint64 {
	f.reads++
	if f.reads%2 == 0 {
		f.elections += f.spurious[f.round]
	}
	return f.elections
}
func (f *fake) Messages() (uint64, bool) { return f.msgs, f.counted }
func (f *fake) TakeOut(_ context.Context, l string) error {
	f.log = append(f.log, "out "+l)
	f.leader = ""
	return nil
}
func (f *fake) WaitAgreement(_ context.Context, not string) (time.Time, error) {
	f.msgs += f.perFailover[f.round]
	f.leader = "b"
	f.log = append(f.log, "agreed not "+not)
	return time.Now().Add(time.Duration(f.round+1) * 100 * time.Millisecond), nil
}
func (f *fake) BringBack(_ context.Context, l string) error {
	f.log = append(f.log, "back "+l)
	f.leader = "a"
	f.round++
	return nil
}

func TestRun(t *testing.T) {
	f := &fake{leader: "a", perFailover: []uint64{5, 9, 4}, spurious: []uint64{0, 2, 1}, counted: true}
	res, err := Run(context.Background(), f, Options{Rounds: 3, Log: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Messages == nil || res.Messages.P50 != 5 || res.Messages.Max != 9 {
		t.Errorf("messages %+v, want p50 5, max 9", res.Messages)
	}
	if res.Spurious != 3 {
		t.Errorf("spurious %d, want 3", res.Spurious)
	}
	if len(res.Times) != 3 || res.Failover.Max < 300 || res.Failover.P50 < 200 || res.Failover.P50 >= 300 {
		t.Errorf("times %v, percentiles %+v: want about 100, 200, 300 ms", res.Times, res.Failover)
	}
	want := "out a|agreed not a|back a|out a|agreed not a|back a|out a|agreed not a|back a"
	if got := joined(f.log); got != want {
		t.Errorf("calls %s, want %s", got, want)
	}
}

func TestRunUncounted(t *testing.T) {
	f := &fake{leader: "a", perFailover: []uint64{5}, spurious: []uint64{0}}
	res, err := Run(context.Background(), f, Options{Rounds: 1, Log: hclog.NewNullLogger()})
	if err != nil || res.Messages != nil {
		t.Errorf("res %+v, err %v: want no messages summary", res, err)
	}
}

// A cluster without an agreed leader after the quiet window is waited
// for, and the round counted as unsettled.
func TestRunUnsettled(t *testing.T) {
	f := &fake{perFailover: []uint64{5, 5}, spurious: []uint64{0, 0}}
	res, err := Run(context.Background(), f, Options{Rounds: 1, Log: hclog.NewNullLogger()})
	if err != nil || res.Unsettled != 1 {
		t.Errorf("res %+v, err %v: want one unsettled round, run", res, err)
	}
	if want := "agreed not |out b|agreed not b|back b"; joined(f.log) != want {
		t.Errorf("calls %s, want %s", joined(f.log), want)
	}
}

func joined(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += "|"
		}
		out += x
	}
	return out
}

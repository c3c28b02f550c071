package membership_test

import (
	"fmt"
	"log"

	"github.com/coordelect/coordelect/membership"
)

// A service starts a member per replica; each joins the ones already up.
// The node is the elector's election.Transport: its Events first report
// the members already present.
func Example() {
	cfg := membership.DefaultConfig()
	cfg.BindAddr, cfg.BindPort = "127.0.0.1", 0 // a free port; see Addr
	cfg.Profile = membership.ProfileLocal
	cfg.Name, cfg.Rating = "orders-1", 10
	first, err := membership.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer first.Close()

	cfg.Name, cfg.Rating, cfg.Seeds = "orders-2", 20, []string{first.Addr()}
	second, err := membership.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer second.Close()
	ev := <-second.Events()
	fmt.Println(ev.Peer.ID, ev.Peer.Rating)
	// Output: orders-1 10
}

package membership

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coordelect/coordelect/election/core"
)

// validateError is the shape of every Validate error: the field, its
// value, the reason.
var validateError = regexp.MustCompile(`^membership: Config\.[A-Za-z]+(\[\d+\])? = `)

// FuzzConfigValidate fills Config's checked fields from fuzzed values:
// Validate never panics, every error names the field in the form
// "membership: Config.Field = value: reason", and a SecretKey error gives
// the key's length, never the key. The checked-in corpus is in testdata/fuzz/FuzzConfigValidate.
func FuzzConfigValidate(f *testing.F) {
	f.Add("n1", "127.0.0.1", 7946, "", 0, "127.0.0.1:7946,b:1", "bully", "lan", []byte("0123456789abcdef"), "prod", int64(time.Second), int64(time.Millisecond), 16, 16)
	f.Add("", "::1", -1, "x", 70000, ":1", "", "fast", []byte("short key!"), strings.Repeat("l", 300), int64(-1), int64(0), 0, -1)
	f.Fuzz(func(t *testing.T, name, bind string, bindPort int, adv string, advPort int, seeds, alg, profile string,
		key []byte, label string, rejoin, reorder int64, queue, sendQueue int) {
		c := DefaultConfig()
		c.Name, c.BindAddr, c.BindPort, c.AdvertiseAddr, c.AdvertisePort = name, bind, bindPort, adv, advPort
		if seeds != "" {
			c.Seeds = strings.Split(seeds, ",")
		}
		a, err := core.ParseAlgorithm(alg)
		if err != nil {
			a = core.Algorithm(3 + len(alg)%200) // not an algorithm
		}
		c.Algorithm, c.Profile, c.SecretKey, c.Label = a, profile, key, label
		c.RejoinInterval, c.ReorderTimeout = time.Duration(rejoin), time.Duration(reorder)
		c.QueueSize, c.SendQueueSize = queue, sendQueue
		err = c.Validate()
		if err == nil {
			return
		}
		msg := err.Error()
		if !validateError.MatchString(msg) {
			t.Fatalf("error %q does not name the field as membership: Config.Field = value", msg)
		}
		if strings.HasPrefix(msg, "membership: Config.SecretKey") && !strings.HasPrefix(msg, "membership: Config.SecretKey = <") {
			t.Fatalf("error %q shows the key, not its length", msg)
		}
	})
}

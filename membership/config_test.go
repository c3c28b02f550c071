package membership

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"

	"github.com/coordelect/coordelect/membership/membershiptest"
)

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	ok.Name = "n1"
	if err := ok.Validate(); err != nil {
		t.Fatalf("default config with a name: %v", err)
	}
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"no name", func(c *Config) { c.Name = "" }, `Config.Name = "": required`},
		{"long name", func(c *Config) { c.Name = strings.Repeat("n", MaxStringLen+1) }, "Config.Name"},
		{"bind host", func(c *Config) { c.BindAddr = "localhost" }, `Config.BindAddr = "localhost": not an IP address`},
		{"bind port", func(c *Config) { c.BindPort = 70000 }, "Config.BindPort = 70000"},
		{"advertise", func(c *Config) { c.AdvertiseAddr = "10.0.0" }, `Config.AdvertiseAddr = "10.0.0"`},
		{"advertise port", func(c *Config) { c.AdvertisePort = -1 }, "Config.AdvertisePort = -1"},
		{"advertise with transport", func(c *Config) {
			c.AdvertiseAddr, c.Transport = "10.0.0.1", &membershiptest.FaultTransport{}
		}, "Config.AdvertisePort = 0: required with AdvertiseAddr"},
		{"seed no port", func(c *Config) { c.Seeds = []string{"10.0.0.1:7946", "10.0.0.2"} }, `Config.Seeds[1] = "10.0.0.2": want host:port`},
		{"seed bad port", func(c *Config) { c.Seeds = []string{"db:x"} }, `Config.Seeds[0] = "db:x"`},
		{"profile", func(c *Config) { c.Profile = "LAN" }, `Config.Profile = "LAN": want "lan", "local" or "wan"`},
		{"key length", func(c *Config) { c.SecretKey = make([]byte, 15) }, "Config.SecretKey = <15 bytes>"},
		{"label", func(c *Config) { c.Label = strings.Repeat("l", 256) }, "Config.Label"},
		{"algorithm", func(c *Config) { c.Algorithm = 9 }, "Config.Algorithm = algorithm(9): want bully, ring or peterson"},
		{"reorder", func(c *Config) { c.ReorderTimeout = -time.Second }, `Config.ReorderTimeout = "-1s": must be > 0`},
		{"queue", func(c *Config) { c.QueueSize = -1 }, "Config.QueueSize = -1"},
		{"send queue", func(c *Config) { c.SendQueueSize = -1 }, "Config.SendQueueSize = -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.change(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "membership: ") {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
			if _, err := New(c); err == nil {
				t.Fatal("New accepted an invalid config")
			}
		})
	}
}

func TestConfigSecretKeyNotPrinted(t *testing.T) {
	c := DefaultConfig()
	c.Name = "n"
	c.SecretKey = []byte("do-not-print-me")
	if err := c.Validate(); err == nil || strings.Contains(err.Error(), "print") {
		t.Fatalf("err = %v", err)
	}
	for _, n := range []int{16, 24, 32} {
		c.SecretKey = make([]byte, n)
		if err := c.Validate(); err != nil {
			t.Fatalf("%d-byte key: %v", n, err)
		}
	}
}

func TestMemberlistConfigProfiles(t *testing.T) {
	for profile, probe := range map[string]time.Duration{
		ProfileLAN: time.Second, ProfileLocal: time.Second, ProfileWAN: 5 * time.Second,
	} {
		c := DefaultConfig()
		c.Name, c.Profile, c.BindPort = "n", profile, 0
		c.Memberlist = func(mc *memberlist.Config) { mc.GossipNodes = 9 }
		mc := c.memberlistConfig(&delegate{}, hclog.NewNullLogger())
		if mc.ProbeInterval != probe || mc.Name != "n" || mc.GossipNodes != 9 || mc.Logger == nil || mc.LogOutput != nil {
			t.Fatalf("%s: %+v", profile, mc)
		}
	}
}

// A zero field of Options means its default, also in New, whatever the
// other fields hold; an explicit off is a negative value (NoRejoin);
// BindPort 0 still picks a free port.
func TestOptionsZeroMeansDefault(t *testing.T) {
	def := DefaultOptions()
	want := def
	want.BindPort = 0
	if got := (Options{}).WithDefaults(); !reflect.DeepEqual(got, want) {
		t.Errorf("Options{}.WithDefaults() = %+v, want %+v", got, want)
	}
	custom := Options{Profile: ProfileWAN, RejoinInterval: time.Minute, ReorderTimeout: time.Second, QueueSize: 7, SendQueueSize: 8, BindAddr: "127.0.0.1"}
	if got := custom.WithDefaults(); !reflect.DeepEqual(got, custom) {
		t.Errorf("WithDefaults changed set fields: %+v, want %+v", got, custom)
	}
	if got := (Options{RejoinInterval: NoRejoin}).WithDefaults().RejoinInterval; got != NoRejoin {
		t.Errorf("RejoinInterval NoRejoin became %v", got)
	}

	c := Config{Options: Options{BindAddr: "127.0.0.1", SecretKey: make([]byte, 16)}}
	c.Name = "n1"
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate of zero options: %v", err)
	}
	n, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if n.cfg.RejoinInterval != def.RejoinInterval || n.cfg.Profile != ProfileLAN || n.cfg.QueueSize != def.QueueSize ||
		n.cfg.SendQueueSize != def.SendQueueSize || n.cfg.ReorderTimeout != def.ReorderTimeout {
		t.Errorf("New with zero options runs with %+v, want the defaults", n.cfg.Options)
	}
	if !strings.HasPrefix(n.Addr(), "127.0.0.1:") || strings.HasSuffix(n.Addr(), ":7946") {
		t.Errorf("BindPort 0 listens at %s, want a free port", n.Addr())
	}
}

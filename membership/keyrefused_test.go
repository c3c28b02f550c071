package membership

import (
	"errors"
	"strings"
	"testing"
)

// keyRefused recognises memberlist's join errors that say a seed runs with
// another key (in a multi-seed error, among unreachable seeds too), and
// nothing else.
func TestKeyRefused(t *testing.T) {
	for _, tc := range []struct {
		err        string
		seed, want string // want "": not a key mismatch
	}{
		{"1 error occurred:\n\t* failed to join 127.0.0.1:7946: no installed keys could decrypt the message\n\n",
			"127.0.0.1:7946", "no installed keys could decrypt the message"},
		{"2 errors occurred:\n\t* failed to join 10.0.0.1:7946: dial tcp 10.0.0.1:7946: connect: connection refused\n\t* failed to join 10.0.0.2:7946: remote state is encrypted and encryption is not configured\n\n",
			"10.0.0.2:7946", "remote state is encrypted and encryption is not configured"},
		{"1 error occurred:\n\t* failed to join [::1]:7946: encryption is configured but remote state is not encrypted\n\n",
			"[::1]:7946", "encryption is configured but remote state is not encrypted"},
		{"1 error occurred:\n\t* failed to join 127.0.0.1:7946: dial tcp 127.0.0.1:7946: connect: connection refused\n\n", "", ""},
		{"1 error occurred:\n\t* failed to join 127.0.0.1:7946: EOF\n\n", "", ""},
	} {
		err := keyRefused(errors.New(tc.err))
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: %v, want nil", tc.err, err)
			}
			continue
		}
		km, ok := err.(*KeyMismatchError)
		if !ok || km.Seed != tc.seed || km.Reason != tc.want {
			t.Errorf("%q: %#v, want seed %q reason %q", tc.err, err, tc.seed, tc.want)
			continue
		}
		if !strings.Contains(km.Error(), "Config.SecretKey") || !strings.Contains(km.Error(), tc.seed) {
			t.Errorf("%q: message %q does not name Config.SecretKey and the seed", tc.err, km.Error())
		}
	}
}

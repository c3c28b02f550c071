package group

import (
	"fmt"
	"unicode/utf8"
)

// DefaultName is the name of the unnamed election: a single-election
// user's one election is this name, and sees nothing else of the group.
const DefaultName = "default"

// MaxNameLen bounds a name, in bytes: names travel in every batch's name
// table (membership's batch frame) and label metrics.
const MaxNameLen = 64

// ValidateName reports whether name can name an election: 1 to
// MaxNameLen bytes of UTF-8 with no control characters (a name is a
// metric label and a log field as well as a key).
func ValidateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("group: name %q: must not be empty", name)
	case len(name) > MaxNameLen:
		return fmt.Errorf("group: name %q: %d bytes, at most %d", name, len(name), MaxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("group: name %q: not valid UTF-8", name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("group: name %q: control character %U", name, r)
		}
	}
	return nil
}

package membership

import (
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/memberlist"
)

func TestMetaRoundTrip(t *testing.T) {
	for _, m := range []meta{
		{},
		{Rating: -7, NonVoter: true, Boot: ^uint64(0), Algorithm: "peterson"},
		{Rating: 1 << 62, Boot: 1, Algorithm: strings.Repeat("a", maxAlgorithmLen)},
		{Boot: 2, Algorithm: "ring", Quorum: 5, Heartbeat: 1 << 62, Misses: 3, Lease: 150e6},
		{Boot: 3, Algorithm: strings.Repeat("a", maxAlgorithmLen), Quorum: 1 << 62, Heartbeat: 1 << 63,
			Misses: 1 << 62, Lease: 1 << 63, Rating: -1 << 63, NonVoter: true, Payload: strings.Repeat("p", MaxPayloadLen)},
	} {
		b := m.encode()
		if len(b) > memberlist.MetaMaxSize {
			t.Fatalf("meta of %d bytes over memberlist's %d", len(b), memberlist.MetaMaxSize)
		}
		got, err := decodeMeta(b)
		if err != nil || got != m {
			t.Fatalf("round trip of %+v: got %+v, %v", m, got, err)
		}
	}
}

func TestMetaRejects(t *testing.T) {
	good := meta{Rating: 3, Boot: 9, Algorithm: "bully"}.encode()
	long := meta{Algorithm: strings.Repeat("a", maxAlgorithmLen+1)}.encode()
	longPayload := meta{Payload: strings.Repeat("p", MaxPayloadLen+1)}.encode()
	withPayload := meta{Boot: 9, Payload: "10.0.0.1:8080"}.encode()
	tests := map[string][]byte{
		"empty":          nil,
		"version 0":      append([]byte{0}, good[1:]...),
		"version 1":      append([]byte{1}, good[1:]...),
		"version 2":      append([]byte{2}, good[1:]...),
		"version 3":      append([]byte{3}, good[1:]...),
		"version 4":      append([]byte{4}, good[1:]...),
		"version 5":      append([]byte{5}, good[1:]...),
		"version 7":      append([]byte{7}, good[1:]...),
		"unknown flag":   append([]byte{metaVersion, 2}, good[2:]...),
		"truncated boot": good[:5],
		"truncated name": good[:len(good)-1],
		"trailing":       append(append([]byte{}, good...), 'x'),
		"long algorithm": long,
		"long payload":   longPayload,
		"short payload":  withPayload[:len(withPayload)-1],
		"no payload":     good[:len(good)-1],
	}
	for name, b := range tests {
		if _, err := decodeMeta(b); !errors.Is(err, errMeta) {
			t.Errorf("%s: err = %v, want errMeta", name, err)
		}
	}
}

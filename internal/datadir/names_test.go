package datadir

import (
	"encoding/hex"
	"strings"
	"testing"
)

// TestNewNameIs128BitRandom: the names the agent gives its files (a kept
// file's name lets anyone who knows it send the file) were 64-bit random;
// the docs say 128. Every one of the 128 bits varies, and every name is a
// valid one.
func TestNewNameIs128BitRandom(t *testing.T) {
	seen := map[string]bool{}
	var ones, zeros [16]byte
	for range 256 {
		name := NewName("received")
		if err := ValidName(name); err != nil {
			t.Fatal(err)
		}
		b, err := hex.DecodeString(strings.TrimPrefix(name, "received-"))
		if err != nil || len(b) != 16 {
			t.Fatalf("%q: want received- and 32 hex digits (%v)", name, err)
		}
		if seen[name] {
			t.Fatalf("%q drawn twice", name)
		}
		seen[name] = true
		for i := range b {
			ones[i] |= b[i]
			zeros[i] |= ^b[i]
		}
	}
	for i := range ones {
		if ones[i] != 0xff || zeros[i] != 0xff {
			t.Errorf("byte %d of 256 names: bits set %08b, bits clear %08b: not random", i, ones[i], zeros[i])
		}
	}
}

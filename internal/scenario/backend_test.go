package scenario

import "testing"

// TestBackend checks backend: emulated (the default) and simulated; the
// bad values are in testdata (backend*.bad.yaml), at their line.
func TestBackend(t *testing.T) {
	for _, tc := range []struct {
		line      string
		backend   string
		simulated bool
	}{
		{"", "", false},
		{"backend: emulated\n", "", false},
		{"backend: simulated\n", BackendSimulated, true},
	} {
		f, err := Parse("b.yaml", []byte("name: b\nhosts:\n  a: {}\n"+tc.line), false)
		if err != nil {
			t.Fatalf("%q: %v", tc.line, err)
		}
		if f.Testbed.Backend != tc.backend || f.Testbed.Simulated() != tc.simulated {
			t.Errorf("%q: backend %q, simulated %v; want %q, %v", tc.line, f.Testbed.Backend, f.Testbed.Simulated(), tc.backend, tc.simulated)
		}
	}
}

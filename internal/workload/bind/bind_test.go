package bind

import (
	"errors"
	"net"
	"strings"
	"testing"
)

func TestParseRange(t *testing.T) {
	tests := []struct {
		in          string
		first, last int
		err         string
	}{
		{"5201-5299", 5201, 5299, ""},
		{"7000", 7000, 7000, ""},
		{" 10 - 20 ", 10, 20, ""},
		{"20-10", 0, 0, "not above the last"},
		{"0-10", 0, 0, "from 1 to 65535"},
		{"1-70000", 0, 0, "from 1 to 65535"},
		{"a-b", 0, 0, "give FIRST-LAST"},
	}
	for _, tc := range tests {
		first, last, err := ParseRange(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseRange(%q) = %v, want an error with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || first != tc.first || last != tc.last {
			t.Errorf("ParseRange(%q) = %d, %d, %v", tc.in, first, last, err)
		}
	}
}

// A listener takes the next free port of the range, and says so when none is.
func TestListenInRange(t *testing.T) {
	taken, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	only := Local{Addr: "127.0.0.1", First: port, Last: port}
	if _, err := only.Listen(net.ListenConfig{}); !errors.Is(err, ErrNoFreePort) {
		t.Errorf("a range of one taken port: %v, want ErrNoFreePort", err)
	}
	if port == 65535 {
		t.Skip("the taken port is the last one: no range above it")
	}
	two := Local{Addr: "127.0.0.1", First: port, Last: port + 1}
	ln, err := two.Listen(net.ListenConfig{})
	if err != nil {
		t.Skipf("port %d is taken too: %v", port+1, err)
	}
	defer ln.Close()
	if got := ln.Addr().(*net.TCPAddr).Port; got != port+1 {
		t.Errorf("listened on %d, want %d (the first free port of the range)", got, port+1)
	}
}

// ListenPort opens on the port asked for, or on any port of the range for
// 0, and refuses a port that is not one or is outside the range.
func TestListenPort(t *testing.T) {
	free := Local{Addr: "127.0.0.1"}
	ranged := Local{Addr: "127.0.0.1", First: 5201, Last: 5299}
	for _, tc := range []struct {
		name string
		at   Local
		port int
		err  string
	}{
		{"any free port", free, 0, ""},
		{"not a port", free, 70000, "give 0 (any) to 65535"},
		{"negative", free, -1, "give 0 (any) to 65535"},
		{"outside the range", ranged, 80, "outside the agent's test ports 5201-5299"},
	} {
		ln, err := tc.at.ListenPort(tc.port, net.ListenConfig{})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.err)
			}
			if ln != nil {
				ln.Close()
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		ln.Close()
	}

	taken, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	if _, err := free.ListenPort(port, net.ListenConfig{}); !errors.Is(err, ErrNoFreePort) {
		t.Errorf("a taken fixed port: %v, want ErrNoFreePort", err)
	}
}

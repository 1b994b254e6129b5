package limits

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestChecks(t *testing.T) {
	l := Limits{MaxDuration: time.Hour, MaxStreams: 8, MaxRate: 1e9, MaxBytes: 1 << 30, MaxConnections: 10, MaxTests: 2}
	for _, tc := range []struct {
		name string
		err  error
		want string // "" for ok; "limit" for ErrLimit
	}{
		{"a minute", l.Duration("d", time.Minute), ""},
		{"two hours", l.Duration("d", 2*time.Hour), "d 2h0m0s: over the agent's limit of 1h0m0s"},
		{"negative duration", l.Duration("d", -1), "cannot be negative"},
		{"2^62 ns twice", l.Repeated("probes", 2, 1<<62), "limit"},
		{"ten million x 1 ms", l.Repeated("probes", 1e7, time.Millisecond), "limit"},
		{"a thousand x 1 ms", l.Repeated("probes", 1000, time.Millisecond), ""},
		{"1 GiB", l.Bytes("b", 1<<30), ""},
		{"1 GiB + 1", l.Bytes("b", 1<<30+1), "b 1073741825 bytes: over the agent's limit of 1073741824 bytes"},
		{"huge times huge", l.BytesTimes("b", math.MaxInt64/2, 4), "limit"},
		{"9 streams", l.Streams(9), "streams 9: over the agent's limit of 8 streams"},
		{"0 streams", l.Streams(0), "give at least 1"},
		{"11 workers", l.Connections("workers", 11), "workers 11: over the agent's limit of 10 connections"},
		{"NaN rate", l.Rate(math.NaN()), "give a positive rate"},
		{"10 Gbit/s", l.Rate(10e9), "limit"},
		{"limits that make no sense", Limits{}.Validate(), "every limit must be positive"},
		{"defaults", Default.Validate(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			switch {
			case tc.want == "" && tc.err != nil:
				t.Errorf("got %v, want no error", tc.err)
			case tc.want == "limit" && !errors.Is(tc.err, ErrLimit):
				t.Errorf("got %v, want ErrLimit", tc.err)
			case tc.want != "" && tc.want != "limit" && (tc.err == nil || !strings.Contains(tc.err.Error(), tc.want)):
				t.Errorf("got %v, want %q", tc.err, tc.want)
			}
		})
	}
}

func TestArithmeticNeverWraps(t *testing.T) {
	if _, ok := Mul(math.MaxInt64, 2); ok {
		t.Error("Mul overflowed silently")
	}
	if _, ok := Add(math.MaxInt64, 1); ok {
		t.Error("Add overflowed silently")
	}
	if d, ok := Mul(3, time.Second); !ok || d != 3*time.Second {
		t.Errorf("Mul(3, 1s) = %v, %v", d, ok)
	}
}

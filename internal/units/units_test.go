package units

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		in      string
		want    Rate
		wantErr string
	}{
		{"100Mbit", 100e6, ""},
		{"1.7Mbit", 1.7e6, ""},
		{"2Mbit/s", 2e6, ""},
		{"2Mbps", 2e6, ""},
		{"1Gbit", 1e9, ""},
		{"64kbit", 64e3, ""},
		{"10 Mbit", 10e6, ""},
		{"100", 0, "missing unit"},
		{"-5Mbit", 0, "negative"},
		{"5MB", 0, "unknown unit"},
		{"1MB/s", 0, "rates are in bits (8Mbit for 1MB/s)"},
		{"100m", 100e6, ""}, // iperf3 -b 100m
		{"100M", 100e6, ""},
		{"1G", 1e9, ""},
		{"10Gbit", 10e9, ""},
		{"10k", 10e3, ""},
		{"5x", 0, "unknown unit"},
		{"fast", 0, "does not start with a number"},
		{"", 0, "does not start with a number"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRate(tt.in)
			checkErr(t, err, tt.wantErr)
			if err == nil && got != tt.want {
				t.Errorf("ParseRate(%q) = %v, want %v", tt.in, float64(got), float64(tt.want))
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{"25ms", 25 * time.Millisecond, ""},
		{"0.5ms", 500 * time.Microsecond, ""},
		{"1s", time.Second, ""},
		{"250us", 250 * time.Microsecond, ""},
		{"0", 0, ""},
		{"25", 0, "missing unit"},
		{"-1ms", 0, "negative"},
		{"soon", 0, "use a number and ns, us, ms, s, m or h"},
		{"1m", time.Minute, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"2d", 0, "use a number and ns, us, ms, s, m or h"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDuration(tt.in)
			checkErr(t, err, tt.wantErr)
			if err == nil && got != tt.want {
				t.Errorf("ParseDuration(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// TestDurationUnitsAsSaid: the error named ns, us, ms and s while 1m was
// accepted; every unit it names is accepted, and no other.
func TestDurationUnitsAsSaid(t *testing.T) {
	_, err := ParseDuration("5 fortnights")
	if err == nil {
		t.Fatal("5 fortnights accepted")
	}
	named := map[string]bool{}
	for _, u := range DurationUnits {
		named[u] = true
		if !strings.Contains(err.Error(), u) {
			t.Errorf("the error %q does not name %s", err, u)
		}
		if _, err := ParseDuration("3" + u); err != nil {
			t.Errorf("%s is named and refused: %v", u, err)
		}
	}
	for _, u := range []string{"µs", "μs", "d", "w", "y", "sec", "min"} {
		if _, err := ParseDuration("3" + u); err == nil && !named[u] {
			t.Errorf("3%s is accepted but the error does not name %s", u, u)
		}
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    Size
		wantErr string
	}{
		{"256KiB", 256 << 10, ""},
		{"1.6GB", 1.6e9, ""},
		{"1500B", 1500, ""},
		{"1500", 1500, ""},
		{"8MiB", 8 << 20, ""},
		{"-1KB", 0, "negative"},
		{"3 parsecs", 0, "unknown unit"},
		{"64K", 64 << 10, ""}, // iperf3 -w 64K
		{"4M", 4 << 20, ""},
		{"1G", 1 << 30, ""},
		{"2m", 2 << 20, ""},
		{"1Gbit", 0, "unknown unit"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSize(tt.in)
			checkErr(t, err, tt.wantErr)
			if err == nil && got != tt.want {
				t.Errorf("ParseSize(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseByteRate(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{"5MB/s", 5e6, ""},
		{"40MiB/s", 40 << 20, ""},
		{" 3.5 MB/s ", 3.5e6, ""},
		{"5MB", 0, "bytes per second"},
		{"24Mbit", 0, "bytes per second"},
		{"24Mbit/s", 0, "that is 3MB/s"},
		{"5 parsecs/s", 0, "unknown unit"},
		{"-1MB/s", 0, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseByteRate(tt.in)
			checkErr(t, err, tt.wantErr)
			if err == nil && got != tt.want {
				t.Errorf("ParseByteRate(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestParsePercent(t *testing.T) {
	tests := []struct {
		in      string
		want    float64
		wantErr string
	}{
		{"0.1%", 0.001, ""},
		{"100%", 1, ""},
		{"0", 0, ""},
		{"0%", 0, ""},
		{"101%", 0, "outside"},
		{"-1%", 0, "outside"},
		{"0.5", 0, "missing unit"},
		{"abc%", 0, "not a number"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePercent(tt.in)
			checkErr(t, err, tt.wantErr)
			if err == nil && got != tt.want {
				t.Errorf("ParsePercent(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestNoUnitIsDetectable(t *testing.T) {
	_, err := ParseRate("100")
	if !errors.Is(err, ErrNoUnit) {
		t.Fatalf("ParseRate(100) error %v does not wrap ErrNoUnit", err)
	}
}

func TestStrings(t *testing.T) {
	tests := []struct{ got, want string }{
		{Rate(1.7e6).String(), "1.7Mbit"},
		{Rate(1e9).String(), "1Gbit"},
		{Rate(64e3).String(), "64kbit"},
		{Rate(96533333.3).String(), "96.53Mbit"},
		{Rate(999.9e6).String(), "999.9Mbit"},
		{Size(256 << 10).String(), "256KiB"},
		{Size(1500).String(), "1500B"},
		{Size(150000).String(), "150KB"},
		{Size(1600e6).String(), "1600MB"},
		{Size(1234567).String(), "1.18MiB"},
		{Size(52128).String(), "50.9KiB"},
		{FormatPercent(0.001), "0.1%"},
		{FormatDuration(1500 * time.Microsecond), "1.5ms"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"100Mbit", "0.5ms", "256KiB", "0.1%", "-1", "1e9bit", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if r, err := ParseRate(s); err == nil && r < 0 {
			t.Errorf("ParseRate(%q) = %v < 0 without error", s, r)
		}
		if d, err := ParseDuration(s); err == nil && d < 0 {
			t.Errorf("ParseDuration(%q) = %v < 0 without error", s, d)
		}
		if z, err := ParseSize(s); err == nil && z < 0 {
			t.Errorf("ParseSize(%q) = %v < 0 without error", s, z)
		}
		if p, err := ParsePercent(s); err == nil && (p < 0 || p > 1) {
			t.Errorf("ParsePercent(%q) = %v outside [0,1] without error", s, p)
		}
	})
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Fatalf("no error, want one containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("error %q does not contain %q", err, want)
	}
}

package iperf3

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
)

func TestValidate(t *testing.T) {
	ok := Spec{Streams: 1, Duration: time.Second}
	for _, tc := range []struct {
		name  string
		edit  func(*Spec)
		lim   limits.Limits
		words string // "" for valid
	}{
		{"valid", func(*Spec) {}, limits.Default, ""},
		{"bytes only", func(s *Spec) { s.Duration, s.Bytes = 0, 1<<20 }, limits.Default, ""},
		{"neither", func(s *Spec) { s.Duration = 0 }, limits.Default, "give a duration or a number of bytes"},
		{"no streams", func(s *Spec) { s.Streams = 0 }, limits.Default, "streams 0"},
		{"more streams than iperf3 takes", func(s *Spec) { s.Streams = 129 }, limits.Unlimited, "at most 128"},
		{"over the agent's streams", func(s *Spec) { s.Streams = 3 }, limits.Limits{MaxStreams: 2, MaxDuration: time.Hour, MaxBytes: 1}, "over the agent's limit"},
		{"longer than a day", func(s *Spec) { s.Duration = 25 * time.Hour }, limits.Unlimited, "at most 24h0m0s"},
		{"over the agent's duration", func(s *Spec) { s.Duration = 2 * time.Hour }, limits.Default, "over the agent's limit"},
		{"over the agent's bytes", func(s *Spec) { s.Streams, s.Bytes = 4, 1<<40 }, limits.Default, "over the agent's limit"},
		{"small window", func(s *Spec) { s.Window = 100 }, limits.Default, "window 100 bytes"},
		{"large block", func(s *Spec) { s.BlockSize = 2 << 20 }, limits.Default, "block size"},
		{"fast interval", func(s *Spec) { s.Interval = time.Millisecond }, limits.Default, "interval 1ms"},
		{"fq rate", func(s *Spec) { s.FQRate = 1e12 }, limits.Default, "fq rate"},
		{"long congestion name", func(s *Spec) { s.Congestion = strings.Repeat("c", 16) }, limits.Default, "at most 15 characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ok
			tc.edit(&s)
			err := s.Validate(tc.lim)
			if tc.words == "" && err != nil || tc.words != "" && (err == nil || !strings.Contains(err.Error(), tc.words)) {
				t.Errorf("error %v, want %q", err, tc.words)
			}
			if strings.Contains(tc.name, "agent's") && !errors.Is(err, limits.ErrLimit) {
				t.Errorf("error %v: want limits.ErrLimit", err)
			}
		})
	}
}

// TestParams: what the server is told. iperf3 3.12 takes a key's
// presence for true, so a false flag must be left out.
func TestParams(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{Streams: 2, Duration: 1500 * time.Millisecond},
			`{"tcp":true,"omit":0,"time":2,"num":0,"blockcount":0,"parallel":2,"len":131072,"pacing_timer":1000,"client_version":"wanlab"}`},
		{Spec{Streams: 3, Bytes: 1000, Reverse: true, Window: 1 << 20, Congestion: "bbr", BlockSize: 8192, FQRate: 1e9},
			`{"tcp":true,"omit":0,"time":0,"num":3000,"blockcount":0,"parallel":3,"reverse":true,"window":1048576,"len":8192,"fqrate":1000000000,"pacing_timer":1000,"congestion":"bbr","client_version":"wanlab"}`},
	} {
		got, err := json.Marshal(tc.spec.params())
		if err != nil || string(got) != tc.want {
			t.Errorf("%+v:\n got %s\nwant %s", tc.spec, got, tc.want)
		}
	}
}

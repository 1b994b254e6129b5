package twin

import (
	"bytes"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/policy"
)

func TestPlan(t *testing.T) {
	def := DefaultBudget(policy.DefaultBytesPerDay)
	for _, tc := range []struct {
		name     string
		budget   Budget
		rate     float64
		maxTime  time.Duration
		maxBytes int64
		err      error
	}{
		// The bound: under two minutes and 1% of a default
		// policy's bytes_per_day at 100 Mbit/s.
		{name: "100Mbit default", budget: def, rate: 100e6, maxTime: 2 * time.Minute, maxBytes: policy.DefaultBytesPerDay / 100},
		{name: "10Gbit default", budget: def, rate: 10e9, maxTime: 2 * time.Minute, maxBytes: policy.DefaultBytesPerDay / 100},
		{name: "5Mbit default", budget: def, rate: 5e6, maxTime: 2 * time.Minute, maxBytes: 200e6},
		{name: "75s shrinks it", budget: Budget{Duration: 75 * time.Second, Bytes: 1 << 40}, rate: 100e6, maxTime: 75 * time.Second, maxBytes: 1 << 40},
		{name: "few bytes shrink it", budget: Budget{Duration: time.Minute * 2, Bytes: 300e6}, rate: 100e6, maxTime: 2 * time.Minute, maxBytes: 300e6},
		{name: "too short", budget: Budget{Duration: 10 * time.Second, Bytes: 1 << 40}, rate: 100e6, err: ErrBudget},
		{name: "too few bytes", budget: Budget{Duration: time.Hour, Bytes: 1e6}, rate: 100e6, err: ErrBudget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPlan("a", "b", tc.budget, tc.rate)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var sum time.Duration
			var bytes int64
			kinds := map[string]map[string]int{}
			for _, s := range p.Steps {
				sum += s.Time
				bytes += s.Bytes
				if kinds[s.Kind] == nil {
					kinds[s.Kind] = map[string]int{}
				}
				kinds[s.Kind][s.From+">"+s.To]++
			}
			if sum != p.Time || bytes != p.Bytes {
				t.Errorf("totals %v %d, steps sum to %v %d", p.Time, p.Bytes, sum, bytes)
			}
			if p.Time > tc.maxTime || p.Bytes > tc.maxBytes {
				t.Errorf("plan takes %v and %d bytes, want at most %v and %d", p.Time, p.Bytes, tc.maxTime, tc.maxBytes)
			}
			// Both ways of everything but probes (one round each way
			// covers both), capacity twice for a rate step.
			for _, k := range []string{StepTrace, StepCapacity, StepAvailable, StepImpact, StepThroughput, StepProbe} {
				if kinds[k]["a>b"] == 0 || kinds[k]["b>a"] == 0 {
					t.Errorf("%s: %v, want both ways", k, kinds[k])
				}
			}
			if kinds[StepCapacity]["a>b"] < 2 {
				t.Errorf("capacity measured %d times forward, want 2 (a rate step)", kinds[StepCapacity]["a>b"])
			}
			t.Logf("%s: %v, %d MB", tc.name, p.Time, p.Bytes/1e6)
		})
	}
}

func TestWritePlan(t *testing.T) {
	p, err := NewPlan("a", "b", DefaultBudget(policy.DefaultBytesPerDay), 100e6)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WritePlan(&b, p); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b.Bytes(), []byte("impact 2 stream(s) 6s")) || !bytes.Contains(b.Bytes(), []byte("a UDP load at 1.25x the capacity")) || !bytes.Contains(b.Bytes(), []byte("total ")) {
		t.Errorf("plan:\n%s", b.String())
	}
}

// The check's plan keeps what its figures compare, once each way for the
// available bandwidth, and is shorter.
func TestPlanForCheck(t *testing.T) {
	p, err := NewPlan("a", "b", DefaultBudget(policy.DefaultBytesPerDay), 100e6)
	if err != nil {
		t.Fatal(err)
	}
	c := p.ForCheck()
	count := map[string]int{}
	for _, s := range c.Steps {
		count[s.Kind]++
	}
	want := map[string]int{StepProbe: 2, StepAvailable: 2, StepImpact: 2, StepThroughput: 4}
	if !maps.Equal(count, want) {
		t.Errorf("the check's steps %v, want %v", count, want)
	}
	if c.Time >= p.Time || c.Bytes >= p.Bytes {
		t.Errorf("the check's plan takes %v and %d bytes, the campaign's %v and %d", c.Time, c.Bytes, p.Time, p.Bytes)
	}
}

package owd

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func TestConfigRefused(t *testing.T) {
	ok := DefaultConfig()
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // in the error; "" for none
	}{
		{"the default", func(*Config) {}, ""},
		{"synchronised", func(c *Config) { c.Synchronised, c.ClockBound = true, time.Millisecond }, ""},
		{"no period", func(c *Config) { c.Period = 0 }, "period"},
		{"no bins", func(c *Config) { c.Bins = 0 }, "bins a summary"},
		{"too many bins", func(c *Config) { c.Bins = 65 }, "bins a summary"},
		{"empty bins", func(c *Config) { c.MinBinSamples = 0 }, "at least one sample"},
		{"a window of one period", func(c *Config) { c.Window = c.Period }, "shorter than two periods"},
		{"learning past the window", func(c *Config) { c.MinSpan = 2 * c.Window }, "learning span"},
		{"no step", func(c *Config) { c.MinStep = 0 }, "smallest step"},
		{"confirming forever", func(c *Config) { c.Confirm = 100 }, "to confirm"},
		{"a negative bound", func(c *Config) { c.ClockBound = -1 }, "negative"},
		{"a day's window", func(c *Config) { c.Window = 24 * time.Hour }, "holds 34564 bins: at most 16384"},
		{"a window past counting", func(c *Config) { c.Window, c.Period = math.MaxInt64, 1 }, "at most 16384"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.edit(&cfg)
			tr, err := New(cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "":
				if got := cap(tr.window); got != cfg.capacity() || got > MaxBins {
					t.Errorf("window capacity %d, want %d", got, cfg.capacity())
				}
			case err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %v, want ErrConfig saying %q", err, tc.want)
			}
		})
	}
}

// found is a step a report gave, with the end of the summary that gave it.
type found struct {
	Step
	reported time.Time
}

// observed runs tr through a Pair of cfg and gathers what it says.
type observed struct {
	steps     [2][]found
	restarted [2][]string
	clock     []time.Duration
	last      PairReport
	maxWindow int
}

func observe(t *testing.T, cfg Config, tr truth, n int) observed {
	t.Helper()
	p, err := NewPair(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var o observed
	tr.run(n, func(i int, end time.Time, fwd, back []Sample) {
		rep, err := p.Observe(fwd, back)
		if err != nil {
			t.Fatalf("summary %d: %v", i, err)
		}
		for d, r := range []Report{rep.Forward, rep.Back} {
			for _, s := range r.Steps {
				o.steps[d] = append(o.steps[d], found{s, end})
			}
			if r.Restarted != "" {
				o.restarted[d] = append(o.restarted[d], r.Restarted)
			}
		}
		if rep.ClockStep != 0 {
			o.clock = append(o.clock, rep.ClockStep)
		}
		o.last = rep
		o.maxWindow = max(o.maxWindow, cap(p.Forward.window), cap(p.Back.window))
	})
	return o
}

var dirNames = [2]string{"forward", "back"}

// TestStepFoundOnItsDirection is the target: a 5 ms step on one
// direction found within two summary periods, with clocks offset and
// drifting at 50 ppm, and nothing found on the other direction.
func TestStepFoundOnItsDirection(t *testing.T) {
	const stepAt = 300.0 // s: after the window is learnt
	for _, dir := range []int{0, 1} {
		for _, size := range []float64{5, -5} {
			for _, phase := range []float64{0, 0.05, 0.3, 0.76, 0.99} {
				for _, sync := range []bool{false, true} {
					name := fmt.Sprintf("%s %+g ms at %g of a period, synchronised %v", dirNames[dir], size, phase, sync)
					t.Run(name, func(t *testing.T) {
						tr := loaded(uint64(1 + dir + 10*int(phase*100)))
						cfg := DefaultConfig()
						if sync {
							cfg.Synchronised, cfg.ClockBound = true, 100*time.Microsecond
						} else {
							tr.offset, tr.ppm = 37.5, 50
						}
						at := stepAt + phase*period.Seconds()
						tr.steps[dir] = []change{{at, size}}
						o := observe(t, cfg, tr, 45)
						if len(o.steps[1-dir]) != 0 {
							t.Errorf("steps on the %s direction, which did not change: %v", dirNames[1-dir], o.steps[1-dir])
						}
						if len(o.restarted[0])+len(o.restarted[1])+len(o.clock) != 0 {
							t.Errorf("restarts %v, clock steps %v: want none", o.restarted, o.clock)
						}
						if len(o.steps[dir]) != 1 {
							t.Fatalf("steps %v: want one", o.steps[dir])
						}
						s, when := o.steps[dir][0], epoch.Add(sec(at))
						if took := s.reported.Sub(when); took < 0 || took > 2*period {
							t.Errorf("found %s after the step: want within %s", took, 2*period)
						}
						if off := s.At.Sub(when).Abs(); off > period/4+time.Second {
							t.Errorf("step put at %s, %s from the truth", s.At, off)
						}
						if s.Uncertainty <= 0 || s.Uncertainty > time.Millisecond {
							t.Errorf("uncertainty %s: want within 1 ms", s.Uncertainty)
						}
						if err := (s.Size - msDur(size)).Abs(); err > s.Uncertainty {
							t.Errorf("size %s ± %s, truth %g ms", s.Size, s.Uncertainty, size)
						}
						if o.last.Forward.State != Tracking || o.last.Back.State != Tracking {
							t.Errorf("states %s, %s: want tracking", o.last.Forward.State, o.last.Back.State)
						}
						ch := []Report{o.last.Forward, o.last.Back}[dir].Change
						if (ch - msDur(size)).Abs() > time.Millisecond {
							t.Errorf("change since the start %s, want %g ms", ch, size)
						}
					})
				}
			}
		}
	}
}

// TestQuietHour: an hour of a loaded path's noise, with clocks offset and
// drifting, finds no step, and estimates the skew.
func TestQuietHour(t *testing.T) {
	for _, tc := range []struct {
		name string
		tr   truth
	}{
		{"loaded, seed 1", loaded(1)},
		{"loaded, seed 2", loaded(2)},
		{"loaded, seed 3", loaded(3)},
		{"bursts every 10 s", func() truth { tr := loaded(4); tr.burstEvery, tr.jitter = 10, 1; return tr }()},
		{"bursts every 5 s", func() truth { tr := loaded(6); tr.burstEvery, tr.jitter = 5, 1; return tr }()},
		{"a quiet line", truth{seed: 5, base: [2]float64{40, 40}, jitter: 0.05}},
	} {
		for _, ppm := range []float64{50, -50, 0} {
			t.Run(fmt.Sprintf("%s, %+g ppm", tc.name, ppm), func(t *testing.T) {
				tr := tc.tr
				tr.offset, tr.ppm = -1234.5, ppm
				cfg := DefaultConfig()
				o := observe(t, cfg, tr, 360)
				for d := range 2 {
					if len(o.steps[d]) != 0 {
						t.Errorf("%s: false steps %v", dirNames[d], o.steps[d])
					}
					if len(o.restarted[d]) != 0 {
						t.Errorf("%s: restarts %v", dirNames[d], o.restarted[d])
					}
				}
				for d, r := range []Report{o.last.Forward, o.last.Back} {
					want := ppm * float64(1-2*d) // the back delays carry the offset's opposite
					if r.State != Tracking || math.Abs(r.SkewPPM-want) > 1 {
						t.Errorf("%s: %s, skew %+.2f ppm: want tracking at %+g", dirNames[d], r.State, r.SkewPPM, want)
					}
					if r.Uncertainty > time.Millisecond {
						t.Errorf("%s: changes reliable to ±%s only", dirNames[d], r.Uncertainty)
					}
					if s := r.String(); !strings.HasPrefix(s, "offset unknown, changes reliable to ±") {
						t.Errorf("%s says %q", dirNames[d], s)
					}
				}
				if o.maxWindow != cfg.capacity() {
					t.Errorf("a window grew to %d bins: bound %d", o.maxWindow, cfg.capacity())
				}
			})
		}
	}
}

// TestSynchronisedFloor: with synchronised clocks the floor is the delay.
func TestSynchronisedFloor(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Synchronised, cfg.ClockBound = true, 200*time.Microsecond
	o := observe(t, cfg, loaded(9), 20)
	for d, r := range []Report{o.last.Forward, o.last.Back} {
		if want := msDur(loaded(9).base[d]); (r.Floor - want).Abs() > 200*time.Microsecond {
			t.Errorf("%s: floor %s, want %s", dirNames[d], r.Floor, want)
		}
		if s := r.String(); !strings.HasPrefix(s, "clocks synchronised: lowest delay") {
			t.Errorf("%s says %q", dirNames[d], s)
		}
	}
}

// TestClockStepRestarts: the clocks' offset stepping moves both directions
// at once by opposite amounts: the windows restart and say so, no step of
// the path is reported, and a later step is still found.
func TestClockStepRestarts(t *testing.T) {
	for _, tc := range []struct {
		by, phase float64
	}{{20, 0}, {20, 0.05}, {-20, 0.5}, {20, 0.76}, {-3, 0.3}} {
		t.Run(fmt.Sprintf("%+g ms at %g", tc.by, tc.phase), func(t *testing.T) {
			tr := loaded(11)
			tr.offset, tr.ppm = 5, 50
			tr.clockSteps = []change{{300 + tc.phase*period.Seconds(), tc.by}}
			tr.steps[0] = []change{{500, 5}}
			o := observe(t, DefaultConfig(), tr, 60)
			if len(o.clock) != 1 || (o.clock[0]-msDur(tc.by)).Abs() > time.Millisecond {
				t.Fatalf("clock steps %v, want one of %+g ms", o.clock, tc.by)
			}
			for d := range 2 {
				if len(o.restarted[d]) != 1 || !strings.Contains(o.restarted[d][0], "the clocks' offset stepped by") {
					t.Errorf("%s: restarts %q", dirNames[d], o.restarted[d])
				}
			}
			if len(o.steps[1]) != 0 || len(o.steps[0]) != 1 || (o.steps[0][0].Size-5*time.Millisecond).Abs() > time.Millisecond {
				t.Errorf("steps %v: want the forward one of 5 ms at 500 s only", o.steps)
			}
		})
	}
}

// TestRestartAndBadInput covers what the caller learns of, gaps, and
// summaries too small or too late to judge.
func TestRestartAndBadInput(t *testing.T) {
	var sums [][]Sample
	loaded(21).run(20, func(_ int, _ time.Time, fwd, _ []Sample) { sums = append(sums, fwd) })
	shift := func(ss []Sample, by time.Duration) []Sample {
		out := make([]Sample, len(ss))
		for i, s := range ss {
			out[i] = Sample{Sent: s.Sent.Add(by), Delay: s.Delay}
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		after func(*Tracker) []Sample // done after 19 summaries; returns the 20th
		check func(Report) string     // "" when fine
	}{
		{"tracking", func(*Tracker) []Sample { return sums[19] }, func(r Report) string {
			if r.State != Tracking || r.Bins != 4 || r.Restarted != "" {
				return "want tracking on 4 bins"
			}
			return ""
		}},
		{"an NTP step", func(tr *Tracker) []Sample { tr.Restart("NTP stepped the clock"); return sums[19] }, func(r Report) string {
			if r.State != Learning || r.Restarted != "NTP stepped the clock" || r.String() != "learning the window: no judgement yet" {
				return "want learning again, and why"
			}
			return ""
		}},
		{"a gap longer than the window", func(*Tracker) []Sample { return shift(sums[19], 11*time.Minute) }, func(r Report) string {
			if r.State != Learning || !strings.HasPrefix(r.Restarted, "no data for 11m") {
				return "want a restart for the gap"
			}
			return ""
		}},
		{"too few samples", func(*Tracker) []Sample { return sums[19][:4] }, func(r Report) string {
			if r.Skipped != 1 || r.Bins != 0 || r.State != Tracking {
				return "want the summary skipped"
			}
			return ""
		}},
		{"the same summary again", func(*Tracker) []Sample { return sums[18] }, func(r Report) string {
			if r.Late != len(sums[18]) || r.Skipped != 1 {
				return "want every sample late"
			}
			return ""
		}},
		{"no samples", func(*Tracker) []Sample { return nil }, func(r Report) string {
			if r.Skipped != 1 || r.State != Tracking {
				return "want the summary skipped"
			}
			return ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := New(DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range sums[:19] {
				if _, err := tr.Observe(s); err != nil {
					t.Fatal(err)
				}
			}
			r, err := tr.Observe(tc.after(tr))
			if err != nil {
				t.Fatal(err)
			}
			if msg := tc.check(r); msg != "" {
				t.Errorf("%s: got %+v", msg, r)
			}
		})
	}
	t.Run("too many samples", func(t *testing.T) {
		tr, _ := New(DefaultConfig())
		if _, err := tr.Observe(make([]Sample, MaxSamples+1)); !errors.Is(err, ErrTooMany) {
			t.Errorf("error %v, want ErrTooMany", err)
		}
		p, _ := NewPair(DefaultConfig())
		if _, err := p.Observe(nil, make([]Sample, MaxSamples+1)); !errors.Is(err, ErrTooMany) || !strings.HasPrefix(err.Error(), "back delays") {
			t.Errorf("error %v, want ErrTooMany of the back delays", err)
		}
	})
}

func TestStepString(t *testing.T) {
	s := Step{At: epoch, Size: -5 * time.Millisecond, Uncertainty: 120 * time.Microsecond}
	if got, want := s.String(), "delay down 5.00 ms ±0.12 ms at 2026-11-26T00:00:00Z"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

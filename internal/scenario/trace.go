package scenario

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/units"
)

// Trace makes a link direction follow a recorded path: its rate from a
// CSV of times and rates, or from packet-delivery opportunities in
// mahimahi's format (one millisecond timestamp per line, each a chance to
// deliver MahimahiBytes), and its delay from a CSV of times and delays.
// Traces start when the test-bed comes up; rate and delay traces loop
// unless Loop is false (then their last value holds), mahimahi's always do.
type Trace struct {
	// The files as the scenario names them, for the record.
	RateFile, DelayFile, MahimahiFile string `json:",omitempty"`
	Loop                              bool
	// Rate and Delay are steps: each value from its time on.
	Rate  []TraceStep[units.Rate]    `json:"-"`
	Delay []TraceStep[time.Duration] `json:"-"`
	// Deliveries are mahimahi's opportunities; Period is when they repeat.
	Deliveries []time.Duration `json:"-"`
	Period     time.Duration   `json:"-"`
}

// TraceStep is a value from a time on.
type TraceStep[T any] struct {
	At    time.Duration
	Value T
}

// MahimahiBytes is what one of mahimahi's delivery opportunities carries:
// its MTU-sized packet.
const MahimahiBytes = 1504

// Bounds of a trace file.
const (
	maxTraceBytes = 64 << 20
	maxTraceLines = 2_000_000
)

type rawTrace struct {
	Rate     string `yaml:"rate"`
	Delay    string `yaml:"delay"`
	Mahimahi string `yaml:"mahimahi"`
	Loop     *bool  `yaml:"loop"`
}

// trace reads a direction's trace files, relative to the scenario's folder.
// For a stored scenario (the archive's copy) the files are only named.
func (v *dirChecker) trace(field string, raw rawTrace, d *Direction) *Trace {
	tr := &Trace{RateFile: raw.Rate, DelayFile: raw.Delay, MahimahiFile: raw.Mahimahi, Loop: raw.Loop == nil || *raw.Loop}
	switch {
	case raw.Rate == "" && raw.Delay == "" && raw.Mahimahi == "":
		v.fail(field, "a trace names a file: rate: (CSV of time, rate), mahimahi: (delivery opportunities) or delay: (CSV of time, delay)")
		return nil
	case raw.Rate != "" && raw.Mahimahi != "":
		v.fail(field, "a direction's rate follows one trace: rate: or mahimahi:, not both")
		return nil
	case raw.Mahimahi != "" && raw.Loop != nil && !*raw.Loop:
		v.fail(field+".loop", "mahimahi traces always loop, as mahimahi plays them")
	}
	if v.stored {
		return tr
	}
	if raw.Rate != "" {
		tr.Rate = readSteps(v.fieldChecker, field+".rate", v.path(raw.Rate), func(s string) (units.Rate, error) {
			r, err := units.ParseRate(s)
			switch {
			case err != nil:
				return 0, err
			case r < MinRate || r > MaxRate:
				return 0, fmt.Errorf("rate %s: give %s to %s (an outage is an event, set: {down: true}; a mahimahi trace may have gaps)", s, MinRate, MaxRate)
			}
			return r, nil
		})
		if len(tr.Rate) > 0 {
			d.Rate = meanRate(tr.Rate)
		}
	}
	if raw.Delay != "" {
		tr.Delay = readSteps(v.fieldChecker, field+".delay", v.path(raw.Delay), func(s string) (time.Duration, error) {
			x, err := units.ParseDuration(s)
			if err == nil && x > MaxDelay {
				err = fmt.Errorf("delay %s is above the maximum of %v", s, MaxDelay)
			}
			return x, err
		})
		if len(tr.Delay) > 0 {
			d.Delay = tr.Delay[0].Value
		}
	}
	if raw.Mahimahi != "" {
		tr.Deliveries, tr.Period = readMahimahi(v.fieldChecker, field+".mahimahi", v.path(raw.Mahimahi))
		if tr.Period > 0 {
			d.Rate = units.Rate(float64(len(tr.Deliveries)) * MahimahiBytes * 8 / tr.Period.Seconds())
		}
	}
	return tr
}

// path is a file named in the scenario, relative to its folder.
func (v *dirChecker) path(name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(v.dir, name)
}

// meanRate is the time-weighted mean of rate steps over one pass: each
// step holds until the next, the last for as long as the one before.
func meanRate(steps []TraceStep[units.Rate]) units.Rate {
	if len(steps) == 1 {
		return steps[0].Value
	}
	var sum, span float64
	for i, s := range steps[:len(steps)-1] {
		d := (steps[i+1].At - s.At).Seconds()
		sum += float64(s.Value) * d
		span += d
	}
	if span == 0 {
		return steps[0].Value
	}
	return units.Rate(sum / span)
}

// readTrace reads a trace file's lines, with its size bounded; nil (and
// the problem recorded) if it cannot.
func readTrace(v *fieldChecker, field, path string) []string {
	// Only a regular file: a FIFO or a device would block or never end.
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		v.fail(field, "%s is not a regular file", path)
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		v.fail(field, "reading the trace: %v", err)
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTraceBytes+1))
	if err != nil {
		v.fail(field, "reading the trace: %v", err)
		return nil
	}
	if len(data) > maxTraceBytes {
		v.fail(field, "%s is larger than %d MiB", path, maxTraceBytes>>20)
		return nil
	}
	lines := []string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > maxTraceLines {
			v.fail(field, "%s has more than %d lines", path, maxTraceLines)
			return nil
		}
	}
	return lines
}

// readSteps reads a CSV of "time, value" lines: the time in seconds or as a
// duration (1.5s, 1500ms), the value as a scenario writes it. A first line
// that does not start with a digit is a header; # starts a comment.
func readSteps[T any](v *fieldChecker, field, path string, parse func(string) (T, error)) []TraceStep[T] {
	lines := readTrace(v, field, path)
	if lines == nil {
		return nil
	}
	var out []TraceStep[T]
	for i, line := range lines {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || i == 0 && (line[0] < '0' || line[0] > '9') {
			continue
		}
		at, val, ok := strings.Cut(line, ",")
		if !ok {
			v.fail(field, "%s:%d: %q: write time, value (as 1.5, 10Mbit)", path, i+1, line)
			return nil
		}
		t, err := traceTime(strings.TrimSpace(at))
		if err != nil {
			v.fail(field, "%s:%d: %v", path, i+1, err)
			return nil
		}
		x, err := parse(strings.TrimSpace(val))
		if err != nil {
			v.fail(field, "%s:%d: %v", path, i+1, err)
			return nil
		}
		if n := len(out); n > 0 && t <= out[n-1].At {
			v.fail(field, "%s:%d: time %v is not after the line before's %v: a trace's times increase", path, i+1, t, out[n-1].At)
			return nil
		}
		out = append(out, TraceStep[T]{At: t, Value: x})
	}
	if len(out) == 0 {
		v.fail(field, "%s has no time, value line", path)
	}
	return out
}

// traceTime reads a trace's time: seconds, or a duration with its unit.
func traceTime(s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 || f > 1e7 {
			return 0, fmt.Errorf("time %q: give seconds from 0", s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	return units.ParseDuration(s)
}

// readMahimahi reads a mahimahi trace: one delivery opportunity per line,
// a whole number of milliseconds, never decreasing; the trace repeats
// every last timestamp.
func readMahimahi(v *fieldChecker, field, path string) ([]time.Duration, time.Duration) {
	lines := readTrace(v, field, path)
	if lines == nil {
		return nil, 0
	}
	var out []time.Duration
	for i, line := range lines {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		ms, err := strconv.ParseInt(line, 10, 64)
		if err != nil || ms < 0 || ms > 1e10 {
			v.fail(field, "%s:%d: %q: a mahimahi trace has one whole number of milliseconds per line", path, i+1, line)
			return nil, 0
		}
		t := time.Duration(ms) * time.Millisecond
		if n := len(out); n > 0 && t < out[n-1] {
			v.fail(field, "%s:%d: %d ms is before the line before's %d: a mahimahi trace never goes back", path, i+1, ms, out[n-1].Milliseconds())
			return nil, 0
		}
		out = append(out, t)
	}
	if len(out) == 0 || out[len(out)-1] == 0 {
		v.fail(field, "%s: a mahimahi trace needs opportunities and a last timestamp above 0 (its period)", path)
		return nil, 0
	}
	return out, out[len(out)-1]
}

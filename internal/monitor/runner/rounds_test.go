package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/monitor/core"
)

// allShares owns every pair and leases nothing.
type allShares struct{}

func (allShares) Owns(string, string) bool { return true }
func (allShares) Lock(context.Context, string, string, time.Duration) (bool, time.Time) {
	return true, time.Time{}
}
func (allShares) Unlock(context.Context, string, string) {}

// logs is a Service that keeps what it is told to log.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) Observe(core.Observation, *archive.TestRecord) {}
func (l *logs) Logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func roundsRunner() *Runners {
	return &Runners{opts: Options{Shares: allShares{}, Service: &logs{}}, down: backoff{}}
}

// A round starts every period although the one before still waits for
// its last replies; at most two are in flight, and their results are
// handed over in the order they started.
func TestRoundsPipelined(t *testing.T) {
	const period, n = 20 * time.Millisecond, 8
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var mu sync.Mutex
	var order []int
	inFlight, most, next := 0, 0, 0
	started := make([]chan struct{}, n+maxRounds+1)
	for i := range started {
		started[i] = make(chan struct{})
	}
	done := make(chan struct{})
	roundsRunner().rounds(ctx, "a", "b", period, crowdedHold, func(ctx context.Context, _ time.Time) (func() time.Duration, error) {
		mu.Lock()
		i := next
		next++
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		if i < len(started) {
			close(started[i])
		}
		// Even rounds wait for their last replies until the next round
		// has started; odd ones end at once, before the even one before
		// them: their results still come after it.
		if i%2 == 0 && i+1 < len(started) {
			select {
			case <-started[i+1]:
			case <-time.After(time.Minute):
				t.Errorf("round %d: the next did not start while it waited for its replies", i)
			case <-ctx.Done():
			}
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
		return func() time.Duration {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, i)
			if len(order) == n {
				close(done)
				cancel()
			}
			return 0
		}, nil
	})
	<-done
	if !slices.IsSorted(order) || len(order) != n || order[0] != 0 {
		t.Errorf("results handed over in the order %v, want 0 to %d", order, n-1)
	}
	if most > maxRounds {
		t.Errorf("%d rounds in flight at once, want at most %d", most, maxRounds)
	}
}

// A result that asks for a pause (a refusal's backoff) delays the next
// round by it.
func TestRoundsPause(t *testing.T) {
	const period, pause = 10 * time.Millisecond, 200 * time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var starts []time.Time
	var observed time.Time
	roundsRunner().rounds(ctx, "a", "b", period, crowdedHold, func(context.Context, time.Time) (func() time.Duration, error) {
		starts = append(starts, time.Now())
		if len(starts) == 2 {
			cancel()
			return nil, nil
		}
		return func() time.Duration {
			observed = time.Now()
			return pause
		}, nil
	})
	if len(starts) != 2 || starts[1].Sub(observed) < pause {
		t.Errorf("rounds started at %v, the first observed at %v: want the second %v after it", starts, observed, pause)
	}
}

// crowding is a loop's rounds in a fake clock (synctest): each round
// lasts 90s of a 60s period, so that rounds overlap where they may; the
// rounds of refused (by index) are refused at once for the identity's
// tests at once, by b's agent. It keeps when each round started, after
// the loop's start, whether another was in flight then, and the rounds
// handed over; it stops once round last is handed over.
type crowding struct {
	refused map[int]bool
	last    int

	mu         sync.Mutex
	inFlight   int
	starts     []time.Duration
	overlapped []bool
	observed   []int
	failed     []int
}

func (c *crowding) run(t *testing.T) *logs {
	r := roundsRunner()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	t0 := time.Now()
	r.rounds(ctx, "a", "b", time.Minute, crowdedHold, func(ctx context.Context, start time.Time) (func() time.Duration, error) {
		c.mu.Lock()
		i := len(c.starts)
		c.starts = append(c.starts, start.Sub(t0))
		c.overlapped = append(c.overlapped, c.inFlight > 0)
		c.inFlight++
		c.mu.Unlock()
		var err error
		if c.refused[i] {
			err = fmt.Errorf("probes: %w", &measure.TooManyTestsError{Host: "b", Words: "refuses: 2 tests at once"})
		} else {
			time.Sleep(90 * time.Second)
		}
		c.mu.Lock()
		c.inFlight--
		c.mu.Unlock()
		return func() time.Duration {
			c.mu.Lock()
			defer c.mu.Unlock()
			if err != nil {
				c.failed = append(c.failed, i)
			} else {
				c.observed = append(c.observed, i)
			}
			if i == c.last {
				cancel()
			}
			return 0
		}, err
	})
	return r.opts.Service.(*logs)
}

// A round the agent refuses for the identity's tests at once while the
// one before is in flight is no failure: it runs again as soon as that
// one has ended, and the loop's rounds go one at a time for crowdedHold
// (said once), then overlap again; a refusal once more after that falls
// back again, unsaid.
func TestRoundsCrowded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := func(minutes float64) time.Duration { return time.Duration(minutes * float64(time.Minute)) }
		c := &crowding{refused: map[int]bool{1: true, 10: true}, last: 11}
		l := c.run(t)
		// Round 0 at 0 ends at 1.5; round 1, at 1, is refused; it runs
		// again (2) when round 0 ends, and the rounds go one at a time
		// until 11.5; round 9, at 12, ends at 13.5: round 10 overlaps it
		// at 13, is refused, and runs again (11) at 13.5.
		wantStarts := []time.Duration{0, m(1), m(1.5), m(3), m(4.5), m(6), m(7.5), m(9), m(10.5), m(12), m(13), m(13.5)}
		if !slices.Equal(c.starts, wantStarts) {
			t.Errorf("rounds started at %v, want %v", c.starts, wantStarts)
		}
		wantOverlapped := []bool{false, true, false, false, false, false, false, false, false, false, true, false}
		if !slices.Equal(c.overlapped, wantOverlapped) {
			t.Errorf("rounds overlapped another: %v, want %v", c.overlapped, wantOverlapped)
		}
		if len(c.failed) > 0 || !slices.Equal(c.observed, []int{0, 2, 3, 4, 5, 6, 7, 8, 9, 11}) {
			t.Errorf("rounds handed over: %v, failed: %v; want 0, 2 to 9 and 11, none failed", c.observed, c.failed)
		}
		if len(l.lines) != 1 || !strings.Contains(l.lines[0], "agent on b allows too few tests for overlapping summaries: one at a time") {
			t.Errorf("logged %q, want one line saying the agent on b allows too few tests", l.lines)
		}
	})
}

// A round refused for the identity's tests at once with none other in
// flight is handed over as a failure, and the loop goes on.
func TestRoundsCrowdedAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &crowding{refused: map[int]bool{0: true}, last: 2}
		l := c.run(t)
		if !slices.Equal(c.failed, []int{0}) || !slices.Equal(c.observed, []int{1, 2}) {
			t.Errorf("rounds handed over: %v, failed: %v; want 1 and 2, 0 failed", c.observed, c.failed)
		}
		if want := []time.Duration{0, time.Minute, 2 * time.Minute, 3 * time.Minute}; !slices.Equal(c.starts, want) {
			t.Errorf("rounds started at %v, want %v", c.starts, want)
		}
		if len(l.lines) != 0 {
			t.Errorf("logged %q, want nothing", l.lines)
		}
	})
}

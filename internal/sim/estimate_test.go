package sim

import (
	"context"
	"syscall"
	"testing"
)

// TestMemoryEstimateCounts: the estimate counts the actors that may run
// at once (Par branches and the handlers of callers too), ops, marks as
// their Repeats run them (and a timeout per Call), and routes.
func TestMemoryEstimateCounts(t *testing.T) {
	call := Op{Do: Call, To: "s"}
	prog := &Program{
		Platform: Platform{Hosts: []Host{{Name: "a"}, {Name: "b"}}, Routes: []Route{{From: "a", To: "b", Links: []string{"l1", "l2"}}}},
		Actors: []Actor{
			{Name: "s", Host: "b", Daemon: true, Ops: []Op{{Do: Serve}}},
			{Name: "c", Host: "a", Ops: []Op{{Do: Mark}, {Do: Repeat, Times: 10, Body: []Op{call, {Do: Mark}}}}},
			{Name: "p", Host: "a", Ops: []Op{{Do: Par, Branches: [][]Op{{{Do: Sleep}}, {{Do: Sleep}}}}}},
		},
	}
	// Actors: s, c and its handler, p and its two branches; ops: 1 + 4 + 3;
	// marks: 1 + 10 + 10 timeouts.
	want := int64(estimateBase) + 6*estimateActor + 8*estimateOp + 21*estimateMark + 2*2*8 + estimateRoute + 2*estimateRouteLink
	if got := MemoryEstimate(prog); got != want {
		t.Errorf("estimate %d, want %d", got, want)
	}
	// A Repeat run past any count saturates instead of overflowing.
	deep := Op{Do: Mark}
	for range 6 {
		deep = Op{Do: Repeat, Times: 1 << 30, Body: []Op{deep}}
	}
	huge := &Program{Actors: []Actor{{Name: "x", Host: "a", Ops: []Op{deep}}}}
	if got := MemoryEstimate(huge); got <= 0 || got > estimateBase+estimateActor+7*estimateOp+maxMarks*estimateMark {
		t.Errorf("estimate of a saturated count: %d", got)
	}
}

// TestMemoryEstimateHigh: on bin/wanlab-sim, a step of 2,000 jobs (the
// simulator's cost grows with its actors) takes less than its estimate.
func TestMemoryEstimateHigh(t *testing.T) {
	needSimulator(t)
	p := callsProgram(2000, 1, 3)
	_, st, err := run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	ru, ok := st.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Skip("no resource usage on this system")
	}
	peak, est := ru.Maxrss<<10, MemoryEstimate(p)
	t.Logf("peak %d MB, estimate %d MB", peak>>20, est>>20)
	if peak > est {
		t.Errorf("the simulator's peak %d MB is above the estimate %d MB", peak>>20, est>>20)
	}
}

package tune_test

import (
	"context"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/measure/measuretest"
	"github.com/wanlab/wanlab/internal/measure/tune"
)

// The tests through real agents are of the external test package:
// measuretest serves the agent, whose server imports the workloads.

// TestMeasureThroughAgents: a small grid measures the round trip, then
// each cell in turn, named as it starts, and advises one of them.
func TestMeasureThroughAgents(t *testing.T) {
	a, _ := measuretest.Agent(t, "a", limits.Default)
	b, _ := measuretest.Agent(t, "b", limits.Default)
	var steps []string
	spec := tune.Spec{Streams: []int{1, 2}, Windows: []int{0, 1 << 20}, Duration: 300 * time.Millisecond, Size: 1 << 20}
	res, err := tune.Measure(context.Background(), a, b, spec, func(s string) { steps = append(steps, s) })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"streams 1, window auto", "streams 2, window auto", "streams 1, window 1MiB", "streams 2, window 1MiB"}
	if len(steps) != len(want) || len(res.Cells) != len(want) {
		t.Fatalf("steps %q, %d cells; want %q", steps, len(res.Cells), want)
	}
	for i, w := range want {
		if steps[i] != w {
			t.Errorf("step %d: %q, want %q", i, steps[i], w)
		}
	}
	if res.RTTms <= 0 || res.BottleneckBPS <= 0 || res.Best.Streams == 0 || res.Best.BitsPerSecond < 0.97*res.BottleneckBPS {
		t.Errorf("result %+v", res)
	}
	for _, c := range res.Cells {
		if c.BitsPerSecond <= 0 || c.TransferSeconds <= 0 || (c.Window > 0) != (c.WindowLimitBPS > 0) {
			t.Errorf("cell %+v", c)
		}
	}
}

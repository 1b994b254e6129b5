package agent

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/workload/probe"
)

// TestSteppedProbesCount: probes the clock stepped during are refused, and
// their bytes were not counted (no summary is sent for stamp to count).
func TestSteppedProbesCount(t *testing.T) {
	for _, c := range []struct {
		name       string
		err        error
		wantStep   bool
		wantFailed int64
	}{
		{"clock stepped", fmt.Errorf("%w by 2s during the probes", probe.ErrClockStep), true, 3 * 100},
		{"complete", nil, false, 0}, // stamp counts the summary's
	} {
		t.Run(c.name, func(t *testing.T) {
			d := &decision{}
			ctx := context.WithValue(context.Background(), decisionKey{}, d)
			sum, err := probeReply(ctx, []probe.Result{{Seq: 0, Sent: 1}, {Seq: 1, Sent: 2}, {Seq: 2, Sent: 3}}, 100, c.err)
			if _, stepped := agentapi.ClockStepOf(err); stepped != c.wantStep || (sum == nil) != c.wantStep {
				t.Errorf("summary %v, error %v: want clock stepped %v", sum, err, c.wantStep)
			}
			if got := d.failed.Load(); got != c.wantFailed {
				t.Errorf("counted %d bytes of a failed call, want %d", got, c.wantFailed)
			}
		})
	}
}

// TestProbeReplyCarriesCounts: the reflector's count and session of each
// probe reach the wire.
func TestProbeReplyCarriesCounts(t *testing.T) {
	in := []probe.Result{{Seq: 0, Sent: 1, ReflectRx: 2, ReflectTx: 3, Received: 4, ReflectorCount: 1, ReflectorSession: 77}, {Seq: 1, Sent: 5}}
	sum, err := probeReply(context.Background(), in, 64, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := probe.ResultsFromPB(sum.GetResults()); !reflect.DeepEqual(got, in) {
		t.Errorf("results %+v came through as %+v", in, got)
	}
}

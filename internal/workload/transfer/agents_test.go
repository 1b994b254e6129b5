package transfer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/measure/measuretest"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/transfer"
)

// The tests through real agents are of the external test package: the
// agent's server imports this package.

// TestMeasureThroughAgents: a round trip between two agents on loopback
// comes back whole, both ways, with every leg's figures.
func TestMeasureThroughAgents(t *testing.T) {
	a, _ := measuretest.Agent(t, "a", limits.Default)
	b, _ := measuretest.Agent(t, "b", limits.Default)
	const size = 3<<20 + 5
	var legs []string
	spec := transfer.Options{Spec: transfer.Spec{Streams: 2, Block: 64 << 10, Compress: true}, Size: size, Roundtrip: true, CorruptAt: -1,
		OnLeg: func(from, to string) { legs = append(legs, from+"->"+to) }}
	res, err := transfer.Measure(context.Background(), a, b, spec)
	if err != nil {
		t.Fatal(err)
	}
	if !res.ChecksumOK || res.Partial || res.There == nil || res.Back == nil {
		t.Fatalf("round trip: %+v", res)
	}
	for _, l := range []*transfer.Leg{res.There, res.Back} {
		if l.Bytes != size || !l.ChecksumOK || l.Seconds <= 0 || l.BitsPerSecond <= 0 || l.CompressionRatio <= 0 || len(l.StreamBytes) != 2 {
			t.Errorf("leg %s->%s: %+v", l.From, l.To, l)
		}
	}
	if len(legs) != 2 || legs[0] != "a->b" || legs[1] != "b->a" {
		t.Errorf("legs told: %v, want a->b then b->a", legs)
	}
}

// TestMeasureCatchesACorruptCopy: a byte flipped at the receiver is
// ErrChecksum, with the partial result.
func TestMeasureCatchesACorruptCopy(t *testing.T) {
	a, _ := measuretest.Agent(t, "a", limits.Default)
	b, _ := measuretest.Agent(t, "b", limits.Default)
	spec := transfer.Options{Spec: transfer.Spec{Streams: 1, Block: transfer.DefaultBlock}, Size: 1 << 20, CorruptAt: 1000}
	res, err := transfer.Measure(context.Background(), a, b, spec)
	if !errors.Is(err, transfer.ErrChecksum) || res == nil || !res.Partial || res.ChecksumOK {
		t.Fatalf("corrupt copy: %+v, %v; want a partial result and ErrChecksum", res, err)
	}
}

// TestStepThroughAgents: a transfer step run through its kind, with
// agents as the controller's env reaches them, keeps its legs' figures
// and jobs.
func TestStepThroughAgents(t *testing.T) {
	env := measuretest.NewEnv(t, transfer.Kind, "a", "b")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o, err := transfer.Kind.Run(ctx, env, &transfer.Step{From: "a", To: "b", Size: 2 << 20, Streams: 2, Block: 256 << 10, Roundtrip: true})
	if err != nil {
		t.Fatal(err)
	}
	m := o.Metrics
	if m[results.ChecksumOK] != 1 || m[results.ThroughputMbps] <= 0 || m[results.Leg(results.Back, "mbps")] <= 0 || len(o.Jobs) != 2 {
		t.Errorf("figures %v, jobs %+v", m, o.Jobs)
	}
	for _, j := range o.Jobs {
		if j.Status != job.OK || j.Bytes != 2<<20 {
			t.Errorf("job %+v", j)
		}
	}
}

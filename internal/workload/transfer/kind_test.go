package transfer

import (
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
)

func TestCheck(t *testing.T) {
	n := func(i int) *int { return &i }
	no := false
	kindtest.RunChecks(t, []string{"a", "b"}, Check, []kindtest.CheckCase[Raw, Step]{
		{Name: "defaults", Raw: Raw{From: "a", To: "b"},
			Step: &Step{From: "a", To: "b", Size: 100_000_000, Streams: 1, Block: DefaultBlock}},
		{Name: "set", Raw: Raw{From: "a", To: "b", Size: "10MB", Streams: n(2), Window: "1MiB", Block: "64KiB", Compress: true, Roundtrip: true, ReadAhead: &no},
			Step: &Step{From: "a", To: "b", Size: 10_000_000, Streams: 2, Window: 1 << 20, Block: 64 << 10, Compress: true, Roundtrip: true, Serial: true}},
		{Name: "streams", Raw: Raw{From: "a", To: "b", Streams: n(0)},
			Want: []string{"streams: 0 is out of range: from 1 to 256"}},
		{Name: "block, said once", Raw: Raw{From: "a", To: "b", Block: "1KiB"},
			Want: []string{": block 1024 bytes: give 4KiB to 16MiB"}},
		{Name: "not said again", Raw: Raw{From: "a", To: "a", Block: "1KiB"},
			Want: []string{`to: from and to are the same host "a"`}},
		{Name: "size", Raw: Raw{From: "a", To: "b", Size: "0"},
			Want: []string{"size: must be positive"}},
		{Name: "over the agent's limits", Raw: Raw{From: "a", To: "b", Size: "2TiB"},
			Want: []string{"size: size 2199023255552 bytes: over the agent's limit"}},
	})
}

// TestStepOutcome: a round trip's figures are its legs', the way there's
// rate is the step's throughput, and each leg is a job that ended with
// the transfer, corrupt when its checksum did not match.
func TestStepOutcome(t *testing.T) {
	s := &Step{From: "a", To: "b", Streams: 2, Compress: true, Roundtrip: true}
	end := time.Unix(1000, 0)
	r := &Summary{Streams: 2, Compress: true,
		There: &Leg{From: "a", To: "b", Bytes: 1000, Seconds: 2, BitsPerSecond: 8e6, CompressionRatio: 1.5, ChecksumOK: true, Alongside: 1},
		Back:  &Leg{From: "b", To: "a", Bytes: 1000, Seconds: 4, BitsPerSecond: 4e6, CompressionRatio: 1.5, Alongside: 2}}
	o := s.outcome(r, end)
	for name, want := range map[string]float64{
		results.Streams: 2, results.Compress: 1, results.ChecksumOK: 0, results.ThroughputMbps: 8, results.TestsAlongside: 2,
		results.Leg(results.There, "mbps"): 8, results.Leg(results.Back, "mbps"): 4, results.Leg(results.Back, "seconds"): 4,
		results.Leg(results.There, "compression_ratio"): 1.5,
	} {
		if got, ok := o.Metrics[name]; !ok || got != want {
			t.Errorf("%s = %v (%v), want %v", name, got, ok, want)
		}
	}
	if len(o.Jobs) != 2 {
		t.Fatalf("jobs %+v, want one per leg", o.Jobs)
	}
	there, back := o.Jobs[0], o.Jobs[1]
	if there.Status != job.OK || there.Host != "a" || there.Subject != results.PathSubject("a", "b") || there.Bytes != 1000 || !there.End.Equal(end) || there.End.Sub(there.Start) != 2*time.Second {
		t.Errorf("the way there: %+v", there)
	}
	if back.Status != job.Corrupt || back.ID != 1 || back.Host != "b" || back.End.Sub(back.Start) != 4*time.Second {
		t.Errorf("the way back: %+v", back)
	}
}

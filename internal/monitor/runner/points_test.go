package runner

import (
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/binomial"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/throughput"
	"github.com/wanlab/wanlab/internal/workload/transfer"
)

// Every point the service writes has a registered metric name.
func TestEmittedPointsAreRegistered(t *testing.T) {
	at := time.Now()
	rt := uint32(3)
	pr := &probe.Summary{From: "a", To: "b", Sent: 10, Received: 9}
	pr.OneWay.Reliable = true
	pr.Loss.Forward, pr.Loss.Back = &binomial.Ratio{Lost: 1, Of: 10}, &binomial.Ratio{Of: 9}
	tp := &throughput.Result{}
	tp.End.SumSent.Retransmits = &rt
	tr := &transfer.Summary{There: &transfer.Leg{}}
	var pts []core.Point
	pts = append(pts, ProbePoints(at, "lat", pr)...)
	pts = append(pts, ThroughputPoints(at, "bulk", tp)...)
	pts = append(pts, TransferPoints(at, "copy", tr)...)
	pts = append(pts, DiskPoints(at, "disks", "a", &agentpb.DiskResult{})...)
	pts = append(pts, ifacePoints("snmp", "sw1", at, map[string]Rate{"eth0": {In: 1, Out: 2, Speed: 3}})...)
	if len(pts) < 20 {
		t.Fatalf("only %d points: the fixture misses some", len(pts))
	}
	for _, p := range pts {
		if _, ok := core.ByName(p.Metric); !ok {
			t.Errorf("point of %s: metric %q is not in core's registry", p.Test, p.Metric)
		}
	}
}

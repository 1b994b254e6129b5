package throughput

import (
	"reflect"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/workload/job"
)

// TestWireRoundTrip: a spec, an interval and a summary come back from
// their wire forms as they went.
func TestWireRoundTrip(t *testing.T) {
	for _, s := range []Spec{
		{Protocol: TCP, Streams: 4, Duration: 10 * time.Second, Window: 1 << 20, Congestion: "bbr", Interval: time.Second},
		{Protocol: UDP, Streams: 1, Bytes: 1 << 30, UDPRate: 1e8, UDPLength: 1400, Interval: 500 * time.Millisecond},
	} {
		if got := SpecFromPB(SpecToPB(s)); !reflect.DeepEqual(got, s) {
			t.Errorf("spec %+v came back as %+v", s, got)
		}
	}
	tcp := Sample{ID: 1, Bytes: 1 << 20, Retransmits: 3, TCP: &job.TCPInfo{SndCwnd: 10, SndMSS: 1448, RTT: 20000, RTTVar: 500, TotalRetrans: 3, PacingRate: 1e7}}
	udp := Sample{ID: 2, Bytes: 1 << 10, Packets: 100, Lost: 2, OutOfOrder: 1, JitterMS: 0.25}
	iv := Interval{Start: time.Second, End: 2 * time.Second, Streams: []Sample{tcp, udp}}
	p := &agentpb.Interval{StartNs: int64(iv.Start), EndNs: int64(iv.End)}
	for _, s := range iv.Streams {
		p.Streams = append(p.Streams, SampleToPB(s))
	}
	if got := IntervalFromPB(p); !reflect.DeepEqual(got, iv) {
		t.Errorf("interval %+v came back as %+v", iv, got)
	}
	sum := SummaryFromPB(&agentpb.Summary{SecondsNs: int64(3 * time.Second), Partial: true, Error: "cut short", Streams: p.Streams,
		AgentCpuPercent: 12.5, HostCpuPercent: -1, Alongside: 2})
	if sum.Elapsed != 3*time.Second || !sum.Partial || sum.Err == nil || sum.Err.Error() != "cut short" ||
		!reflect.DeepEqual(sum.Streams, iv.Streams) || sum.AgentCPUPercent != 12.5 || sum.HostCPUPercent != -1 || sum.Alongside != 2 {
		t.Errorf("summary came back as %+v", sum)
	}
	if sum := SummaryFromPB(&agentpb.Summary{}); sum.Err != nil {
		t.Errorf("a summary without an error came back with %v", sum.Err)
	}
}

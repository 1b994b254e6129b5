package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/golden"
	"github.com/wanlab/wanlab/internal/workload/probe"
)

// probeRound is ten probes a->b, 1 ms each way on a shared clock: probe 2
// lost on the way there, the reply to 5 on the way back; numbered
// (count > 0) by the reflector when numbered is true.
func probeRound(numbered bool) []probe.Result {
	ms := int64(time.Millisecond)
	var out []probe.Result
	count := uint32(0)
	for i := range 10 {
		sent := int64(i) * 20 * ms
		r := probe.Result{Seq: i, Sent: sent}
		if i != 2 {
			count++
			if i != 5 {
				r.ReflectRx, r.ReflectTx, r.Received = sent+ms, sent+ms, sent+2*ms
				if numbered {
					r.ReflectorCount, r.ReflectorSession = count, 9
				}
			}
		}
		out = append(out, r)
	}
	return out
}

// The probe summary as measure probe prints it, with the loss each way
// and with an older reflector's round trip only.
func TestPrintProbe(t *testing.T) {
	for _, c := range []struct {
		golden   string
		numbered bool
	}{
		{"probe-each-way.txt", true},
		{"probe-round-trip-only.txt", false},
	} {
		spec := probe.Spec{Count: 10, Interval: 20 * time.Millisecond, Size: 64, Timeout: time.Second}
		r := probe.Summarise("a", "b", spec, probeRound(c.numbered), probe.ClockAgreement{Shared: true})
		var out bytes.Buffer
		printProbe(&out, r)
		golden.Check(t, "testdata/"+c.golden, out.String())
	}
}

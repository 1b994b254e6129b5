package icmpecho

import (
	"testing"
	"time"
)

func TestTally(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	at := func(n float64) time.Time { return t0.Add(ms(n)) }
	type rep struct {
		i            int
		kernel, read float64 // ms after t0; kernel < 0: none
	}
	tests := []struct {
		name    string
		sent    int
		replies []rep
		want    Result // the counters, and RTT
		kernel  int
	}{
		{"all in order", 3, []rep{{0, 1, 1.5}, {1, 12, 12.5}, {2, 23, 23.5}}, Result{Sent: 3, Received: 3,
			RTT: RTT{Min: ms(1), Median: ms(2), Mean: ms(2), Max: ms(3), StdDev: 816497}}, 3},
		{"user-space times", 2, []rep{{0, -1, 1}, {1, -1, 13}}, Result{Sent: 2, Received: 2,
			RTT: RTT{Min: ms(1), Median: ms(2), Mean: ms(2), Max: ms(3), StdDev: ms(1)}}, 0},
		{"kernel time past the read (a clock step)", 1, []rep{{0, 5, 2}}, Result{Sent: 1, Received: 1,
			RTT: RTT{Min: ms(2), Median: ms(2), Mean: ms(2), Max: ms(2)}}, 0},
		{"kernel time before the send", 1, []rep{{0, -3, 2}}, Result{Sent: 1, Received: 1,
			RTT: RTT{Min: ms(2), Median: ms(2), Mean: ms(2), Max: ms(2)}}, 0},
		{"duplicate", 2, []rep{{0, 1, 1}, {0, 2, 2}, {1, 11, 11}}, Result{Sent: 2, Received: 2, Duplicates: 1,
			RTT: RTT{Min: ms(1), Median: ms(1), Mean: ms(1), Max: ms(1)}}, 2},
		{"reordered", 3, []rep{{1, 25, 25}, {0, 26, 26}, {2, 27, 27}}, Result{Sent: 3, Received: 3, Reordered: 1,
			RTT: RTT{Min: ms(7), Median: ms(15), Mean: ms(16), Max: ms(26), StdDev: 7788881}}, 3},
		{"lost and late", 3, []rep{{0, 1, 1}, {1, 1500, 1500}}, Result{Sent: 3, Received: 1, Late: 1,
			RTT: RTT{Min: ms(1), Median: ms(1), Mean: ms(1), Max: ms(1)}}, 1},
		{"not sent", 1, []rep{{5, 1, 1}, {-1, 1, 1}}, Result{Sent: 1}, 0},
		{"silent", 2, nil, Result{Sent: 2}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl := newTally(tc.sent, time.Second)
			for i := range tc.sent {
				tl.sent(100+i, at(float64(10*i)))
			}
			for _, r := range tc.replies {
				var k time.Time
				if r.kernel >= 0 || r.kernel < -1 {
					k = at(r.kernel)
				}
				tl.reply(r.i, k, at(r.read))
			}
			got := tl.result()
			w := tc.want
			if got.Sent != w.Sent || got.Received != w.Received || got.Duplicates != w.Duplicates || got.Late != w.Late ||
				got.Reordered != w.Reordered || got.RTT != w.RTT || got.KernelTimes != tc.kernel {
				t.Errorf("got %+v", got)
			}
			if got.Loss.Lost != w.Sent-w.Received || got.Loss.Of != w.Sent || got.Loss.Low > got.Loss.Ratio || got.Loss.High < got.Loss.Ratio {
				t.Errorf("loss %+v", got.Loss)
			}
			if len(got.Echoes) != tc.sent || got.Echoes[0].Seq != 100 {
				t.Errorf("echoes %+v", got.Echoes)
			}
		})
	}
}

func TestWaiting(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tl := newTally(2, time.Second)
	tl.sent(0, t0)
	tl.sent(1, t0.Add(100*time.Millisecond))
	if !tl.waiting(t0.Add(time.Second)) {
		t.Error("the second echo's timeout has not passed")
	}
	tl.reply(1, time.Time{}, t0.Add(200*time.Millisecond))
	if tl.waiting(t0.Add(time.Second)) || !tl.waiting(t0.Add(999*time.Millisecond)) {
		t.Error("the first echo's timeout decides")
	}
	tl.reply(0, time.Time{}, t0.Add(300*time.Millisecond))
	if tl.waiting(t0) {
		t.Error("every echo answered, still waiting")
	}
}

package probe

import (
	"github.com/wanlab/wanlab/internal/binomial"
	"math"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// played is a round of n probes played through a reflector's counter:
// arrive is the order the probes reach it (a probe twice is duplicated
// on the way there, one missing was lost), and backLost the probes whose
// replies are lost on the way back. The results are as Run returns them.
func played(n int, arrive []int, backLost ...int) []Result {
	c := newCounter()
	from := netip.MustParseAddrPort("10.0.0.1:4000")
	res := make([]Result, n)
	for i := range res {
		res[i] = Result{Seq: i, Sent: int64(i + 1)}
	}
	lost := map[int]bool{}
	for _, s := range backLost {
		lost[s] = true
	}
	for _, s := range arrive {
		count, id := c.receive(from, uint64(s))
		r := &res[s]
		switch {
		case lost[s]:
		case r.Received != 0:
			r.Duplicates++
		default:
			r.ReflectRx, r.ReflectTx, r.Received = int64(s+2), int64(s+2), int64(s+3)
			r.ReflectorCount, r.ReflectorSession = count, id
		}
	}
	return res
}

// seqs are 0..n-1 without those given.
func seqs(n int, without ...int) []int {
	var out []int
	for i := range n {
		if !slices.Contains(without, i) {
			out = append(out, i)
		}
	}
	return out
}

// lossCase is a round's expected loss: lost of counted, each way, and
// the round trip; fwdOf 0 when the one-way figures are unknown.
type lossCase struct {
	name                    string
	probes                  []Result
	size                    int
	fwdLost, fwdOf          int
	backLost, backOf        int
	rtLost, rtOf, uncounted int
	note                    string
}

func TestLossOf(t *testing.T) {
	restarted := played(10, seqs(10))
	for i := 5; i < 10; i++ {
		restarted[i].ReflectorCount -= 5
		restarted[i].ReflectorSession++
	}
	mixed := played(10, seqs(10))
	mixed[3].ReflectorCount, mixed[3].ReflectorSession = 0, 0
	old := played(10, seqs(10, 4), 6)
	for i := range old {
		old[i].ReflectorCount, old[i].ReflectorSession = 0, 0
	}
	for _, c := range []lossCase{
		{name: "none lost", probes: played(10, seqs(10)), fwdOf: 10, backOf: 10, rtOf: 10},
		{name: "lost on the way there", probes: played(10, seqs(10, 2, 5)), fwdLost: 2, fwdOf: 10, backOf: 8, rtLost: 2, rtOf: 10},
		{name: "lost on the way back", probes: played(10, seqs(10), 3, 7), fwdOf: 10, backLost: 2, backOf: 10, rtLost: 2, rtOf: 10},
		{name: "lost both ways", probes: played(10, seqs(10, 1), 4, 6), fwdLost: 1, fwdOf: 10, backLost: 2, backOf: 9, rtLost: 3, rtOf: 10},
		{name: "the last replies lost", probes: played(10, seqs(10), 8, 9), fwdOf: 8, backOf: 8, rtLost: 2, rtOf: 10, uncounted: 2,
			note: "the last 2 probes had no reply"},
		{name: "the last probe lost on the way there", probes: played(10, seqs(10, 9)), fwdOf: 9, backOf: 9, rtLost: 1, rtOf: 10, uncounted: 1,
			note: "the last 1 probes had no reply"},
		{name: "reordered on the way there", probes: played(10, []int{0, 1, 3, 2, 4, 5, 6, 8, 7, 9}), fwdOf: 10, backOf: 10, rtOf: 10},
		{name: "reordered around a loss", probes: played(10, []int{0, 2, 1, 3, 4, 6, 7, 9, 8}), fwdLost: 1, fwdOf: 10, backOf: 9, rtLost: 1, rtOf: 10},
		// Probe 9 overtook 8 and its reply was lost: 8's count (10) counts
		// a probe past the last reply, and is bounded by the 9 counted.
		{name: "reordered past the last reply", probes: played(10, []int{0, 1, 2, 3, 4, 5, 6, 7, 9, 8}, 9), fwdOf: 9, backOf: 9, rtLost: 1, rtOf: 10, uncounted: 1,
			note: "the last 1 probes had no reply"},
		{name: "duplicated on the way there", probes: played(10, []int{0, 1, 1, 2, 3, 4, 4, 4, 5, 6, 7, 8, 9}), fwdOf: 10, backOf: 10, rtOf: 10},
		{name: "duplicated, then lost", probes: played(10, []int{0, 1, 2, 2, 3, 5, 6, 7, 8, 9}, 6), fwdLost: 1, fwdOf: 10, backLost: 1, backOf: 9, rtLost: 2, rtOf: 10},
		{name: "an older reflector", probes: old, rtLost: 2, rtOf: 10, note: noteUnnumbered},
		{name: "probes too short for the count", probes: played(10, seqs(10)), size: HeaderLen, rtOf: 10, note: "no room for the reflector's count"},
		{name: "some replies unnumbered", probes: mixed, rtOf: 10, note: noteMixed},
		{name: "the reflector restarted", probes: restarted, rtOf: 10, note: noteRestarted},
		{name: "no reply", probes: played(10, nil), rtLost: 10, rtOf: 10, note: noteNoReply},
		{name: "no probe", probes: nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			size := c.size
			if size == 0 {
				size = NumberedLen
			}
			l := lossOf(c.probes, size)
			if got := l.Roundtrip; got.Lost != c.rtLost || got.Of != c.rtOf {
				t.Errorf("round trip %d of %d, want %d of %d", got.Lost, got.Of, c.rtLost, c.rtOf)
			}
			switch {
			case c.fwdOf == 0 && (l.Forward != nil || l.Back != nil):
				t.Errorf("one-way loss %+v and %+v, want none", l.Forward, l.Back)
			case c.fwdOf != 0 && (l.Forward == nil || l.Back == nil):
				t.Fatalf("no one-way loss (%s)", l.Note)
			case c.fwdOf != 0:
				if f, b := *l.Forward, *l.Back; f.Lost != c.fwdLost || f.Of != c.fwdOf || b.Lost != c.backLost || b.Of != c.backOf {
					t.Errorf("forward %d of %d, back %d of %d; want %d of %d, %d of %d", f.Lost, f.Of, b.Lost, b.Of, c.fwdLost, c.fwdOf, c.backLost, c.backOf)
				}
				if l.Counted != c.fwdOf || l.Uncounted != c.uncounted {
					t.Errorf("counted %d, uncounted %d; want %d, %d", l.Counted, l.Uncounted, c.fwdOf, c.uncounted)
				}
				// The round trip is what neither way lost.
				if want := 1 - (1-l.Forward.Ratio)*(1-l.Back.Ratio); c.uncounted == 0 && math.Abs(l.Roundtrip.Ratio-want) > 1e-9 {
					t.Errorf("round trip %g, ways' product says %g", l.Roundtrip.Ratio, want)
				}
			}
			if (c.note == "") != (l.Note == "") || !strings.Contains(l.Note, c.note) {
				t.Errorf("note %q, want one saying %q", l.Note, c.note)
			}
		})
	}
}

// TestSummariseLoss: a summary carries the loss each way, and the
// intervals' bounds hold their ratio.
func TestSummariseLoss(t *testing.T) {
	r := Summarise("a", "b", Spec{Count: 10, Size: NumberedLen}, played(10, seqs(10, 2), 5), ClockAgreement{Shared: true})
	l := r.Loss
	if l.Forward == nil || l.Back == nil || l.Forward.Lost != 1 || l.Back.Lost != 1 || r.Lost != 2 || l.Roundtrip.Lost != r.Lost {
		t.Fatalf("loss %+v, lost %d", l, r.Lost)
	}
	for _, x := range []binomial.Ratio{l.Roundtrip, *l.Forward, *l.Back} {
		if !(x.Low <= x.Ratio && x.Ratio <= x.High && x.Low >= 0 && x.High <= 1) {
			t.Errorf("%+v: the ratio is not within its interval", x)
		}
	}
}

package twin

import (
	"bytes"
	"testing"

	"github.com/wanlab/wanlab/internal/scenario"
)

// loadsScenario writes the twin's scenario and loads it with wanlab's own
// parser: every value it writes must read back as the twin's.
func loadsScenario(t *testing.T, tw *Twin) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteScenario(&b, tw, "twin"); err != nil {
		t.Fatal(err)
	}
	f, err := scenario.Parse("twin.yaml", b.Bytes(), false)
	if err != nil {
		t.Fatalf("the twin's scenario does not load: %v\n%s", err, b.String())
	}
	if len(f.Testbed.Links) != 1 {
		t.Fatalf("%d links, want 1", len(f.Testbed.Links))
	}
	l := f.Testbed.Links[0]
	if l.A != tw.A || l.B != tw.B {
		t.Errorf("link between %s and %s, want %s and %s", l.A, l.B, tw.A, tw.B)
	}
	for _, d := range []struct {
		got  scenario.Direction
		want *Fit
	}{{l.Forward, &tw.Forward}, {l.Reverse, &tw.Reverse}} {
		g, w := d.got, d.want
		if !within(float64(g.Rate), w.RateBPS, 0.001, 0) || !within(g.Delay.Seconds(), w.DelayS, 0, 1e-6) ||
			g.Queue.Bytes != w.QueueBytes || g.MTU != w.MTU || !within(g.Loss.Mean(), w.Loss, 0.001, 1e-9) {
			t.Errorf("scenario direction %+v, twin %+v", g, w)
		}
		if (g.Loss.Gilbert != nil) != (w.LossModel == GilbertElliott) {
			t.Errorf("scenario loss %+v, twin's model %s", g.Loss, w.LossModel)
		}
		if (g.Cross != nil) != (w.Cross != nil) {
			t.Errorf("scenario cross %+v, twin's %+v", g.Cross, w.Cross)
		}
	}
	return b.Bytes()
}

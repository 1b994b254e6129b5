package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pathTruth is one direction of a known-truth path: what the scenario
// sets, which wanlab twin does not see.
type pathTruth struct {
	rateBPS  float64
	delayS   float64
	queueBDP float64 // of the path's base round trip
	loss     float64 // Bernoulli (ge false) or the long-run loss of Gilbert-Elliott
	ge       bool
	geP, geR float64
	cross    float64 // share of the rate, the mean
	pattern  string
}

// queueBytes is the direction's queue as the scenario sets it (at least
// two full packets).
func (d pathTruth) queueBytes(rtt float64) int64 {
	return max(int64(d.queueBDP*d.rateBPS*rtt/8), 3000)
}

// yaml is the direction's settings as a scenario's flow mapping.
func (d pathTruth) yaml(rtt float64) string {
	s := fmt.Sprintf("{rate: %.0fbit, delay: %gms, queue: %dB", d.rateBPS, d.delayS*1e3, d.queueBytes(rtt))
	switch {
	case d.ge:
		s += fmt.Sprintf(", loss: {model: gilbert-elliott, p: %g%%, r: %g%%}", 100*d.geP, 100*d.geR)
	case d.loss > 0:
		s += fmt.Sprintf(", loss: %g%%", 100*d.loss)
	}
	if d.cross > 0 {
		// onoff's rate is while on, half the time (its periods' default means).
		offered := d.cross * d.rateBPS
		if d.pattern == "onoff" {
			offered *= 2
		}
		s += fmt.Sprintf(", cross: {rate: %.0fbit, pattern: %s}", offered, d.pattern)
	}
	return s + "}"
}

// twinScenario is the two-host scenario of a known-truth path.
func twinScenario(name string, fwd, rev pathTruth) string {
	rtt := fwd.delayS + rev.delayS
	return fmt.Sprintf("name: %s\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - between: [a, b]\n    forward: %s\n    reverse: %s\n", name, fwd.yaml(rtt), rev.yaml(rtt))
}

// fitted is one direction of wanlab twin --json.
type fitted struct {
	RateBPS    float64 `json:"rate_bps"`
	DelayS     float64 `json:"delay_s"`
	QueueBytes int64   `json:"queue_bytes"`
	Loss       float64 `json:"loss"`
	LossModel  string  `json:"loss_model"`
	CrossBPS   float64 `json:"cross_bps"`
	Evidence   map[string]struct {
		Low, High float64
		AtLeast   bool `json:"at_least"`
		Default   bool `json:"default"`
	} `json:"evidence"`
}

type twinDoc struct {
	Forward, Reverse fitted
	Campaign         struct {
		Steps []struct {
			Kind, From, To string
			Seconds        float64
			Error, Skipped string
		}
		Bytes   int64
		Seconds float64
	}
	Check []struct {
		Name, Way, Missing, Why string
		Measured, Twin, Error   float64
		Met                     bool
	}
}

// runTwin runs wanlab twin with a deadline of its own (a campaign and its
// check take minutes) and decodes its --json.
func runTwin(t testing.TB, limit time.Duration, args ...string) (twinDoc, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, wanlabBin, append([]string{"twin", "--json"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("wanlab twin %v: %v", args, err)
	}
	var doc twinDoc
	if err != nil || json.Unmarshal(out.Bytes(), &doc) != nil {
		t.Fatalf("wanlab twin %v: %v\nstdout: %s\nstderr: %s", args, err, out.String(), errb.String())
	}
	return doc, errb.String()
}

// score is how a twin's fit compares with the truth, by the targets.
type score struct {
	rate, rtt, queue, loss, cross, model bool
}

func scoreWay(f fitted, d pathTruth, rtt, fittedRTT float64) (score, string) {
	var s score
	s.rate = math.Abs(f.RateBPS-d.rateBPS) <= 0.05*d.rateBPS
	s.rtt = math.Abs(fittedRTT-rtt) <= max(1e-3, 0.02*rtt)
	q := float64(d.queueBytes(rtt))
	s.queue = math.Abs(float64(f.QueueBytes)-q) <= 0.25*q
	e := f.Evidence["loss"]
	s.loss = d.loss >= e.Low-1e-9 && d.loss <= e.High+1e-9
	s.cross = math.Abs(f.CrossBPS-d.cross*d.rateBPS) <= 0.10*d.rateBPS
	want := "bernoulli"
	if d.ge {
		want = "gilbert-elliott"
	}
	s.model = f.LossModel == want || d.loss == 0
	text := fmt.Sprintf("rate %.3g (truth %.3g) %v; rtt %.4g ms (truth %.4g) %v; queue %d B (truth %.0f) %v; loss %.3g%% [%.3g-%.3g] (truth %.3g%%) %v; cross %.3g (truth %.3g) %v; model %s (truth %s) %v",
		f.RateBPS, d.rateBPS, s.rate, fittedRTT*1e3, rtt*1e3, s.rtt, f.QueueBytes, q, s.queue, 100*f.Loss, 100*e.Low, 100*e.High, 100*d.loss, s.loss,
		f.CrossBPS, d.cross*d.rateBPS, s.cross, f.LossModel, want, s.model)
	return s, text
}

// A known-truth path, 20 Mbit/s one way and 10 the other, 30 ms round
// trip, a queue of one BDP each way, 0.5% Bernoulli loss on the way back:
// wanlab twin fits it within the targets, and --check replays it.
// The campaign's UDP load above the capacity fills the queue of the lossy
// way too, where one TCP stream would not (Mathis: about 6.7 Mbit/s at
// 0.5% and 30 ms), and what gets through of it says the clean path
// carries no cross traffic.
func TestTwinKnownTruth(t *testing.T) {
	fwd := pathTruth{rateBPS: 20e6, delayS: 0.015, queueBDP: 1}
	rev := pathTruth{rateBPS: 10e6, delayS: 0.015, queueBDP: 1, loss: 0.005}
	name := up(t, twinScenario("e2e-twin-truth", fwd, rev))
	out := filepath.Join(t.TempDir(), "twin.yaml")
	started := time.Now()
	doc, stderr := runTwin(t, 12*time.Minute, "--testbed", name, "--from", "a", "--to", "b", "-o", out, "--name", "e2e-twin", "--check", "--budget", "75s")
	t.Logf("twin and check took %v; campaign %.0f s, %d bytes\n%s", time.Since(started).Round(time.Second), doc.Campaign.Seconds, doc.Campaign.Bytes, stderr)
	text, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the twin:\n%s", text)
	for _, s := range doc.Campaign.Steps {
		if s.Error != "" || s.Skipped != "" {
			t.Errorf("campaign step %s %s->%s: error %q, skipped %q", s.Kind, s.From, s.To, s.Error, s.Skipped)
		}
	}
	if doc.Campaign.Seconds > 120 {
		t.Errorf("the campaign took %.0f s, over the issue's 2 minutes", doc.Campaign.Seconds)
	}
	rtt := fwd.delayS + rev.delayS
	fittedRTT := doc.Forward.DelayS + doc.Reverse.DelayS
	for _, w := range []struct {
		name string
		f    fitted
		d    pathTruth
	}{{"a->b", doc.Forward, fwd}, {"b->a", doc.Reverse, rev}} {
		s, line := scoreWay(w.f, w.d, rtt, fittedRTT)
		t.Logf("%s: %s", w.name, line)
		if !s.rate || !s.rtt || !s.queue || !s.loss || !s.cross || !s.model {
			t.Errorf("%s misses a target: %s", w.name, line)
		}
	}
	if len(doc.Check) != 12 {
		t.Fatalf("--check compared %d figures, want 6 each way: %+v", len(doc.Check), doc.Check)
	}
	met, compared := 0, 0
	for _, f := range doc.Check {
		t.Logf("check %s %s: measured %.4g, twin %.4g, error %+.1f%%, met %v %s%s", f.Name, f.Way, f.Measured, f.Twin, 100*f.Error, f.Met, f.Why, f.Missing)
		if f.Missing == "" {
			compared++
			if f.Met {
				met++
			}
		}
		if strings.HasPrefix(f.Name, "throughput") && f.Missing != "" {
			t.Errorf("check %s %s not compared: %s", f.Name, f.Way, f.Missing)
		}
	}
	t.Logf("replay: %d of %d figures within their targets", met, compared)
	if met < compared*3/4 {
		t.Errorf("the replay met %d of %d figures: fewer than three in four", met, compared)
	}
	assertNothingLeft(t, "e2e-twin")
}

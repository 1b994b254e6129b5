package monitor

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/monitor/runner"
)

// Through the service, as the probe runner calls it: a summary's one-way
// figures come back to be stored with it; the owd_step alerts and the
// incident they make are acknowledged like a path's alert; a clock step
// is logged and shown in the path's status.
func TestOneWayThroughService(t *testing.T) {
	s := starService(t)
	var mu sync.Mutex
	var logged []string
	s.opts.Logf = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, fmt.Sprintf(format, args...))
	}
	sites := []string{"a", "b", "c", "d"}
	t0 := time.Now()
	const stepAt = 8
	at := func(i int) time.Time { return t0.Add(time.Duration(i+1) * 10 * time.Second) }
	round := func(i int) {
		for _, src := range sites {
			for _, dst := range sites {
				if src != dst {
					k := core.PathKey{Src: src, Dst: dst, Test: "lat"}
					pts := s.OneWay(k, at(i), runner.OneWaySamples(delaySummary(t0, stepAt, i, src, dst), nil))
					s.Observe(core.Observation{Key: k, Type: core.Probe, At: at(i), Points: pts}, nil)
				}
			}
		}
	}
	i := 0
	for ; i < stepAt+6 && len(s.Incidents()) == 0; i++ {
		round(i)
	}
	incidents := s.Incidents()
	if len(incidents) != 1 {
		t.Fatalf("incidents %+v, want one", incidents)
	}
	values := func(src, dst string) map[string]float64 {
		snap := s.Snapshot()
		j := slices.IndexFunc(snap.Paths, func(p core.PathView) bool { return p.Src == src && p.Dst == dst && p.Test == "lat" })
		return snap.Paths[j].Values
	}
	into, out := values("a", "d"), values("d", "a")
	for _, c := range []struct {
		name      string
		got       map[string]float64
		metric    core.Name
		want, tol float64
	}{
		{"a -> d forward", into, core.OWDForwardChange, 0.005, 0.001},
		{"a -> d back", into, core.OWDBackChange, 0, 0.001},
		{"d -> a back (the replies into d)", out, core.OWDBackChange, 0.005, 0.001},
		{"a -> d skew", into, core.ClockSkew, 50, 5},
	} {
		if v, ok := c.got[string(c.metric)]; !ok || math.Abs(v-c.want) > c.tol {
			t.Errorf("%s: %s = %v (present %v), want %v", c.name, c.metric, v, ok, c.want)
		}
	}

	// Acknowledging: an owd_step alert and the incident, by their refs.
	var owdRef string
	for _, a := range s.Snapshot().Alerts {
		if a.Rule == core.RuleOWDStep {
			owdRef = a.Ref
		}
	}
	for _, ref := range []string{owdRef, incidents[0].Ref} {
		if !s.Ack(ref, "ops", "on it") {
			t.Errorf("Ack(%q) found no active alert", ref)
		}
	}
	if s.Ack("owd_step/nope", "ops", "") {
		t.Error("an unknown ref was acknowledged")
	}
	if i := slices.IndexFunc(s.Snapshot().Alerts, func(a core.Alert) bool { return a.Ref == owdRef }); i < 0 || s.Snapshot().Alerts[i].AckedBy != "ops" {
		t.Errorf("the owd_step alert %s is not shown acknowledged", owdRef)
	}
	stored, err := s.Archive().Alerts(t.Context(), time.Time{}, false)
	if err != nil {
		t.Fatal(err)
	}
	acked := 0
	for _, a := range stored {
		if a.AckedBy == "ops" {
			acked++
		}
	}
	if acked != 2 {
		t.Errorf("%d stored alerts acknowledged, want the owd_step and the incident", acked)
	}

	// The clocks of a -> b step: logged, and in the path's status.
	k := core.PathKey{Src: "a", Dst: "b", Test: "lat"}
	s.OneWay(k, at(i), core.OneWaySamples{ClockStep: "the clock stepped by 2s during the session"})
	round(i + 1)
	snap := s.Snapshot()
	j := slices.IndexFunc(snap.Paths, func(p core.PathView) bool { return p.Src == k.Src && p.Dst == k.Dst && p.Test == k.Test })
	if j < 0 || !strings.Contains(snap.Paths[j].Note, "the clock stepped by 2s during the session") {
		t.Errorf("the path's status %+v does not say its windows restarted", snap.Paths[j])
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.ContainsFunc(logged, func(l string) bool {
		return strings.Contains(l, "a->b") && strings.Contains(l, "the clock stepped by 2s")
	}) {
		t.Errorf("the log %q does not say the clocks stepped", logged)
	}
}

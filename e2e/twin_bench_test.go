package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/twinrun"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

// BenchmarkTwinKnownTruth is issue 35's known-truth suite: random paths
// whose parameters wanlab twin does not see (rates 5 Mbit/s to 1 Gbit/s,
// round trips 1-300 ms, queues 0.2-4 BDP, Bernoulli, Gilbert-Elliott or
// no loss, 0-60% cross traffic of each pattern, asymmetric rates and
// delays) are brought up, twinned with --check, and scored: each fitted
// value against the truth by the targets, and the replay's
// figures against the path's; the path's own 1- and 8-stream TCP tests,
// run again after the campaign, say how far the path is from itself (the
// replay's noise floor). WANLAB_TWIN_PATHS sets how many paths (20),
// WANLAB_TWIN_SEED the first seed (1), WANLAB_TWIN_MAX_RATE the fastest
// rate in bit/s (1e9). docs/benchmarks.md, "Path twins".
func BenchmarkTwinKnownTruth(b *testing.B) {
	paths := envInt("WANLAB_TWIN_PATHS", 20)
	seed := envInt("WANLAB_TWIN_SEED", 1)
	maxRate := float64(envInt("WANLAB_TWIN_MAX_RATE", 1e9))
	for range b.N {
		var ways, rate, rtt, queue, loss, cross, model, geWays, geRight int
		var met, compared, allMet, allCompared, longest int
		var selfMet, selfCompared, selfTwinMet int
		var campaign time.Duration
		for i := range paths {
			rng := rand.New(rand.NewPCG(uint64(seed+i), 35))
			fwd, rev := randomTruth(rng, maxRate), randomTruth(rng, maxRate)
			name := fmt.Sprintf("e2e-twin-%d", seed+i)
			yaml := twinScenario(name, fwd, rev)
			b.Logf("path %d:\n%s", seed+i, yaml)
			doc, again, ok := twinOf(b, name, yaml)
			if !ok {
				continue
			}
			campaign += time.Duration(doc.Campaign.Seconds * float64(time.Second))
			longest = max(longest, int(doc.Campaign.Seconds))
			truthRTT := fwd.delayS + rev.delayS
			for _, w := range []struct {
				f fitted
				d pathTruth
			}{{doc.Forward, fwd}, {doc.Reverse, rev}} {
				s, line := scoreWay(w.f, w.d, truthRTT, doc.Forward.DelayS+doc.Reverse.DelayS)
				b.Logf("path %d: %s", seed+i, line)
				ways++
				rate, rtt, queue, loss, cross, model = rate+b2i(s.rate), rtt+b2i(s.rtt), queue+b2i(s.queue), loss+b2i(s.loss), cross+b2i(s.cross), model+b2i(s.model)
				if w.d.ge {
					geWays, geRight = geWays+1, geRight+b2i(s.model)
				}
			}
			for _, f := range doc.Check {
				if f.Missing != "" {
					continue
				}
				allCompared, allMet = allCompared+1, allMet+b2i(f.Met)
				if replayTargets[f.Name] {
					compared++
					met += b2i(f.Met)
				}
				if !f.Met {
					b.Logf("path %d: replay miss: %s %s: path %.4g, twin %.4g (%+.1f%%): %s", seed+i, f.Name, f.Way, f.Measured, f.Twin, 100*f.Error, f.Why)
				}
				// The path against itself: the same TCP test again,
				// after the campaign, is the replay's noise floor.
				if v, ok := again[f.Name+" "+f.Way]; ok && f.Measured > 0 {
					e := (v - f.Measured) / f.Measured
					selfCompared, selfMet, selfTwinMet = selfCompared+1, selfMet+b2i(math.Abs(e) <= 0.1), selfTwinMet+b2i(f.Met)
					b.Logf("path %d: %s %s: path %.4g, again %.4g (%+.1f%%), twin %.4g (%+.1f%%)", seed+i, f.Name, f.Way, f.Measured, v, 100*e, f.Twin, 100*f.Error)
				}
			}
		}
		if ways == 0 {
			b.Fatal("no path was twinned")
		}
		share := func(n, of int) float64 { return 100 * float64(n) / float64(max(of, 1)) }
		b.ReportMetric(share(rate, ways), "rate_within_5%_pct")
		b.ReportMetric(share(rtt, ways), "rtt_within_1ms_or_2%_pct")
		b.ReportMetric(share(queue, ways), "queue_within_25%_pct")
		b.ReportMetric(share(loss, ways), "loss_in_interval_pct")
		b.ReportMetric(share(cross, ways), "cross_within_10%_pct")
		b.ReportMetric(share(model, ways), "loss_model_right_pct")
		b.ReportMetric(share(geRight, geWays), "gilbert_elliott_found_pct")
		b.ReportMetric(share(met, compared), "replay_within_target_pct")
		b.ReportMetric(share(allMet, allCompared), "replay_all_figures_pct")
		b.ReportMetric(share(selfMet, selfCompared), "path_again_within_10%_pct")
		b.ReportMetric(share(selfTwinMet, selfCompared), "twin_tcp_within_10%_pct")
		b.ReportMetric(campaign.Seconds()/float64(ways/2), "campaign_s")
		b.ReportMetric(float64(longest), "longest_campaign_s")
	}
}

// replayTargets are the replayed figures the target counts; the
// others (loss, burst, available bandwidth) count in
// replay_all_figures_pct.
var replayTargets = map[string]bool{twinrun.FigThroughput1: true, twinrun.FigThroughput8: true, twinrun.FigRTTLoaded: true}

// twinOf brings a truth's scenario up, twins it with --check, runs the
// campaign's 1- and 8-stream TCP tests on the path again (again, by
// check figure and way: how far the path is from itself), and takes it
// down; a twin that fails is logged (and counts as no path).
func twinOf(b *testing.B, name, yaml string) (twinDoc, map[string]float64, bool) {
	path := filepath.Join(b.TempDir(), name+".yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		b.Fatal(err)
	}
	if r := wanlab(b, "testbed", "up", path); r.code != 0 {
		b.Errorf("%s: testbed up: exit %d: %s", name, r.code, r.stderr)
		return twinDoc{}, nil, false
	}
	defer wanlab(b, "testbed", "down", name)
	out := filepath.Join(b.TempDir(), "twin.yaml")
	doc, stderr := runTwin(b, 15*time.Minute, "--testbed", name, "--from", "a", "--to", "b", "-o", out, "--name", name+"-tw", "--check")
	b.Logf("%s: campaign %.0f s, %d bytes\n%s", name, doc.Campaign.Seconds, doc.Campaign.Bytes, stderr)
	again := map[string]float64{}
	// The campaign's TCP tests last what its plan (on stderr) says.
	secs := "4s"
	if m := regexp.MustCompile(`throughput \d+ stream\(s\) (\d+s)`).FindStringSubmatch(stderr); m != nil {
		secs = m[1]
	}
	for _, way := range [][2]string{{"a", "b"}, {"b", "a"}} {
		for n, fig := range map[int]string{1: twinrun.FigThroughput1, 8: twinrun.FigThroughput8} {
			r := wanlab(b, "measure", "throughput", "--testbed", name, "--from", way[0], "--to", way[1], "-P", strconv.Itoa(n), "-t", secs, "--json")
			var res throughput.Result
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 || res.End.SumReceived.BitsPerSecond <= 0 {
				b.Logf("%s: %s again %s: exit %d: %v %s", name, fig, way, r.code, err, r.stderr)
				continue
			}
			again[fig+" "+way[0]+"->"+way[1]] = res.End.SumReceived.BitsPerSecond
		}
	}
	return doc, again, true
}

// randomTruth is one direction of a random path.
func randomTruth(rng *rand.Rand, maxRate float64) pathTruth {
	logUniform := func(lo, hi float64) float64 {
		return math.Exp(math.Log(lo) + rng.Float64()*(math.Log(hi)-math.Log(lo)))
	}
	d := pathTruth{
		rateBPS:  math.Round(logUniform(5e6, maxRate)/1e5) * 1e5,
		delayS:   math.Round(logUniform(0.5e-3, 150e-3)*1e4) / 1e4,
		queueBDP: 0.2 + rng.Float64()*3.8,
	}
	switch r := rng.Float64(); {
	case r < 0.4:
		d.loss = math.Round(logUniform(1e-3, 2e-2)*1e4) / 1e4
	case r < 0.7:
		d.ge, d.geP, d.geR = true, math.Round(logUniform(1e-3, 1e-2)*1e4)/1e4, math.Round((0.2+0.4*rng.Float64())*100)/100
		d.loss = d.geP / (d.geP + d.geR)
	}
	if rng.Float64() < 0.5 {
		d.cross = math.Round(rng.Float64()*60) / 100
		d.pattern = []string{"poisson", "constant", "onoff", "flows"}[rng.IntN(4)]
		if d.pattern == "onoff" {
			d.cross = min(d.cross, 0.45) // on at twice the mean, under the rate
		}
	}
	return d
}

func b2i(ok bool) int {
	if ok {
		return 1
	}
	return 0
}

// envInt reads a whole number from the environment, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

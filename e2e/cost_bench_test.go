package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/cost"
	"github.com/wanlab/wanlab/internal/monitor/web"
	"github.com/wanlab/wanlab/internal/testsupport"
	"github.com/wanlab/wanlab/internal/workload/transfer"
)

// costLab is four sites whose paths differ in rate, round trip and disk:
// b's disk reads at 3 MB/s (24 Mbit/s, below its 50 Mbit/s link: the
// seed's slow disk behind a fast path) and d's writes at 2 MB/s.
const costLab = `name: costlab
hosts:
  a: {site: a}
  b: {site: b, disk: {read: 3MB/s}}
  c: {site: c}
  d: {site: d, disk: {write: 2MB/s}}
sites:
  a: {rate: 100Mbit, delay: 2ms}
  b: {rate: 50Mbit, delay: 10ms}
  c: {rate: 40Mbit, delay: 40ms}
  d: {rate: 20Mbit, delay: 80ms}
`

// BenchmarkCostAccuracy measures the network cost API against reality:
// wanlab serve monitors costlab (probes, a 5 s throughput test per pair a
// minute, a disk test per host) for a few minutes; then, for every ordered
// pair and two file sizes, it asks /api/v1/cost for a disk-to-disk
// transfer, and for every destination and size /api/v1/rank for the other
// three hosts as replicas; serve stops and each transfer runs for real with
// wanlab measure transfer. It reports the median and p90 relative error of
// the predicted time, how often the measured time fell in the predicted
// interval, and how often the ranking's first source was the fastest
// (strictly, and within 5% of the fastest's time). Targets: median <= 10%,
// p90 <= 25%, ranking >= 90%.
//
// make bench runs it: go test -run '^$' -bench CostAccuracy -benchtime 1x ./e2e
func BenchmarkCostAccuracy(b *testing.B) {
	testsupport.NeedRoot(b)
	for b.Loop() {
		costAccuracy(b)
	}
}

func costAccuracy(b *testing.B) {
	name := up(b, costLab)
	dir := b.TempDir()
	hosts := []string{"a", "b", "c", "d"}
	sizes := []int64{8e6, 32e6}
	// The same scenario file: serve finds its test-bed up, and leaves it.
	os.WriteFile(filepath.Join(dir, "costlab.yaml"), []byte(costLab), 0o644)
	cfg := filepath.Join(dir, "cost.yaml")
	os.WriteFile(cfg, []byte(`testbed: costlab.yaml`+`
groups: {all: [a, b, c, d]}
tests:
  - {name: lat, type: probe, group: all, rate: 5/s, summary: 5s}
  - {name: bulk, type: throughput, group: all, every: 90s, slip: 5s, duration: 5s}
  - {name: disk, type: disk, group: all, every: 4m, slip: 5s, bytes: 4MB}
baseline: {window: 1h, min_points: 3}
`), 0o644)
	s := startServe(b, "--config", cfg, "--db", filepath.Join(dir, "cost.db"), "--buffer", filepath.Join(dir, "buffer"))
	if !waitFor(8*time.Minute, func() bool {
		st := s.status().Tests
		return st["throughput ok"] >= 3*12 && st["disk ok"] >= 4
	}) {
		b.Fatalf("not enough tests in 8 minutes: %v", s.status().Tests)
	}
	type ask struct {
		src, dst string
		bytes    int64
	}
	preds := map[ask]cost.Prediction{}
	for _, src := range hosts {
		for _, dst := range hosts {
			for _, n := range sizes {
				if src == dst {
					continue
				}
				var p cost.Prediction
				s.get("/api/v1/cost?"+url.Values{"src": {src}, "dst": {dst}, "bytes": {fmt.Sprint(n)}}.Encode(), &p)
				preds[ask{src, dst, n}] = p
			}
		}
	}
	ranks := map[ask][]string{}
	for _, dst := range hosts {
		for _, n := range sizes {
			body, _ := json.Marshal(web.RankRequest{Dst: dst, Bytes: n, Sources: slices.DeleteFunc(slices.Clone(hosts), func(h string) bool { return h == dst })})
			resp, err := http.Post(s.base+"/api/v1/rank", "application/json", strings.NewReader(string(body)))
			if err != nil {
				b.Fatal(err)
			}
			var ans web.RankAnswer
			json.NewDecoder(resp.Body).Decode(&ans)
			resp.Body.Close()
			for _, p := range ans.Ranking {
				ranks[ask{"", dst, n}] = append(ranks[ask{"", dst, n}], p.Src)
			}
		}
	}
	s.stop()

	// Each transfer for real, as a user would run it.
	took := map[ask]float64{}
	var errs []float64
	inside := 0
	for k, p := range preds {
		r := wanlab(b, "measure", "transfer", "--testbed", name, "--from", k.src, "--to", k.dst, "--size", fmt.Sprint(k.bytes),
			"--streams", fmt.Sprint(p.Streams), "--json")
		var res transfer.Summary
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || res.There == nil {
			b.Fatalf("measure transfer %s->%s: exit %d: %s", k.src, k.dst, r.code, r.stderr)
		}
		took[k] = res.There.Seconds
		e := (p.PredictedSeconds - res.There.Seconds) / res.There.Seconds
		errs = append(errs, math.Abs(e))
		if res.There.Seconds >= p.IntervalSeconds[0] && res.There.Seconds <= p.IntervalSeconds[1] {
			inside++
		}
		fmt.Printf("%s->%s %3.0f MB: predicted %6.2f s [%6.2f, %6.2f] (%s, %s, %s), took %6.2f s: error %+5.1f%%\n",
			k.src, k.dst, float64(k.bytes)/1e6, p.PredictedSeconds, p.IntervalSeconds[0], p.IntervalSeconds[1], p.Limit, p.Certainty,
			fmt.Sprintf("%.1f Mbit/s", p.RateBitsPerSecond/1e6), res.There.Seconds, 100*e)
	}
	strict, near := 0, 0
	for k, order := range ranks {
		var fastest string
		for _, src := range hosts {
			if src != k.dst && (fastest == "" || took[ask{src, k.dst, k.bytes}] < took[ask{fastest, k.dst, k.bytes}]) {
				fastest = src
			}
		}
		if len(order) > 0 && order[0] == fastest {
			strict++
		}
		if len(order) > 0 && took[ask{order[0], k.dst, k.bytes}] <= 1.05*took[ask{fastest, k.dst, k.bytes}] {
			near++
		}
		fmt.Printf("rank to %s, %.0f MB: %v; measured fastest %s\n", k.dst, float64(k.bytes)/1e6, order, fastest)
	}
	sort.Float64s(errs)
	b.ReportMetric(100*errs[len(errs)/2], "median_error_%")
	b.ReportMetric(100*errs[int(0.9*float64(len(errs)-1)+0.5)], "p90_error_%")
	b.ReportMetric(100*float64(inside)/float64(len(errs)), "in_interval_%")
	b.ReportMetric(100*float64(strict)/float64(len(ranks)), "rank_fastest_%")
	b.ReportMetric(100*float64(near)/float64(len(ranks)), "rank_within5%_%")
}

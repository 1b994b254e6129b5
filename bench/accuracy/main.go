// Command accuracy measures how far wanlab predict's answers are from
// emulation, where the truth is measured (issue 34's accuracy targets,
// docs/benchmarks.md). For each built-in it takes the two newest measured
// runs of it in an archive, A and B, and prints as Markdown, over the
// steps the test-bed did not limit:
//
//   - noise: A set against B as if A were a prediction of B: how far two
//     emulated runs of one scenario differ on this machine, the floor no
//     model can beat;
//   - uncalibrated: wanlab predict S --check B;
//   - calibrated: wanlab predict S --calibrate A --check B, and the
//     reverse (--calibrate B --check A).
//
// Each figure is the median and the worst error of the steps' throughput
// (task rate, aggregate) and mean job wall-clock rows, and the share of
// sweeps whose findings agree (the same bottleneck at every step, the
// same efficient-running boundary). Every prediction runs on a copy of the
// archive, which is left as it was.
//
//	go run ./bench/accuracy -db acc.db
//	go run ./bench/accuracy -db acc.db -measure          # first run each built-in twice (root)
//	go run ./bench/accuracy -db acc.db -measure -quick   # the same with --quick runs
//	go run ./bench/accuracy -db acc.db -only slac-cern,diane-sla
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/wanlab/wanlab/internal/analysis"
	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/predict"
	"github.com/wanlab/wanlab/internal/results"
)

// builtins are the built-ins that run on this machine's test-bed and that
// predict can simulate (issue 34's list).
var builtins = []string{
	"objectivity-lan-4clients", "objectivity-lan-100m", "objectivity-lan-10m",
	"objectivity-lan-1000m", "objectivity-wan-2m", "objectivity-wan-multisite",
	"objectivity-demo", "diane-sla", "alice-streams", "alice-mesh", "slac-cern",
}

// mainFigures are the rows the target is about.
var mainFigures = []string{results.ThroughputMbps, results.AggregateMbps, results.TaskRateHz, results.MeanWallclockS}

var (
	db        = flag.String("db", "", "the archive holding two measured runs of each built-in (required)")
	wanlabBin = flag.String("wanlab", "bin/wanlab", "the wanlab binary (bin/wanlab-sim beside it)")
	only      = flag.String("only", "", "these built-ins only (comma-separated)")
	measure   = flag.Bool("measure", false, "first run each built-in twice on the emulated test-bed (needs root)")
	quick     = flag.Bool("quick", false, "with -measure: --quick runs")
)

func main() {
	flag.Parse()
	if *db == "" {
		fmt.Fprintln(os.Stderr, "accuracy: -db is required")
		os.Exit(2)
	}
	names := builtins
	if *only != "" {
		names = strings.Split(*only, ",")
	}
	if err := run(context.Background(), names, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "accuracy:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, names []string, w io.Writer) error {
	if *measure {
		for _, s := range names {
			for range 2 {
				args := []string{"run", s, "--db", *db}
				if *quick {
					args = append(args, "--quick")
				}
				if out, err := exec.CommandContext(ctx, *wanlabBin, args...).CombinedOutput(); err != nil {
					return fmt.Errorf("wanlab run %s: %w\n%s", s, err, out)
				}
			}
		}
	}
	ar, err := archive.Open(*db)
	if err != nil {
		return err
	}
	runs, err := ar.Runs(ctx)
	ar.Close()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "accuracy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintln(w, "| built-in | runs A, B | noise: A against B | uncalibrated | calibrated A, checked on B | calibrated B, checked on A |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, s := range names {
		a, b, ok := measuredPair(runs, s)
		if !ok {
			fmt.Fprintf(w, "| %s | fewer than two measured runs | | | | |\n", s)
			continue
		}
		cols := [4]score{}
		cols[0], err = noise(ctx, a, b)
		if err != nil {
			cols[0] = score{err: err}
		}
		cols[1] = predicted(ctx, tmp, s, "--check", itoa(b))
		cols[2] = predicted(ctx, tmp, s, "--calibrate", itoa(a), "--check", itoa(b))
		cols[3] = predicted(ctx, tmp, s, "--calibrate", itoa(b), "--check", itoa(a))
		cells := make([]string, len(cols))
		for i, c := range cols {
			cells[i] = c.String()
		}
		fmt.Fprintf(w, "| %s | %d, %d | %s |\n", s, a, b, strings.Join(cells, " | "))
	}
	return nil
}

// measuredPair is the two newest done, measured (not predicted) runs of a
// scenario, older first.
func measuredPair(runs []archive.Run, name string) (int64, int64, bool) {
	var ids []int64
	for _, r := range runs {
		if r.Name == name && r.Status == archive.StatusDone && backend(r) != "simulated" {
			ids = append(ids, r.ID)
		}
	}
	slices.Sort(ids)
	if len(ids) < 2 {
		return 0, 0, false
	}
	return ids[len(ids)-2], ids[len(ids)-1], true
}

func backend(r archive.Run) string {
	var p struct {
		Backend string `json:"backend"`
	}
	json.Unmarshal(r.Params, &p)
	return p.Backend
}

// score is one cell: the median and worst error of the main rows, how many
// there were, and the share of sweeps whose findings agree.
type score struct {
	median, worst float64
	n             int
	agree         *float64
	err           error
}

func (s score) String() string {
	if s.err != nil {
		return "error: " + strings.ReplaceAll(s.err.Error(), "|", "/")
	}
	if s.n == 0 {
		return "no rows"
	}
	agree := "-"
	if s.agree != nil {
		agree = strconv.FormatFloat(*s.agree, 'f', 2, 64)
	}
	return fmt.Sprintf("%.1f%% / %.1f%%, findings %s", 100*s.median, 100*s.worst, agree)
}

func scoreOf(c *predict.Check) score {
	var errs []float64
	for _, r := range c.Steps {
		if r.LimitedByTestbed || r.Error == nil || !slices.Contains(mainFigures, r.Figure) {
			continue
		}
		errs = append(errs, *r.Error)
	}
	s := score{n: len(errs), agree: c.FindingsAgree}
	if len(errs) > 0 {
		slices.Sort(errs)
		s.median, s.worst = medianOfSorted(errs), errs[len(errs)-1]
	}
	return s
}

func medianOfSorted(v []float64) float64 {
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// noise sets run a against run b as if a were b's prediction.
func noise(ctx context.Context, a, b int64) (score, error) {
	ar, err := archive.OpenReadOnly(*db)
	if err != nil {
		return score{}, err
	}
	defer ar.Close()
	_, wa, err := analysis.Load(ctx, ar, a)
	if err != nil {
		return score{}, fmt.Errorf("run %d: %w", a, err)
	}
	_, wb, err := analysis.Load(ctx, ar, b)
	if err != nil {
		return score{}, fmt.Errorf("run %d: %w", b, err)
	}
	return scoreOf(predict.Compare(wa, wb, analysis.DefaultOptions)), nil
}

// predicted runs wanlab predict with args on a fresh copy of the archive
// and scores its check.
func predicted(ctx context.Context, tmp, scenario string, args ...string) score {
	cp := filepath.Join(tmp, "copy.db")
	if err := copyFile(*db, cp); err != nil {
		return score{err: err}
	}
	defer os.Remove(cp)
	cmd := exec.CommandContext(ctx, *wanlabBin, append([]string{"predict", scenario, "--db", cp, "--json"}, args...)...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndex(msg, "\n"); i >= 0 {
			msg = msg[i+1:]
		}
		return score{err: fmt.Errorf("%w: %s", err, msg)}
	}
	var c predict.Check
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		return score{err: fmt.Errorf("reading wanlab predict's JSON: %w", err)}
	}
	return scoreOf(&c)
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if len(b) == 0 {
		return errors.New(from + " is empty")
	}
	return os.WriteFile(to, b, 0o600)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

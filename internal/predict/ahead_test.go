package predict

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/controller"
	"github.com/wanlab/wanlab/internal/sim"
	"github.com/wanlab/wanlab/internal/workload/kinds"
)

// sweepText is platBed with one toy workload swept over five steps.
const sweepText = platBed + `workloads:
  - simtoy: {from: a, to: b, bytes: 1MB, cpu: 0.5}
    sweep: {bytes: [1MB, 2MB, 3MB, 4MB, 5MB]}
`

// predictSweep runs sweepText through the controller with p.
func predictSweep(t *testing.T, ctx context.Context, p *Predictor, progress func(controller.Progress)) (*controller.Result, error) {
	t.Helper()
	ar, err := archive.Open(filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ar.Close() })
	return controller.Run(ctx, controller.Options{Source: "plat.yaml", Text: []byte(sweepText), Archive: ar, Simulate: p, Progress: progress})
}

// stepOf is the index of the step a program simulates, from its actors'
// prefix ("s3/...").
func stepOf(p *sim.Program) int {
	var i int
	fmt.Sscanf(p.Actors[0].Name, "s%d/", &i)
	return i
}

// gate is a fake simulator whose runs wait until let says, counting how
// many run at once.
type gate struct {
	fakeSim
	mu             sync.Mutex
	running, most  int
	started, ended int
	// hold, if set, says which steps wait for their context to end.
	hold    func(step int) bool
	changed chan struct{}
}

func newGate() *gate { return &gate{changed: make(chan struct{}, 100)} }

func (g *gate) run(ctx context.Context, p *sim.Program) (*sim.Output, error) {
	g.mu.Lock()
	g.running++
	g.started++
	g.most = max(g.most, g.running)
	g.mu.Unlock()
	g.changed <- struct{}{}
	defer func() {
		g.mu.Lock()
		g.running--
		g.ended++
		g.mu.Unlock()
	}()
	if g.hold != nil && g.hold(stepOf(p)) {
		<-ctx.Done()
		return nil, fmt.Errorf("sim: simulation stopped: %w", ctx.Err())
	}
	time.Sleep(20 * time.Millisecond) // long enough for the others to start
	return g.fakeSim.run(ctx, p)
}

func (g *gate) counts() (running, most, started, ended int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running, g.most, g.started, g.ended
}

// TestAheadSameAsSequential: steps simulated at once (up to Parallel)
// give the run the sequential run gives: the same steps in the same
// order with the same figures.
func TestAheadSameAsSequential(t *testing.T) {
	defer kinds.Register(toyKind)()
	results := map[int]*controller.Result{}
	for _, parallel := range []int{1, 3} {
		g := newGate()
		res, err := predictSweep(t, context.Background(), &Predictor{Run: g.run, Cores: 4, Parallel: parallel}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, most, started, _ := g.counts(); most != parallel || started != 5 {
			t.Errorf("parallel %d: %d steps ran at once, %d in all; want %d, 5", parallel, most, started, parallel)
		}
		results[parallel] = res
	}
	if len(results[1].Steps) != 5 {
		t.Fatalf("steps %+v", results[1].Steps)
	}
	for i, s := range results[1].Steps {
		o := results[3].Steps[i]
		if s.Label != o.Label || s.Status != o.Status || s.Seconds != o.Seconds || !reflect.DeepEqual(s.Metrics, o.Metrics) {
			t.Errorf("step %d: sequential %+v, at once %+v", i+1, s, o)
		}
	}
}

// TestAheadRealSimulator: on bin/wanlab-sim, the steps simulated at once
// give exactly the figures of the steps simulated one by one.
func TestAheadRealSimulator(t *testing.T) {
	if err := sim.Available(); err != nil {
		t.Skipf("no simulator: %v", err)
	}
	defer kinds.Register(toyKind)()
	var runs [2]*controller.Result
	for i, parallel := range []int{1, 4} {
		res, err := predictSweep(t, context.Background(), &Predictor{Run: sim.Run, Cores: 4, Parallel: parallel}, nil)
		if err != nil {
			t.Fatal(err)
		}
		runs[i] = res
	}
	for i, s := range runs[0].Steps {
		o := runs[1].Steps[i]
		if s.Status != archive.StatusDone || s.Seconds != o.Seconds || !reflect.DeepEqual(s.Metrics, o.Metrics) {
			t.Errorf("step %d: one by one %+v, at once %+v", i+1, s, o)
		}
	}
}

// TestAheadMemory: steps whose memory estimates do not fit together run
// one at a time, whatever Parallel allows, and one larger than the bound
// still runs (alone).
func TestAheadMemory(t *testing.T) {
	defer kinds.Register(toyKind)()
	g := newGate()
	res, err := predictSweep(t, context.Background(), &Predictor{Run: g.run, Cores: 4, Parallel: 4, Memory: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, most, started, _ := g.counts(); most != 1 || started != 5 || len(res.Steps) != 5 {
		t.Errorf("%d steps at once, %d in all, %d stored; want 1, 5, 5", most, started, len(res.Steps))
	}
}

// TestAheadInterrupted: when the run is interrupted, every simulation
// under way is stopped before the run returns, the steps given back
// before stay stored, and the one under way is stored as interrupted, as
// in a run of one step at a time.
func TestAheadInterrupted(t *testing.T) {
	defer kinds.Register(toyKind)()
	g := newGate()
	g.hold = func(step int) bool { return step >= 1 }
	ctx, cancel := context.WithCancelCause(context.Background())
	second := make(chan struct{})
	var once sync.Once
	progress := func(p controller.Progress) {
		if p.Step == 2 {
			once.Do(func() { close(second) }) // the first is stored
		}
	}
	go func() {
		// Interrupt once the second step is asked for and the second
		// and third both run.
		<-second
		for {
			if running, _, _, _ := g.counts(); running == 2 {
				cancel(errors.New("Ctrl-C"))
				return
			}
			<-g.changed
		}
	}()
	res, err := predictSweep(t, ctx, &Predictor{Run: g.run, Cores: 4, Parallel: 2}, progress)
	if !errors.Is(err, controller.ErrInterrupted) {
		t.Fatalf("run: %v, want interrupted", err)
	}
	if running, _, started, ended := g.counts(); running != 0 || started != ended || started > 3 {
		t.Errorf("after the run: %d simulations running, %d started, %d ended; want none running, at most 3 started", running, started, ended)
	}
	if len(res.Steps) != 2 || res.Steps[0].Status != archive.StatusDone || res.Steps[1].Status != archive.StatusInterrupted ||
		!strings.Contains(res.Steps[1].Reason, "Ctrl-C") {
		t.Errorf("steps %+v: want the first done, the second interrupted", res.Steps)
	}
}

// TestBudget: a slot and room for the cost are both needed; nothing held,
// a cost past the limit is let in alone; acquire gives up when its
// context ends.
func TestBudget(t *testing.T) {
	b := newBudget(2, 100)
	ctx := context.Background()
	if err := b.acquire(ctx, 60); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := b.acquire(short, 50); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("60 + 50 of 100: %v, want to wait until the context ends", err)
	}
	if err := b.acquire(ctx, 40); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- b.acquire(ctx, 500) }()
	b.ran()
	b.free(60)
	select {
	case err := <-got:
		t.Fatalf("500 with 40 held: %v, want to wait", err)
	case <-time.After(20 * time.Millisecond):
	}
	b.ran()
	b.free(40)
	if err := <-got; err != nil {
		t.Errorf("500 alone: %v", err)
	}
}

package predict

// Steps simulated at once: the steps of a sweep are independent
// simulations, so the predictor starts them ahead of the controller's asking,
// as many at once as it has CPUs and as their memory estimates fit, and
// gives each back in the order the controller asks for them.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/wanlab/wanlab/internal/controller"
	"github.com/wanlab/wanlab/internal/sim"
)

var _ controller.AheadSimulator = (*Predictor)(nil)

// DefaultMemory is the memory steps simulated at once may take together
// when the machine's available memory cannot be read (Predictor.Memory).
const DefaultMemory = 1 << 30

// Ahead starts simulating steps, in their order, as many at once as
// Parallel allows and as their memory estimates (sim.MemoryEstimate, counted
// before each starts) fit in Memory together: a step's estimate is held
// from its start until Simulate gives it back, and one larger than Memory
// runs alone. Simulate then waits for each. stop ends every simulation
// under way and returns once they have ended; the steps not yet given
// back are dropped.
func (p *Predictor) Ahead(ctx context.Context, steps []controller.SimStep) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	a := &aheadRun{steps: map[int]*aheadStep{}, budget: newBudget(p.parallel(), p.memory())}
	list := make([]*aheadStep, len(steps))
	for i, s := range steps {
		st := &aheadStep{step: s, done: make(chan struct{}), budget: a.budget}
		st.refs.Store(2)
		a.steps[s.Index], list[i] = st, st
	}
	p.ahead = a
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, st := range list {
			if err := ctx.Err(); err != nil {
				st.finish(nil, fmt.Errorf("simulating: %w", err))
				continue
			}
			prep, err := p.prepare(st.step)
			if err != nil {
				st.finish(nil, err)
				continue
			}
			st.cost = sim.MemoryEstimate(prep.prog)
			if err := a.budget.acquire(ctx, st.cost); err != nil {
				st.cost = 0
				st.finish(nil, fmt.Errorf("simulating: %w", err))
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := p.simulate(ctx, prep)
				a.budget.ran()
				st.finish(res, err)
			}()
		}
	}()
	return func() {
		cancel()
		wg.Wait()
		a.dropAll()
	}
}

// parallel is how many steps run at once: Parallel, else the CPUs.
func (p *Predictor) parallel() int {
	if p.Parallel > 0 {
		return p.Parallel
	}
	return runtime.NumCPU()
}

// memory is what the steps run at once may take: Memory, else half of
// the machine's available memory, else DefaultMemory.
func (p *Predictor) memory() int64 {
	if p.Memory > 0 {
		return p.Memory
	}
	if n, ok := availableMemory(); ok {
		return n / 2
	}
	return DefaultMemory
}

// availableMemory is the kernel's estimate of the memory available to
// start programs (MemAvailable in /proc/meminfo), in bytes.
func availableMemory() (int64, bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) >= 2 && string(f[0]) == "MemAvailable:" {
			kb, err := strconv.ParseInt(string(f[1]), 10, 64)
			return kb << 10, err == nil && kb > 0
		}
	}
	return 0, false
}

// aheadRun is the steps handed to Ahead.
type aheadRun struct {
	mu     sync.Mutex
	steps  map[int]*aheadStep
	budget *budget
}

// take is the step s simulated ahead, if it was, once: nil for a step
// Ahead was not given (or given with another seed), which Simulate then
// simulates itself.
func (a *aheadRun) take(s controller.SimStep) *aheadStep {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.steps[s.Index]
	if st == nil || st.step.Seed != s.Seed || st.step.Workload.Name != s.Workload.Name {
		return nil
	}
	delete(a.steps, s.Index)
	return st
}

// dropAll gives back the memory of the steps never given back.
func (a *aheadRun) dropAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, st := range a.steps {
		st.release()
		delete(a.steps, i)
	}
}

// aheadStep is one step simulated ahead.
type aheadStep struct {
	step   controller.SimStep
	done   chan struct{} // closed when res and err are set
	res    *controller.Simulated
	err    error
	budget *budget
	cost   int64 // its memory estimate, held until it ended and was given back
	// refs counts what holds cost: its simulation until it ends, the run
	// until the step is given back or dropped.
	refs atomic.Int32
}

func (st *aheadStep) finish(res *controller.Simulated, err error) {
	st.res, st.err = res, err
	close(st.done)
	st.release()
}

// wait gives the step's result back when it is there.
func (st *aheadStep) wait(ctx context.Context) (*controller.Simulated, error) {
	defer st.release()
	select {
	case <-st.done:
		return st.res, st.err
	case <-ctx.Done():
		return nil, fmt.Errorf("simulating: %w", ctx.Err())
	}
}

// release drops one hold on the step's memory: the last gives it back.
func (st *aheadStep) release() {
	if st.refs.Add(-1) == 0 {
		st.budget.free(st.cost)
	}
}

// budget bounds the steps run at once: slots of them running, and the sum
// of the memory estimates of those started and not yet given back.
type budget struct {
	mu      sync.Mutex
	slots   int
	running int
	limit   int64
	held    int64
	changed chan struct{} // closed and replaced at each release
}

func newBudget(slots int, limit int64) *budget {
	return &budget{slots: max(1, slots), limit: limit, changed: make(chan struct{})}
}

// acquire waits for a slot and for cost to fit beside what is held (or
// for nothing to be held: a step larger than the limit runs alone).
func (b *budget) acquire(ctx context.Context, cost int64) error {
	for {
		b.mu.Lock()
		if b.running < b.slots && (b.held == 0 || b.held+cost <= b.limit) {
			b.running++
			b.held += cost
			b.mu.Unlock()
			return nil
		}
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// ran gives back a slot: a simulation ended.
func (b *budget) ran() { b.update(func() { b.running-- }) }

// free gives back memory held: a step was given back.
func (b *budget) free(cost int64) { b.update(func() { b.held -= cost }) }

func (b *budget) update(f func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f()
	close(b.changed)
	b.changed = make(chan struct{})
}

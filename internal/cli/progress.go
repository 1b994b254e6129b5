package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

// progress shows long work (wanlab run, measure tune and transfer, testbed
// up and check): on a terminal a bar with the step, the elapsed time and
// an estimate of the time left; elsewhere (logs, CI) one plain line per
// step, and nothing that redraws.
type progress struct {
	w     io.Writer
	what  string
	p     *mpb.Progress
	bar   *mpb.Bar
	mu    sync.Mutex
	label string
	steps int
	total int
}

// newProgress starts the progress of what, in total steps (0: not known,
// a spinner with the elapsed time).
func newProgress(w io.Writer, total int, what string) *progress {
	p := &progress{w: w, what: what, total: total}
	f, ok := rawWriter(w).(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return p
	}
	p.p = mpb.New(mpb.WithOutput(f), mpb.WithWidth(24), mpb.WithRefreshRate(200*time.Millisecond))
	var style mpb.BarFillerBuilder = mpb.BarStyle()
	if total == 0 {
		style = mpb.SpinnerStyle()
	}
	p.bar = p.p.New(int64(total), style,
		mpb.PrependDecorators(decor.Name(what+" "), decor.Any(func(s decor.Statistics) string {
			if s.Total <= 0 {
				return ""
			}
			return fmt.Sprintf("%d/%d ", min(s.Current+1, s.Total), s.Total)
		})),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return " " + p.current() + " " }),
			decor.Elapsed(decor.ET_STYLE_GO), decor.Name(" elapsed"),
			decor.OnCondition(decor.Name(", ETA "), total > 0), decor.OnCondition(decor.AverageETA(decor.ET_STYLE_GO), total > 0)),
		mpb.BarRemoveOnComplete(),
	)
	p.bar.EnableTriggerComplete() // done() completes it, not the count
	return p
}

func (p *progress) current() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.label
}

// step starts the next step, described by label.
func (p *progress) step(label string) {
	p.mu.Lock()
	p.label = label
	p.steps++
	n, total := p.steps, p.total
	p.mu.Unlock()
	if p.bar == nil {
		if total > 0 {
			fmt.Fprintf(p.w, "wanlab: %s step %d/%d: %s\n", p.what, n, total, label)
		} else {
			fmt.Fprintf(p.w, "wanlab: %s: %s\n", p.what, label)
		}
		return
	}
	if n > 1 {
		p.bar.Increment()
	}
}

// note changes the current step's description (on a terminal only).
func (p *progress) note(label string) {
	p.mu.Lock()
	p.label = label
	p.mu.Unlock()
}

// setTotal changes the number of steps.
func (p *progress) setTotal(total int) {
	p.mu.Lock()
	p.total = total
	p.mu.Unlock()
	if p.bar != nil {
		p.bar.SetTotal(int64(total), false)
	}
}

// done removes the bar.
func (p *progress) done() {
	if p.bar == nil {
		return
	}
	p.bar.SetTotal(-1, true)
	p.p.Wait()
}

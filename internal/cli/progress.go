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
	w        io.Writer
	terminal *os.File // nil when w is not a terminal
	what     string
	p        *mpb.Progress
	bar      *mpb.Bar // made at the first step
	mu       sync.Mutex
	label    string
	steps    int
	total    int
	quiet    bool // no plain lines: a bar on a terminal, else nothing
}

// newProgress prepares the progress of what, in total steps (0: not known,
// a spinner with the elapsed time).
func newProgress(w io.Writer, total int, what string) *progress {
	p := &progress{w: w, what: what, total: total}
	if f, ok := rawWriter(w).(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.terminal = f
	}
	return p
}

// terminalOnly shows the progress on a terminal only: work short enough
// that a log needs no line per step of it.
func (p *progress) terminalOnly() *progress {
	p.quiet = true
	return p
}

// start draws the bar, at the first step.
func (p *progress) start() {
	p.p = mpb.New(mpb.WithOutput(p.terminal), mpb.WithWidth(24), mpb.WithRefreshRate(200*time.Millisecond))
	var style mpb.BarFillerBuilder = mpb.BarStyle()
	if p.total == 0 {
		style = mpb.SpinnerStyle()
	}
	known := p.total > 0
	// A bar made with no total takes one later (SetTotal), and completes
	// only when done() says so.
	p.bar = p.p.New(0, style,
		mpb.PrependDecorators(decor.Name(p.what+" "), decor.Any(func(s decor.Statistics) string {
			if s.Total <= 0 {
				return ""
			}
			return fmt.Sprintf("%d/%d ", min(s.Current+1, s.Total), s.Total)
		})),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return " " + p.current() + " " }),
			decor.Elapsed(decor.ET_STYLE_GO), decor.Name(" elapsed"),
			decor.OnCondition(decor.Name(", ETA "), known), decor.OnCondition(decor.AverageETA(decor.ET_STYLE_GO), known)),
		mpb.BarRemoveOnComplete(),
	)
	if p.total > 0 {
		p.bar.SetTotal(int64(p.total), false)
	}
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
	if p.terminal == nil {
		switch {
		case p.quiet:
		case total > 0:
			fmt.Fprintf(p.w, "wanlab: %s step %d/%d: %s\n", p.what, n, total, label)
		default:
			fmt.Fprintf(p.w, "wanlab: %s: %s\n", p.what, label)
		}
		return
	}
	if p.bar == nil {
		p.start()
	} else {
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

// upStep follows a test-bed coming up (testbed.Progress).
func (p *progress) upStep(step, steps int, what string) {
	p.setTotal(steps)
	p.step(what)
}

// done removes the bar.
func (p *progress) done() {
	if p.bar == nil {
		return
	}
	p.bar.SetTotal(-1, true)
	p.p.Wait()
	p.bar = nil
}

package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress reports the steps of a long run: a bar on a terminal, one line per
// step otherwise (logs and CI).
type progress struct {
	bar *progressbar.ProgressBar
	w   io.Writer
	n   int
}

func newProgress(w io.Writer, total int, what string) *progress {
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(what),
			progressbar.OptionShowCount(),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionClearOnFinish(),
		)
	}
	return p
}

// step announces the step about to run.
func (p *progress) step(what string) {
	if p.bar == nil {
		fmt.Fprintf(p.w, "wanlab: %s\n", what)
		return
	}
	if p.n > 0 {
		p.bar.Add(1)
	}
	p.n++
	p.bar.Describe(what)
}

func (p *progress) done() {
	if p.bar != nil {
		p.bar.Finish()
	}
}

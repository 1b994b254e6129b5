package twin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/units"
)

// ErrName says a scenario or host name is not one a scenario takes.
var ErrName = errors.New("a name is 1-32 letters, digits, '-' or '_', starting with a letter or digit")

// nameRE is a scenario's names' (scenario.ValidName, which the tests
// compare it with).
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`)

// WriteJSON writes the twin as wanlab twin --json prints it: forward and
// reverse with rate_bps, delay_s, queue_bytes, loss, loss_model and
// cross_bps, and the rest beside them.
func WriteJSON(w io.Writer, t *Twin) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(t); err != nil {
		return fmt.Errorf("writing the twin as JSON: %w", err)
	}
	return nil
}

// WriteScenario writes the twin as a scenario named name: hosts t.A and
// t.B joined by one link whose forward: is A to B and reverse: B to A,
// every value with a comment giving its evidence and its 95% interval,
// and what is unknown listed at the top.
func WriteScenario(w io.Writer, t *Twin, name string) error {
	for _, n := range []string{name, t.A, t.B} {
		if !nameRE.MatchString(n) {
			return fmt.Errorf("writing the twin's scenario: %q: %w", n, ErrName)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# The twin of the path %s <-> %s: an emulated path fitted to measurements of the real one\n", t.A, t.B)
	fmt.Fprintf(&b, "# (wanlab twin). Each value's comment gives its evidence and 95%% interval.\n")
	if !t.Segment.From.IsZero() {
		fmt.Fprintf(&b, "# It describes %s to %s: %s.\n", t.Segment.From.UTC().Format(time.RFC3339), t.Segment.To.UTC().Format(time.RFC3339), t.Segment.Why)
	}
	for _, c := range t.Changes {
		fmt.Fprintf(&b, "# Change: %s %s->%s at %s: %s.\n", c.Kind, c.From, c.To, c.At.UTC().Format(time.RFC3339), c.Evidence)
	}
	for _, n := range t.Notes {
		fmt.Fprintf(&b, "# Note: %s.\n", n)
	}
	for _, d := range []struct {
		name string
		f    *Fit
	}{{"forward", &t.Forward}, {"reverse", &t.Reverse}} {
		for _, u := range d.f.Unknown {
			fmt.Fprintf(&b, "# Unknown (%s %s): %s; the twin uses %s.\n", d.name, u.Name, u.Why, u.Default)
		}
	}
	fmt.Fprintf(&b, "name: %s\nhosts:\n  %s: {}\n  %s: {}\nlinks:\n  - between: [%s, %s]\n", name, t.A, t.B, t.A, t.B)
	writeDirection(&b, "forward", t.A+" -> "+t.B, &t.Forward)
	writeDirection(&b, "reverse", t.B+" -> "+t.A, &t.Reverse)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing the twin's scenario: %w", err)
	}
	return nil
}

// writeDirection writes one direction's settings with their comments.
func writeDirection(b *strings.Builder, key, what string, f *Fit) {
	fmt.Fprintf(b, "    %s: # %s\n", key, what)
	line := func(k, v, comment string) { fmt.Fprintf(b, "      %s: %s # %s\n", k, v, comment) }
	ms := func(s float64) string { return trimNum(s*1e3, 3) + "ms" }
	rate := func(v float64) string { return units.Rate(v).String() }
	line("rate", rate(f.RateBPS), comment(f.Evidence[KeyRate], rate))
	line("delay", ms(f.DelayS), comment(f.Evidence[KeyDelay], ms))
	line("jitter", ms(f.JitterS), comment(f.Evidence[KeyJitter], ms))
	bytes := func(v float64) string { return fmt.Sprintf("%.0fB", v) }
	qc := comment(f.Evidence[KeyQueue], bytes) + fmt.Sprintf("; %.2f BDP", f.QueueBDP)
	line("queue", fmt.Sprintf("%dB", f.QueueBytes), qc)
	pct := units.FormatPercent
	lc := comment(f.Evidence[KeyLoss], pct) + "; model: " + f.Evidence[KeyModel].Evidence
	if g := f.GE; g != nil {
		line("loss", fmt.Sprintf("{model: %s, p: %s, r: %s, bad_loss: %s, good_loss: %s}", GilbertElliott, pct(g.P), pct(g.R), pct(g.BadLoss), pct(g.GoodLoss)), lc)
	} else {
		line("loss", pct(f.Loss), lc)
	}
	line("mtu", strconv.Itoa(f.MTU), comment(f.Evidence[KeyMTU], func(v float64) string { return fmt.Sprintf("%.0f", v) }))
	if c := f.Cross; c != nil {
		cross := fmt.Sprintf("{rate: %s, pattern: %s}", rate(c.RateBPS), c.Pattern)
		if c.Pattern == OnOff {
			cross = fmt.Sprintf("{rate: %s, pattern: %s, on: %s, off: %s}", rate(c.RateBPS), c.Pattern, ms(c.On.Seconds()), ms(c.Off.Seconds()))
		}
		line("cross", cross, comment(f.Evidence[KeyCross], rate)+"; mean "+rate(f.CrossBPS))
	} else {
		fmt.Fprintf(b, "      # cross: none # %s\n", comment(f.Evidence[KeyCross], rate))
	}
}

// comment is a value's evidence and interval, as a YAML comment says it.
func comment(e Estimate, format func(float64) string) string {
	switch {
	case e.Default:
		return "DEFAULT: " + e.Evidence
	case e.AtLeast:
		return fmt.Sprintf("%s; at least %s (%d samples)", e.Evidence, format(e.Value), e.Samples)
	}
	return fmt.Sprintf("%s; 95%% %s-%s (%d samples)", e.Evidence, format(e.Low), format(e.High), e.Samples)
}

// trimNum prints v with at most prec decimals, without trailing zeros.
func trimNum(v float64, prec int) string {
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		return "0"
	}
	return s
}

package dashboard

import (
	"bytes"
	"net/url"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/monitor/core"
)

// An alert's ref holds slashes (rule/src/dst/test/time): the Acknowledge
// button posts to the route with the ref as one escaped segment, for a
// path's alert, an owd_step and an incident alike.
func TestAckButtonEscapesTheRef(t *testing.T) {
	for _, ref := range []string{"rtt_step/cern/cnaf/latency/1", "owd_step/cern/cnaf/latency/back/2", "incident/cnaf.in/3"} {
		var b bytes.Buffer
		if err := pages.ExecuteTemplate(&b, "ack", core.Alert{Ref: ref}); err != nil {
			t.Fatal(err)
		}
		want := `data-url="/api/v1/alerts/` + url.PathEscape(ref) + `/ack"`
		if !strings.Contains(b.String(), want) || strings.Count(want, "/") != 5 {
			t.Errorf("ack of %s: %s, want %s", ref, b.String(), want)
		}
	}
}

// The clocks' skew reads in parts per million, with its sign.
func TestFormatSkew(t *testing.T) {
	for v, want := range map[float64]string{50.04: "+50.0 ppm", -3.26: "-3.3 ppm"} {
		if got := Format(string(core.ClockSkew), v); got != want {
			t.Errorf("Format(%s, %g) = %q, want %q", core.ClockSkew, v, got, want)
		}
	}
}

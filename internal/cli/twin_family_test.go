package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/monitor/core"
)

// TestTwinFamily: of a history measured over both address families, twin
// --db fits the one with the most probe summaries, or -4's or -6's; -4
// and -6 go with --db only, one at a time.
func TestTwinFamily(t *testing.T) {
	db := filepath.Join(t.TempDir(), "serve.db")
	ar, err := archive.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Minute)
	var pts []archive.Point
	for _, f := range []struct {
		family string
		n      int
		rtt    float64
	}{{core.IPv4, 40, 0.020}, {core.IPv6, 20, 0.040}} {
		for i := range f.n {
			for _, w := range [][2]string{{"a", "b"}, {"b", "a"}} {
				at := t0.Add(time.Duration(i) * time.Minute)
				pts = append(pts, archive.Point{T: at, Src: w[0], Dst: w[1], Test: "latency", Metric: string(core.RTTMin), Value: f.rtt, Family: f.family},
					archive.Point{T: at, Src: w[0], Dst: w[1], Test: "latency", Metric: string(core.LossRatio), Value: 0, Family: f.family})
			}
		}
	}
	if err := ar.AddPoints(pts); err != nil {
		t.Fatal(err)
	}
	ar.Close()
	out := filepath.Join(t.TempDir(), "twin.yaml")
	for _, tc := range []struct {
		name  string
		flags []string
		rtt   float64
	}{{"most summaries", nil, 0.020}, {"-4", []string{"-4"}, 0.020}, {"-6", []string{"-6"}, 0.040}} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"twin", "--db", db, "--from", "a", "--to", "b", "-o", out, "--json"}, tc.flags...)
			if code := run(args, &stdout, &stderr); code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			var got struct {
				Forward, Reverse struct {
					DelayS float64 `json:"delay_s"`
				}
			}
			if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
				t.Fatalf("--json: %v\n%s", err, stdout.String())
			}
			if rtt := got.Forward.DelayS + got.Reverse.DelayS; rtt < 0.95*tc.rtt || rtt > 1.05*tc.rtt {
				t.Errorf("a round trip of %g s, want %g s", rtt, tc.rtt)
			}
		})
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--db", db, "-4", "-6"}, "give -4 or -6, not both"},
		{[]string{"--testbed", "x", "-6"}, "-4 and -6 choose the address family of a history's measurements"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"twin", "--from", "a", "--to", "b", "-o", out}, tc.args...)
		if code := run(args, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2, %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

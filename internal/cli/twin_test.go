package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
)

func TestTwinFlags(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "twin.yaml")
	notArchive := filepath.Join(dir, "not.db")
	os.WriteFile(notArchive, []byte("not a database, only words"), 0o644)
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--from", "a", "--to", "b", "-o", out}, "give one of --testbed NAME"},
		{[]string{"--testbed", "x", "--db", "y.db", "--from", "a", "--to", "b", "-o", out}, "give one of --testbed NAME"},
		{[]string{"--testbed", "x", "--inventory", "i.yaml", "--from", "a", "--to", "b", "-o", out}, "give one of --testbed NAME"},
		{[]string{"--testbed", "x", "--to", "b", "-o", out}, "give --from A and --to B"},
		{[]string{"--testbed", "x", "--from", "a", "--to", "a", "-o", out}, `--from and --to are the same host "a"`},
		{[]string{"--testbed", "x", "--from", "a b", "--to", "b", "-o", out}, `--from "a b": the twin is a scenario`},
		{[]string{"--testbed", "x", "--from", "a", "--to", "b", "-o", out, "--name", "-x"}, `--name "-x"`},
		{[]string{"--testbed", "x", "--from", "a", "--to", "b"}, "give -o FILE"},
		{[]string{"--testbed", "x", "--from", "a", "--to", "b", "-o", filepath.Join(dir, "no", "twin.yaml")}, "no directory"},
		{[]string{"--testbed", "x", "--from", "a", "--to", "b", "-o", dir}, "is a directory: give a file"},
		{[]string{"--testbed", "x", "--from", "a", "--to", "b", "-o", out, "--budget", "0"}, "--budget 0s"},
		{[]string{"--testbed", "x", "--from", "a", "--to", "b", "-o", out, "--budget", "2h"}, "--budget 2h0m0s"},
		{[]string{"--testbed", "x", "--from", "a", "--to", "b", "-o", out, "--budget", "soon"}, `invalid argument "soon"`},
		{[]string{"--testbed", "twin", "--from", "a", "--to", "b", "-o", out, "--check"}, "--name twin is the test-bed being measured"},
		{[]string{"--testbed", "x", "--from", "a", "--to", "b", "-o", out, "--from-time", "24h"}, "they go with --db"},
		{[]string{"--db", "y.db", "--from", "a", "--to", "b", "-o", out, "--from-time", "yesterday"}, `--from-time: "yesterday": give an RFC 3339 time`},
		{[]string{"--db", "y.db", "--from", "a", "--to", "b", "-o", out, "--from-time", "2026-11-02", "--to-time", "2026-11-01"}, "is not before --to-time"},
		{[]string{"--db", filepath.Join(dir, "no-such.db"), "--from", "a", "--to", "b", "-o", out}, "no archive at"},
		{[]string{"--db", notArchive, "--from", "a", "--to", "b", "-o", out}, "--db: "},
		{[]string{"--testbed", "x", "--from", "a", "--to", "b", "-o", out, "extra"}, "unknown command"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"twin"}, tc.args...), &stdout, &stderr)
			if code != exitUsage || !strings.Contains(stderr.String(), tc.msg) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr.String(), exitUsage, tc.msg)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s written on a usage error", out)
			}
		})
	}
}

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"", time.Time{}},
		{"2026-11-20T10:30:00Z", time.Date(2026, 11, 20, 10, 30, 0, 0, time.UTC)},
		{"2026-11-20", time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)},
		{"24h", now.Add(-24 * time.Hour)},
	} {
		if got, err := parseWhen(tc.in, now); err != nil || !got.Equal(tc.want) {
			t.Errorf("parseWhen(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	if _, err := parseWhen("-5m", now); err == nil {
		t.Error("parseWhen(-5m): no error; a duration ago is positive")
	}
}

// historyArchive writes what wanlab serve keeps of the path a<->b in a
// new archive: probe summaries each way every minute for an hour, a
// throughput test, and a capacity estimate of measure capacity --db.
func historyArchive(t *testing.T) (string, time.Time) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "serve.db")
	ar, err := archive.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Minute)
	var pts []archive.Point
	add := func(at time.Time, src, dst, test string, m core.Name, v float64) {
		pts = append(pts, archive.Point{T: at, Src: src, Dst: dst, Test: test, Metric: string(m), Value: v})
	}
	for i := range 60 {
		at := t0.Add(time.Duration(i) * time.Minute)
		// 0.5% lost a->b, none b->a.
		for _, w := range [][2]string{{"a", "b"}, {"b", "a"}} {
			fwd, back := 0.005, 0.0
			if w[0] == "b" {
				fwd, back = back, fwd
			}
			add(at, w[0], w[1], "latency", core.RTTMin, 0.030)
			add(at, w[0], w[1], "latency", core.Jitter, 0.0002)
			add(at, w[0], w[1], "latency", core.LossRatio, 0.005)
			add(at, w[0], w[1], "latency", core.LossForward, fwd)
			add(at, w[0], w[1], "latency", core.LossBack, back)
		}
		// Other paths are no part of the twin.
		add(at, "a", "c", "latency", core.RTTMin, 0.3)
	}
	add(t0.Add(30*time.Minute), "a", "b", "bulk", core.ThroughputRate, 17e6)
	if err := ar.AddPoints(pts); err != nil {
		t.Fatal(err)
	}
	ar.Close()
	rec, err := archive.Record(path, archive.NewRun{Kind: "measure capacity", Name: "a->b", Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	s := archive.Sample{T: t0.Add(10 * time.Minute), Metric: results.BandwidthCapacity, Subject: results.PathSubject("a", "b"), Value: 20e6, Unit: "bit/s"}
	if err := rec.Finish([]archive.Sample{s}, nil, nil); err != nil {
		t.Fatal(err)
	}
	return path, t0
}

func TestTwinFromHistory(t *testing.T) {
	db, t0 := historyArchive(t)
	out := filepath.Join(t.TempDir(), "taipei.yaml")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"twin", "--db", db, "--from", "a", "--to", "b", "-o", out, "--name", "taipei", "--json"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var got struct {
		Forward, Reverse struct {
			RateBPS    float64 `json:"rate_bps"`
			DelayS     float64 `json:"delay_s"`
			QueueBytes int64   `json:"queue_bytes"`
			Loss       float64 `json:"loss"`
			LossModel  string  `json:"loss_model"`
			CrossBPS   float64 `json:"cross_bps"`
			Unknown    []struct {
				Name string `json:"name"`
			} `json:"unknown"`
		}
		Campaign any `json:"campaign"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("--json: %v\n%s", err, stdout.String())
	}
	f := got.Forward
	if f.RateBPS != 20e6 || f.DelayS < 0.0149 || f.DelayS > 0.0155 || f.Loss < 0.0049 || f.Loss > 0.0051 || f.LossModel != "bernoulli" || f.QueueBytes <= 0 || got.Campaign != nil {
		t.Errorf("forward %+v, campaign %v; want 20 Mbit/s, 15 ms, 0.5%% Bernoulli, a default queue, no campaign", f, got.Campaign)
	}
	unknown := func(us []struct {
		Name string `json:"name"`
	}) string {
		var names []string
		for _, u := range us {
			names = append(names, u.Name)
		}
		return strings.Join(names, " ")
	}
	for _, want := range []string{"queue_bytes", "loss_model", "cross_bps"} {
		if !strings.Contains(unknown(f.Unknown), want) {
			t.Errorf("forward unknowns %q lack %s", unknown(f.Unknown), want)
		}
	}
	// No capacity estimate of b->a: its rate rests on nothing.
	if !strings.Contains(unknown(got.Reverse.Unknown), "rate_bps") {
		t.Errorf("reverse unknowns %q lack the rate", unknown(got.Reverse.Unknown))
	}
	text, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	file, err := scenario.Parse(out, text, false)
	if err != nil {
		t.Fatalf("the twin does not load: %v\n%s", err, text)
	}
	if file.Testbed.Name != "taipei" || len(file.Testbed.Links) != 1 || file.Testbed.Links[0].A != "a" || file.Testbed.Links[0].B != "b" {
		t.Errorf("scenario %s, links %+v; want taipei joining a and b", file.Testbed.Name, file.Testbed.Links)
	}
	for _, want := range []string{"# Unknown (forward queue_bytes): no loaded test of this direction", "# Unknown (forward loss_model): the archive keeps no per-probe series"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("the twin lacks %q:\n%s", want, text)
		}
	}

	// The human view names the unknowns too; a span with no results is refused.
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"twin", "--db", db, "--from", "a", "--to", "b", "-o", out}, &stdout, &stderr); code != exitOK ||
		!strings.Contains(stdout.String(), "unknown (forward queue_bytes)") || !strings.Contains(stdout.String(), "a -> b  20Mbit") {
		t.Errorf("exit %d, stdout:\n%s\nstderr: %s", code, stdout.String(), stderr.String())
	}
	t.Logf("wanlab twin --db:\n%s", stdout.String())
	// A budget below the least campaign's is refused with the plan, before
	// anything is written.
	os.Remove(out)
	stderr.Reset()
	if code := run([]string{"twin", "--db", db, "--from", "a", "--to", "b", "-o", out, "--check", "--budget", "10s"}, &stdout, &stderr); code != exitUsage ||
		!strings.Contains(stderr.String(), "MEASUREMENT") || !strings.Contains(stderr.String(), "the campaign does not fit the budget: give a longer --budget") {
		t.Errorf("--budget 10s: exit %d, stderr %q; want exit 2, the plan and the budget's refusal", code, stderr.String())
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s written though the check's budget was refused", out)
	}
	for _, args := range [][]string{
		{"--from-time", t0.Add(-48 * time.Hour).Format(time.RFC3339), "--to-time", t0.Add(-24 * time.Hour).Format(time.RFC3339)},
		{"--from", "a", "--to", "z"},
	} {
		stderr.Reset()
		all := append([]string{"twin", "--db", db, "--from", "a", "--to", "b", "-o", out}, args...)
		if code := run(all, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "holds no results of the path") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2, no results", args, code, stderr.String())
		}
	}
}

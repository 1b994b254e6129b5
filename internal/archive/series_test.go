package archive

import (
	"fmt"
	"path/filepath"

	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/audit"
	"github.com/wanlab/wanlab/internal/testsupport"
)

func TestMonitoring(t *testing.T) { backends(t, testMonitoring) }

func testMonitoring(t *testing.T, path string) {
	a := openArchive(t, path)
	ctx := context.Background()
	h0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	var pts []Point
	for i := range 60 {
		pts = append(pts, Point{T: h0.Add(time.Duration(i) * time.Minute), Src: "a", Dst: "b", Test: "lat", Metric: "rtt_median_seconds", Value: float64(i+1) / 1000})
	}
	pts = append(pts, Point{T: h0.Add(90 * time.Minute), Src: "a", Dst: "b", Test: "lat", Metric: "rtt_median_seconds", Value: 0.5})
	if err := a.AddPoints(pts); err != nil {
		t.Fatal(err)
	}
	n, err := a.AggregateHours(ctx, h0, h0.Add(2*time.Hour+time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("AggregateHours = %d, %v; want 2 aggregates (two hours)", n, err)
	}
	if last, err := a.LastAggregated(ctx); err != nil || !last.Equal(h0.Add(time.Hour)) {
		t.Errorf("LastAggregated = %v, %v; want %v", last, err, h0.Add(time.Hour))
	}
	// Raw points are pruned from before 11:00: the first hour comes back as
	// its hourly median.
	if _, err := a.Prune(ctx, h0.Add(time.Hour), h0.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, err := a.Points(ctx, "a", "b", "rtt_median_seconds", h0, h0.Add(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[0].Hourly || got[0].Value != 0.0305 || got[0].Min != 0.001 || got[0].Max != 0.06 || got[1].Hourly || got[1].Value != 0.5 {
		t.Errorf("Points after pruning = %+v; want the first hour's median 0.0305 (min 0.001, max 0.06), then the raw 0.5", got)
	}
	started := h0.Add(5 * time.Minute)
	res, _ := json.Marshal(map[string]float64{"sender_cpu": 12})
	if err := a.AddTest(TestRecord{Test: "bulk", Kind: "throughput", Src: "a", Dst: "b", Started: started, Ended: started.Add(5 * time.Second), Status: "ok", Result: res}); err != nil {
		t.Fatal(err)
	}
	if err := a.AddTest(TestRecord{Test: "bulk", Kind: "throughput", Src: "a", Dst: "b", Started: started.Add(time.Hour), Ended: started.Add(time.Hour), Status: "failed", Reason: "agent down"}); err != nil {
		t.Fatal(err)
	}
	tests, err := a.Tests(ctx, "a", "b", "", 10)
	if err != nil || len(tests) != 2 || tests[0].Status != "failed" || string(tests[1].Result) != string(res) {
		t.Errorf("Tests = %+v, %v; want the failed test first, then the one with its result", tests, err)
	}
	if tests, _ := a.Tests(ctx, "a", "b", "other", 10); len(tests) != 0 {
		t.Errorf("Tests of another test name = %+v, want none", tests)
	}
	last, err := a.LastStarts(ctx)
	if err != nil || !last[[4]string{"bulk", "a", "b", ""}].Equal(started.Add(time.Hour)) {
		t.Errorf("LastStarts = %v, %v", last, err)
	}
	id, err := a.OpenAlert(Alert{Ref: "r1", Rule: "rtt_step", Src: "a", Dst: "b", Test: "lat", Started: h0, Value: 0.5, Baseline: 0.03, Threshold: 0.035, Message: "RTT rose"})
	if err != nil {
		t.Fatal(err)
	}
	if act, err := a.Alerts(ctx, h0.Add(-time.Hour), true); err != nil || len(act) != 1 || act[0].ID != id || act[0].Message != "RTT rose" {
		t.Errorf("active alerts = %+v, %v", act, err)
	}
	if err := a.AckAlert("r1", "alice", "fibre cut; ticket 'x'", h0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if act, _ := a.Alerts(ctx, h0.Add(-time.Hour), true); len(act) != 1 || act[0].AckedBy != "alice" || act[0].AckNote != "fibre cut; ticket 'x'" || !act[0].AckedAt.Equal(h0.Add(time.Minute)) {
		t.Errorf("the acknowledged alert = %+v", act)
	}
	for i, e := range []audit.Entry{{Time: h0, Identity: "alice", Remote: "192.0.2.1", Method: "ack", Target: "r1", Decision: "ok"},
		{Time: h0.Add(time.Second), Remote: "192.0.2.9", Method: "run", Target: "bulk a->b", Decision: "refused", Reason: "no identity"}} {
		if err := a.AddAudit(e); err != nil {
			t.Fatalf("audit entry %d: %v", i, err)
		}
	}
	if audit, err := a.Audit(ctx, h0, 10); err != nil || len(audit) != 2 || audit[0].Method != "run" || audit[0].Decision != "refused" || audit[0].Reason != "no identity" ||
		audit[1].Identity != "alice" || audit[1].Outcome() != "ok" {
		t.Errorf("audit = %+v, %v; want both entries, newest first", audit, err)
	}
	if err := a.AddChange(Change{T: h0, What: "site taipei: delay=250ms", Dirs: []string{"site taipei up", "site taipei down"}}); err != nil {
		t.Fatal(err)
	}
	if ch, err := a.Changes(ctx, h0, h0.Add(time.Hour)); err != nil || len(ch) != 1 || len(ch[0].Dirs) != 2 || !ch[0].T.Equal(h0) {
		t.Errorf("changes = %+v, %v", ch, err)
	}
	if last, err := a.LastChange(ctx); err != nil || !last.Equal(h0) {
		t.Errorf("LastChange = %v, %v; want %v", last, err, h0)
	}
	if err := a.CloseAlert("r1", h0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if act, _ := a.Alerts(ctx, h0.Add(-time.Hour), true); len(act) != 0 {
		t.Errorf("an ended alert is still active: %+v", act)
	}
	if all, _ := a.Alerts(ctx, h0, false); len(all) != 1 || !all[0].Ended.Equal(h0.Add(time.Hour)) {
		t.Errorf("alerts = %+v, want the ended one", all)
	}
	// Leases: one owner at a time until it expires.
	if err := a.Claim(ctx, "share 0", "p1", time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := a.Claim(ctx, "share 0", "p2", time.Now().Add(time.Minute)); !errors.Is(err, ErrLeaseHeld) {
		t.Errorf("a held lease was claimed by another: %v", err)
	}
	if err := a.Claim(ctx, "share 0", "p1", time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := a.Claim(ctx, "share 0", "p2", time.Now().Add(time.Minute)); err != nil {
		t.Errorf("an expired lease could not be taken over: %v", err)
	}
	if err := a.Release(ctx, "share 0", "p2"); err != nil {
		t.Fatal(err)
	}
	if err := a.Claim(ctx, "share 0", "p1", time.Now().Add(time.Minute)); err != nil {
		t.Errorf("a released lease could not be taken: %v", err)
	}
	// Members: each heartbeat counts the live ones.
	if n, err := a.Heartbeat(ctx, "p1", time.Now().Add(time.Minute)); err != nil || n != 1 {
		t.Errorf("Heartbeat = %d, %v; want 1", n, err)
	}
	if n, _ := a.Heartbeat(ctx, "p2", time.Now().Add(time.Minute)); n != 2 {
		t.Errorf("two members: %d", n)
	}
	if n, _ := a.Heartbeat(ctx, "p2", time.Now().Add(time.Minute)); n != 2 {
		t.Errorf("a second heartbeat counted twice: %d", n)
	}
	if err := a.Leave(ctx, "p1"); err != nil {
		t.Fatal(err)
	}
	if n, _ := a.Heartbeat(ctx, "p2", time.Now().Add(time.Minute)); n != 1 {
		t.Errorf("after p1 left: %d members", n)
	}
	if err := a.Claim(ctx, "share 0", "p2", time.Now().Add(time.Minute)); err != nil {
		t.Errorf("p1 left but its lease stays: %v", err)
	}
}

// BenchmarkMonitorQuery30Days: a 30-day range of one pair's per-minute
// results, in an archive holding 30 days of per-minute results of 100
// pairs (4.32 million rows). The target is under 100 ms on PostgreSQL.
func BenchmarkMonitorQuery30Days(b *testing.B) {
	b.Run("postgres", func(b *testing.B) { benchMonitorQuery(b, testsupport.PostgresSchema(b)) })
	b.Run("sqlite", func(b *testing.B) { benchMonitorQuery(b, filepath.Join(b.TempDir(), "bench.db")) })
}

func benchMonitorQuery(b *testing.B, path string) {
	a, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	const pairs, minutes = 100, 30 * 24 * 60
	end := time.Now().Truncate(time.Minute)
	start := end.Add(-minutes * time.Minute)
	batch := make([]Point, 0, 100_000)
	for m := range minutes {
		at := start.Add(time.Duration(m) * time.Minute)
		for p := range pairs {
			batch = append(batch, Point{T: at, Src: fmt.Sprintf("h%d", p%10), Dst: fmt.Sprintf("h%d", 10+p/10), Test: "latency", Metric: "rtt_median_seconds", Value: 0.01 + float64(m%7)*1e-4})
			if len(batch) == cap(batch) {
				if err := a.AddPoints(batch); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
	}
	if err := a.AddPoints(batch); err != nil {
		b.Fatal(err)
	}
	if a.postgres {
		a.pool.Exec(`VACUUM ANALYZE mon_points`) // as autovacuum does to an insert-only table
	}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		pts, err := a.Points(ctx, "h3", "h15", "rtt_median_seconds", start, end)
		if err != nil || len(pts) != minutes {
			b.Fatalf("%d points, %v; want %d", len(pts), err, minutes)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/query")
}

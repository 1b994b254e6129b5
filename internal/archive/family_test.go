package archive

import (
	"context"
	"testing"
	"time"
)

// A path tested over both address families keeps two series: its points,
// hourly rollups, tests and alerts each say their family, and a query of
// one family sees that family's alone.
func TestFamilies(t *testing.T) { backends(t, testFamilies) }

func testFamilies(t *testing.T, path string) {
	a := openArchive(t, path)
	ctx := context.Background()
	h0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	var pts []Point
	for i := range 4 {
		at := h0.Add(time.Duration(i) * 10 * time.Minute)
		for _, f := range []struct {
			family string
			v      float64
		}{{"ipv4", 0.010}, {"ipv6", 0.030}, {"", 0.020}} {
			pts = append(pts, Point{T: at, Src: "a", Dst: "b", Test: "lat", Metric: "rtt_min_seconds", Value: f.v, Family: f.family})
		}
	}
	if err := a.AddPoints(pts); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		family string
		want   float64
	}{{"ipv4", 0.010}, {"ipv6", 0.030}, {"", 0.020}} {
		got, err := a.FamilyPoints(ctx, "a", "b", tc.family, "rtt_min_seconds", h0, h0.Add(time.Hour))
		if err != nil || len(got) != 4 {
			t.Fatalf("FamilyPoints(%q) = %d points, %v; want 4", tc.family, len(got), err)
		}
		for _, p := range got {
			if p.Family != tc.family || p.Value != tc.want {
				t.Errorf("FamilyPoints(%q) gave %+v", tc.family, p)
			}
		}
	}
	if all, err := a.Points(ctx, "a", "b", "rtt_min_seconds", h0, h0.Add(time.Hour)); err != nil || len(all) != 12 {
		t.Errorf("Points of every family = %d, %v; want 12", len(all), err)
	}
	// The hourly rollup keeps the families apart too.
	if n, err := a.AggregateHours(ctx, h0, h0.Add(time.Hour)); err != nil || n != 3 {
		t.Fatalf("AggregateHours = %d, %v; want 3 (one per family)", n, err)
	}
	if _, err := a.Prune(ctx, h0.Add(time.Hour), h0.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, err := a.FamilyPoints(ctx, "a", "b", "ipv6", "rtt_min_seconds", h0, h0.Add(2*time.Hour))
	if err != nil || len(got) != 1 || !got[0].Hourly || got[0].Value != 0.030 || got[0].Family != "ipv6" {
		t.Errorf("the ipv6 hour after pruning = %+v, %v; want its median 0.030", got, err)
	}
	for _, f := range []string{"ipv4", "ipv6"} {
		if err := a.AddTest(TestRecord{Test: "bulk", Kind: "throughput", Src: "a", Dst: "b", Started: h0, Ended: h0.Add(time.Second), Status: "ok", Family: f}); err != nil {
			t.Fatal(err)
		}
	}
	last, err := a.LastStarts(ctx)
	if err != nil || len(last) != 2 || !last[[4]string{"bulk", "a", "b", "ipv6"}].Equal(h0) {
		t.Errorf("LastStarts = %v, %v; want one start per family", last, err)
	}
	if tests, _ := a.Tests(ctx, "a", "b", "bulk", 10); len(tests) != 2 || tests[0].Family == "" || tests[0].Family == tests[1].Family {
		t.Errorf("Tests = %+v; want one per family, each saying it", tests)
	}
	if _, err := a.OpenAlert(Alert{Ref: "r6", Rule: "loss_above", Src: "a", Dst: "b", Test: "lat", Started: h0, Message: "loss", Family: "ipv6", Scope: "ipv6-only"}); err != nil {
		t.Fatal(err)
	}
	if act, err := a.Alerts(ctx, h0, true); err != nil || len(act) != 1 || act[0].Family != "ipv6" || act[0].Scope != "ipv6-only" {
		t.Errorf("the alert read back = %+v, %v", act, err)
	}
}

// An archive of schema 4, written before families, upgrades with its
// points, hourly rollups, tests and alerts intact, each of family "".
func TestUpgradeToFamilies(t *testing.T) { backends(t, testUpgradeToFamilies) }

func testUpgradeToFamilies(t *testing.T, path string) {
	a, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	// Back to schema 4, as a wanlab before families left it.
	for _, stmt := range []string{
		`DROP TABLE mon_points`, `DROP TABLE mon_hourly`, `DROP TABLE mon_tests`, `DROP TABLE mon_alerts`,
		`DROP TABLE mon_leases`, `DROP TABLE mon_members`, `DROP TABLE mon_audit`, `DROP TABLE mon_changes`,
		`DELETE FROM schema_version WHERE version >= 3`,
	} {
		if _, err := a.pool.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	for v := 3; v <= 4; v++ {
		for _, stmt := range a.ddl(migrations[v-1]) {
			if _, err := a.pool.Exec(stmt); err != nil {
				t.Fatalf("migration %d: %v", v, err)
			}
		}
		if _, err := a.pool.Exec(a.q(`INSERT INTO schema_version VALUES (?, ?)`), v, now()); err != nil {
			t.Fatal(err)
		}
	}
	h0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	for _, row := range []struct {
		stmt string
		at   time.Time
	}{
		{`INSERT INTO mon_points (t, src, dst, test, metric, value) VALUES (?, 'a', 'b', 'lat', 'rtt_min_seconds', 0.01)`, h0},
		{`INSERT INTO mon_hourly (hour, src, dst, test, metric, min, mean, median, p95, max, count) VALUES (?, 'a', 'b', 'lat', 'rtt_min_seconds', 0.01, 0.01, 0.01, 0.01, 0.01, 1)`, h0.Add(-time.Hour)},
		{`INSERT INTO mon_tests (test, kind, src, dst, started, ended, status) VALUES ('bulk', 'throughput', 'a', 'b', ?, 0, 'ok')`, h0},
		{`INSERT INTO mon_alerts (rule, src, dst, test, started, value, baseline, threshold, message, ref) VALUES ('rtt_step', 'a', 'b', 'lat', ?, 0, 0, 0, 'old', 'r1')`, h0},
	} {
		if _, err := a.pool.Exec(a.q(row.stmt), unixSeconds(row.at)); err != nil {
			t.Fatalf("%s: %v", row.stmt, err)
		}
	}
	a.Close()
	a = openArchive(t, path)
	ctx := context.Background()
	var have int
	if err := a.pool.QueryRow(`SELECT MAX(version) FROM schema_version`).Scan(&have); err != nil || have != len(migrations) {
		t.Fatalf("schema v%d, %v; want v%d", have, err, len(migrations))
	}
	got, err := a.FamilyPoints(ctx, "a", "b", "", "rtt_min_seconds", h0.Add(-time.Hour), h0.Add(time.Minute))
	if err != nil || len(got) != 2 || !got[0].Hourly || got[1].Hourly || got[1].Family != "" {
		t.Errorf("the old hour and point as family '' = %+v, %v", got, err)
	}
	if last, err := a.LastStarts(ctx); err != nil || !last[[4]string{"bulk", "a", "b", ""}].Equal(h0) {
		t.Errorf("LastStarts = %v, %v", last, err)
	}
	if act, err := a.Alerts(ctx, h0, true); err != nil || len(act) != 1 || act[0].Family != "" || act[0].Scope != "" {
		t.Errorf("the old alert = %+v, %v", act, err)
	}
	// The rollup's key now holds the family: two families of one hour.
	if err := a.AddPoints([]Point{{T: h0, Src: "a", Dst: "b", Test: "lat", Metric: "rtt_min_seconds", Value: 0.03, Family: "ipv6"}}); err != nil {
		t.Fatal(err)
	}
	if n, err := a.AggregateHours(ctx, h0, h0.Add(time.Hour)); err != nil || n != 2 {
		t.Errorf("AggregateHours after the upgrade = %d, %v; want 2", n, err)
	}
}

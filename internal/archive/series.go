package archive

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wanlab/wanlab/internal/audit"
)

// SeriesStore keeps the monitoring service's series and state: points and
// their hourly aggregates, the tests it ran, alerts, the audit, link
// changes and the leases of processes sharing the archive (the mon_
// tables).
type SeriesStore struct{ *db }

// Point is one summarised result of a path, in base units.
type Point struct {
	T        time.Time `json:"t"`
	Src      string    `json:"src"`
	Dst      string    `json:"dst"`
	Test     string    `json:"test"`
	Metric   string    `json:"metric"`
	Value    float64   `json:"value"`
	Hourly   bool      `json:"hourly,omitempty"` // an hour's median, from the aggregates
	Min, Max float64   `json:"-"`
	// Family is the address family of a test run once per family, "ipv4"
	// or "ipv6"; "" for a test's one run over its hosts' preference.
	Family string `json:"family,omitempty"`
}

var pointColumns = []string{"t", "src", "dst", "test", "metric", "value", "family"}

// AddPoints stores points in one transaction.
func (s *SeriesStore) AddPoints(points []Point) error {
	rows := make([][]any, len(points))
	for i, p := range points {
		rows[i] = []any{unixSeconds(p.T), p.Src, p.Dst, p.Test, p.Metric, p.Value, p.Family}
	}
	if err := s.insertRows("mon_points", pointColumns, rows); err != nil {
		return fmt.Errorf("storing %d monitoring results in %s: %w", len(points), s.path, err)
	}
	return nil
}

// MaxPoints bounds what one query of a path returns: a year of per-minute
// results.
const MaxPoints = 525_600

// Points returns a path's metric from one time to another, oldest first,
// of every address family (each point says its own): raw points where
// they are kept, hourly medians before that; at most MaxPoints.
func (s *SeriesStore) Points(ctx context.Context, src, dst, metric string, from, to time.Time) ([]Point, error) {
	return readPoints(ctx, s, src, dst, metric, from, to, nil)
}

// FamilyPoints are Points of one family only: "ipv4" or "ipv6" for a
// test run once per family, "" for a test's one run.
func (s *SeriesStore) FamilyPoints(ctx context.Context, src, dst, family, metric string, from, to time.Time) ([]Point, error) {
	return readPoints(ctx, s, src, dst, metric, from, to, &family)
}

// readPoints are Points of family, or of every family if it is nil.
func readPoints(ctx context.Context, s *SeriesStore, src, dst, metric string, from, to time.Time, family *string) ([]Point, error) {
	// One condition for either: CAST(? AS INTEGER) = 1 matches every family.
	every, fam := 1, ""
	if family != nil {
		every, fam = 0, *family
	}
	const ofFamily = ` AND (CAST(? AS INTEGER) = 1 OR family = ?)`
	var oldestRaw sql.NullFloat64
	if err := s.pool.QueryRowContext(ctx, s.q(`SELECT MIN(t) FROM mon_points WHERE src = ? AND dst = ? AND metric = ?`+ofFamily), src, dst, metric, every, fam).Scan(&oldestRaw); err != nil {
		return nil, fmt.Errorf("reading results of %s->%s: %w", src, dst, err)
	}
	var out []Point
	if !oldestRaw.Valid || fromUnix(oldestRaw.Float64).After(from) {
		end := to
		if oldestRaw.Valid {
			end = fromUnix(oldestRaw.Float64).Truncate(time.Hour)
		}
		hourly, err := queryAll(ctx, s.db, `SELECT hour, test, family, median, min, max FROM mon_hourly
			WHERE src = ? AND dst = ? AND metric = ? AND hour >= ? AND hour < ?`+ofFamily+` ORDER BY hour`, func(sc scanner) (Point, error) {
			var t float64
			p := Point{Src: src, Dst: dst, Metric: metric, Hourly: true}
			err := sc.Scan(&t, &p.Test, &p.Family, &p.Value, &p.Min, &p.Max)
			p.T = fromUnix(t)
			return p, err
		}, src, dst, metric, unixSeconds(from.Truncate(time.Hour)), unixSeconds(end), every, fam)
		if err != nil {
			return nil, fmt.Errorf("reading hourly results of %s->%s: %w", src, dst, err)
		}
		out = hourly
	}
	err := s.queryEach(ctx, `SELECT t, test, family, value FROM mon_points
		WHERE src = ? AND dst = ? AND metric = ? AND t >= ? AND t <= ?`+ofFamily+` ORDER BY t LIMIT ?`, func(sc scanner) error {
		var t float64
		p := Point{Src: src, Dst: dst, Metric: metric}
		if err := sc.Scan(&t, &p.Test, &p.Family, &p.Value); err != nil {
			return err
		}
		p.T, p.Min, p.Max = fromUnix(t), p.Value, p.Value
		out = append(out, p)
		return nil
	}, src, dst, metric, unixSeconds(from), unixSeconds(to), every, fam, MaxPoints-len(out))
	if err != nil {
		return nil, fmt.Errorf("reading results of %s->%s: %w", src, dst, err)
	}
	return out, nil
}

// RecentPoints returns every point since a time, oldest first: what a
// restarted service learns its baselines from.
func (s *SeriesStore) RecentPoints(ctx context.Context, since time.Time, fn func(Point) error) error {
	var fnErr error
	err := s.queryEach(ctx, `SELECT t, src, dst, test, metric, value, family FROM mon_points WHERE t >= ? ORDER BY t`, func(sc scanner) error {
		p, err := scanPoint(sc)
		if err != nil {
			return err
		}
		fnErr = fn(p)
		return fnErr
	}, unixSeconds(since))
	if err != nil && err != fnErr {
		return fmt.Errorf("reading recent monitoring results: %w", err)
	}
	return err
}

// scanPoint reads a row of the columns t, src, dst, test, metric, value, family.
func scanPoint(sc scanner) (Point, error) {
	var t float64
	var p Point
	err := sc.Scan(&t, &p.Src, &p.Dst, &p.Test, &p.Metric, &p.Value, &p.Family)
	p.T = fromUnix(t)
	return p, err
}

// Aggregate is one hour of a path's metric.
type Aggregate struct {
	Hour                           time.Time
	Src, Dst, Test, Family, Metric string
	Min, Mean, Median, P95, Max    float64
	Count                          int
}

// AggregateHours summarises every whole hour of raw points from since
// (inclusive) to before, replacing aggregates already stored for those
// hours, and returns how many aggregates it wrote.
func (s *SeriesStore) AggregateHours(ctx context.Context, since, before time.Time) (int, error) {
	since, before = since.Truncate(time.Hour), before.Truncate(time.Hour)
	if !since.Before(before) {
		return 0, nil
	}
	type key struct {
		hour                           int64
		src, dst, test, family, metric string
	}
	groups := map[key][]float64{}
	err := s.queryEach(ctx, `SELECT t, src, dst, test, metric, value, family FROM mon_points WHERE t >= ? AND t < ?`, func(sc scanner) error {
		p, err := scanPoint(sc)
		if err != nil {
			return err
		}
		k := key{p.T.Truncate(time.Hour).Unix(), p.Src, p.Dst, p.Test, p.Family, p.Metric}
		groups[k] = append(groups[k], p.Value)
		return nil
	}, unixSeconds(since), unixSeconds(before))
	if err != nil {
		return 0, fmt.Errorf("reading results to aggregate: %w", err)
	}
	tx, err := s.pool.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM mon_hourly WHERE hour >= ? AND hour < ?`), unixSeconds(since), unixSeconds(before)); err != nil {
		return 0, err
	}
	for k, vs := range groups {
		g := Summarize(vs)
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO mon_hourly (hour, src, dst, test, family, metric, min, mean, median, p95, max, count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			float64(k.hour), k.src, k.dst, k.test, k.family, k.metric, g.Min, g.Mean, g.Median, g.P95, g.Max, g.Count); err != nil {
			return 0, fmt.Errorf("storing hourly aggregates: %w", err)
		}
	}
	return len(groups), tx.Commit()
}

// Summarize is the min, mean, median, 95th percentile, max and count of values.
func Summarize(vs []float64) Aggregate {
	if len(vs) == 0 {
		return Aggregate{}
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	var sum float64
	for _, v := range s {
		sum += v
	}
	at := func(q float64) float64 {
		pos := q * float64(len(s)-1)
		lo := int(pos)
		if lo+1 >= len(s) {
			return s[len(s)-1]
		}
		return s[lo] + (pos-float64(lo))*(s[lo+1]-s[lo])
	}
	return Aggregate{Min: s[0], Mean: sum / float64(len(s)), Median: at(0.5), P95: at(0.95), Max: s[len(s)-1], Count: len(s)}
}

// LastAggregated is the start of the latest hour with aggregates, zero if none.
func (s *SeriesStore) LastAggregated(ctx context.Context) (time.Time, error) {
	var h sql.NullFloat64
	if err := s.pool.QueryRowContext(ctx, `SELECT MAX(hour) FROM mon_hourly`).Scan(&h); err != nil || !h.Valid {
		return time.Time{}, err
	}
	return fromUnix(h.Float64), nil
}

// Prune deletes raw points, tests and ended alerts older than rawBefore and
// hourly aggregates older than hourlyBefore, and returns how many rows went.
func (s *SeriesStore) Prune(ctx context.Context, rawBefore, hourlyBefore time.Time) (int64, error) {
	var n int64
	for _, d := range []struct {
		stmt string
		t    time.Time
	}{
		{`DELETE FROM mon_points WHERE t < ?`, rawBefore},
		{`DELETE FROM mon_tests WHERE started < ?`, rawBefore},
		{`DELETE FROM mon_alerts WHERE ended IS NOT NULL AND ended < ?`, hourlyBefore},
		{`DELETE FROM mon_hourly WHERE hour < ?`, hourlyBefore},
	} {
		res, err := s.pool.ExecContext(ctx, s.q(d.stmt), unixSeconds(d.t))
		if err != nil {
			return n, fmt.Errorf("pruning the archive: %w", err)
		}
		k, _ := res.RowsAffected()
		n += k
	}
	return n, nil
}

// PruneAudit deletes the audit entries older than before (the service's
// retention: audit) and returns how many went.
func (s *SeriesStore) PruneAudit(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.pool.ExecContext(ctx, s.q(`DELETE FROM mon_audit WHERE t < ?`), unixSeconds(before))
	if err != nil {
		return 0, fmt.Errorf("pruning the audit: %w", err)
	}
	return res.RowsAffected()
}

// TestRecord is one monitoring test that ran.
type TestRecord struct {
	ID      int64           `json:"id"`
	Test    string          `json:"test"`
	Kind    string          `json:"kind"`
	Src     string          `json:"src"`
	Dst     string          `json:"dst"`
	Started time.Time       `json:"started"`
	Ended   time.Time       `json:"ended"`
	Status  string          `json:"status"`
	Reason  string          `json:"reason,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	// Family is the address family of a test run once per family (as a
	// Point's).
	Family string `json:"family,omitempty"`
}

// AddTest stores a test that ran.
func (s *SeriesStore) AddTest(r TestRecord) error {
	result := string(r.Result)
	if result == "" {
		result = "{}"
	}
	_, err := s.pool.Exec(s.q(`INSERT INTO mon_tests (test, kind, src, dst, started, ended, status, reason, result, family) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		r.Test, r.Kind, r.Src, r.Dst, unixSeconds(r.Started), unixSeconds(r.Ended), r.Status, r.Reason, result, r.Family)
	if err != nil {
		return fmt.Errorf("storing a %s test %s->%s in %s: %w", r.Test, r.Src, r.Dst, s.path, err)
	}
	return nil
}

// Tests returns a path's latest tests, newest first ("" matches any test).
func (s *SeriesStore) Tests(ctx context.Context, src, dst, test string, limit int) ([]TestRecord, error) {
	out, err := queryAll(ctx, s.db, `SELECT id, test, kind, src, dst, started, ended, status, reason, result, family FROM mon_tests
		WHERE src = ? AND dst = ? AND (CAST(? AS TEXT) = '' OR test = ?) ORDER BY started DESC LIMIT ?`, func(sc scanner) (TestRecord, error) {
		var r TestRecord
		var started, ended float64
		var result string
		err := sc.Scan(&r.ID, &r.Test, &r.Kind, &r.Src, &r.Dst, &started, &ended, &r.Status, &r.Reason, &result, &r.Family)
		r.Started, r.Ended, r.Result = fromUnix(started), fromUnix(ended), json.RawMessage(result)
		return r, err
	}, src, dst, test, test, limit)
	if err != nil {
		return nil, fmt.Errorf("reading tests of %s->%s: %w", src, dst, err)
	}
	return out, nil
}

// LastStarts is when each (test, src, dst, family) last started a test:
// where a restarted schedule resumes.
func (s *SeriesStore) LastStarts(ctx context.Context) (map[[4]string]time.Time, error) {
	out := map[[4]string]time.Time{}
	err := s.queryEach(ctx, `SELECT test, src, dst, family, MAX(started) FROM mon_tests GROUP BY test, src, dst, family`, func(sc scanner) error {
		var k [4]string
		var t float64
		if err := sc.Scan(&k[0], &k[1], &k[2], &k[3], &t); err != nil {
			return err
		}
		out[k] = fromUnix(t)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the last tests: %w", err)
	}
	return out, nil
}

// Alert is one alert: active while Ended is zero.
type Alert struct {
	ID        int64           `json:"id"`
	Ref       string          `json:"ref"`
	Rule      string          `json:"rule"`
	Src       string          `json:"src"`
	Dst       string          `json:"dst"`
	Test      string          `json:"test"`
	Started   time.Time       `json:"started"`
	Ended     time.Time       `json:"ended,omitzero"`
	Value     float64         `json:"value"`
	Baseline  float64         `json:"baseline"`
	Threshold float64         `json:"threshold"`
	Message   string          `json:"message"`
	Evidence  json.RawMessage `json:"evidence,omitempty"`
	// AckedBy is who acknowledged it ("" nobody), when, and what they said.
	AckedBy string    `json:"acked_by,omitempty"`
	AckedAt time.Time `json:"acked_at,omitzero"`
	AckNote string    `json:"ack_note,omitempty"`
	// Family is the address family of the path's test run once per family
	// ("" for a test's one run); Scope says, of such a run's alert, whether
	// the other family's run of the path alerts too: ipv4-only, ipv6-only
	// or path ("" unknown or not judged).
	Family string `json:"family,omitempty"`
	Scope  string `json:"scope,omitempty"`
}

// OpenAlert stores a new active alert and returns its id.
func (s *SeriesStore) OpenAlert(al Alert) (int64, error) {
	ev := string(al.Evidence)
	if ev == "" {
		ev = "{}"
	}
	var id int64
	err := s.pool.QueryRow(s.q(`INSERT INTO mon_alerts (ref, rule, src, dst, test, started, value, baseline, threshold, message, evidence, family, scope)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`),
		al.Ref, al.Rule, al.Src, al.Dst, al.Test, unixSeconds(al.Started), al.Value, al.Baseline, al.Threshold, al.Message, ev, al.Family, al.Scope).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("storing alert %s on %s->%s: %w", al.Rule, al.Src, al.Dst, err)
	}
	return id, nil
}

// CloseAlert ends the active alert of a ref.
func (s *SeriesStore) CloseAlert(ref string, ended time.Time) error {
	if _, err := s.pool.Exec(s.q(`UPDATE mon_alerts SET ended = ? WHERE ref = ? AND ended IS NULL`), unixSeconds(ended), ref); err != nil {
		return fmt.Errorf("ending alert %s: %w", ref, err)
	}
	return nil
}

// AckAlert records that who acknowledged the alert of a ref (active or
// not) at a time, with a note.
func (s *SeriesStore) AckAlert(ref, who, note string, at time.Time) error {
	if _, err := s.pool.Exec(s.q(`UPDATE mon_alerts SET acked_by = ?, acked_at = ?, ack_note = ? WHERE ref = ?`), who, unixSeconds(at), note, ref); err != nil {
		return fmt.Errorf("acknowledging alert %s: %w", ref, err)
	}
	return nil
}

// AddAudit stores an audit entry of wanlab serve: a state change asked of
// it, done or refused (its Method is the action, its Outcome the outcome).
func (s *SeriesStore) AddAudit(e audit.Entry) error {
	if _, err := s.pool.Exec(s.q(`INSERT INTO mon_audit (t, identity, remote, action, target, outcome) VALUES (?, ?, ?, ?, ?, ?)`),
		unixSeconds(e.Time), e.Identity, e.Remote, e.Method, e.Target, e.Outcome()); err != nil {
		return fmt.Errorf("storing an audit entry in %s: %w", s.path, err)
	}
	return nil
}

// Audit lists the audit entries since a time, newest first, at most limit.
func (s *SeriesStore) Audit(ctx context.Context, since time.Time, limit int) ([]audit.Entry, error) {
	out, err := queryAll(ctx, s.db, `SELECT t, identity, remote, action, target, outcome FROM mon_audit WHERE t >= ? ORDER BY t DESC LIMIT ?`, func(sc scanner) (audit.Entry, error) {
		var e audit.Entry
		var t float64
		var outcome string
		err := sc.Scan(&t, &e.Identity, &e.Remote, &e.Method, &e.Target, &outcome)
		e.Time = fromUnix(t)
		e.SetOutcome(outcome)
		return e, err
	}, unixSeconds(since), limit)
	if err != nil {
		return nil, fmt.Errorf("reading the audit: %w", err)
	}
	return out, nil
}

// Change is a change of a test-bed's links while the service watched it.
type Change struct {
	T    time.Time `json:"t"`
	What string    `json:"what"`
	Dirs []string  `json:"directions"`
}

// AddChange stores a link change.
func (s *SeriesStore) AddChange(c Change) error {
	dirs, _ := json.Marshal(c.Dirs)
	if _, err := s.pool.Exec(s.q(`INSERT INTO mon_changes (t, what, dirs) VALUES (?, ?, ?)`), unixSeconds(c.T), c.What, string(dirs)); err != nil {
		return fmt.Errorf("storing a link change in %s: %w", s.path, err)
	}
	return nil
}

// LastChange is the time of the newest link change stored (zero if none).
func (s *SeriesStore) LastChange(ctx context.Context) (time.Time, error) {
	var t sql.NullFloat64
	if err := s.pool.QueryRowContext(ctx, `SELECT MAX(t) FROM mon_changes`).Scan(&t); err != nil || !t.Valid {
		return time.Time{}, err
	}
	return fromUnix(t.Float64), nil
}

// Changes lists the link changes from one time to another, oldest first
// (at most MaxPoints).
func (s *SeriesStore) Changes(ctx context.Context, from, to time.Time) ([]Change, error) {
	out, err := queryAll(ctx, s.db, `SELECT t, what, dirs FROM mon_changes WHERE t >= ? AND t <= ? ORDER BY t LIMIT ?`, func(sc scanner) (Change, error) {
		var c Change
		var t float64
		var dirs string
		if err := sc.Scan(&t, &c.What, &dirs); err != nil {
			return c, err
		}
		c.T = fromUnix(t)
		if err := json.Unmarshal([]byte(dirs), &c.Dirs); err != nil {
			return c, fmt.Errorf("link change at %v: directions %q: %w", c.T, dirs, err)
		}
		return c, nil
	}, unixSeconds(from), unixSeconds(to), MaxPoints)
	if err != nil {
		return nil, fmt.Errorf("reading link changes: %w", err)
	}
	return out, nil
}

// Alerts lists alerts that were active at some time since a moment, newest
// first; activeOnly lists those still active.
func (s *SeriesStore) Alerts(ctx context.Context, since time.Time, activeOnly bool) ([]Alert, error) {
	q := `SELECT id, ref, rule, src, dst, test, started, COALESCE(ended, 0), value, baseline, threshold, message, evidence,
		acked_by, COALESCE(acked_at, 0), ack_note, family, scope FROM mon_alerts
		WHERE (ended IS NULL OR ended >= ?)`
	if activeOnly {
		q += ` AND ended IS NULL`
	}
	out, err := queryAll(ctx, s.db, q+` ORDER BY started DESC`, func(sc scanner) (Alert, error) {
		var al Alert
		var started, ended, acked float64
		var ev string
		if err := sc.Scan(&al.ID, &al.Ref, &al.Rule, &al.Src, &al.Dst, &al.Test, &started, &ended, &al.Value, &al.Baseline, &al.Threshold, &al.Message, &ev,
			&al.AckedBy, &acked, &al.AckNote, &al.Family, &al.Scope); err != nil {
			return al, err
		}
		al.Started, al.Evidence = fromUnix(started), json.RawMessage(ev)
		if acked > 0 {
			al.AckedAt = fromUnix(acked)
		}
		if ended > 0 {
			al.Ended = fromUnix(ended)
		}
		return al, nil
	}, unixSeconds(since))
	if err != nil {
		return nil, fmt.Errorf("reading alerts: %w", err)
	}
	return out, nil
}

// leaseTx begins a transaction on the leases and members, one process at
// a time (SQLite: its write lock; PostgreSQL: an advisory lock).
func (s *SeriesStore) leaseTx(ctx context.Context) (*sql.Tx, error) {
	tx, err := s.pool.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	if s.postgres {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7400113)`); err != nil {
			tx.Rollback()
			return nil, err
		}
	}
	return tx, nil
}

// ErrLeaseHeld means another process holds a lease.
var ErrLeaseHeld = errors.New("lease held by another process")

// Claim takes or renews the lease called name for owner until expires: it
// succeeds when the lease is free, expired, or owner's already.
func (s *SeriesStore) Claim(ctx context.Context, name, owner string, expires time.Time) error {
	tx, err := s.leaseTx(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var holder string
	var until float64
	err = tx.QueryRowContext(ctx, s.q(`SELECT owner, expires FROM mon_leases WHERE name = ?`), name).Scan(&holder, &until)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		_, err = tx.ExecContext(ctx, s.q(`INSERT INTO mon_leases (name, owner, expires) VALUES (?, ?, ?)`), name, owner, unixSeconds(expires))
	case err != nil:
	case holder != owner && fromUnix(until).After(time.Now()):
		return fmt.Errorf("%s: %w (%s, until %s)", name, ErrLeaseHeld, holder, fromUnix(until).Format(time.RFC3339))
	default:
		_, err = tx.ExecContext(ctx, s.q(`UPDATE mon_leases SET owner = ?, expires = ? WHERE name = ?`), owner, unixSeconds(expires), name)
	}
	if err != nil {
		return fmt.Errorf("claiming %s: %w", name, err)
	}
	return tx.Commit()
}

// Release gives up a lease of owner's; with name "" all its leases.
func (s *SeriesStore) Release(ctx context.Context, name, owner string) error {
	_, err := s.pool.ExecContext(ctx, s.q(`DELETE FROM mon_leases WHERE owner = ? AND (CAST(? AS TEXT) = '' OR name = ?)`), owner, name, name)
	return err
}

// Heartbeat says owner is alive until expires and returns how many
// processes are alive now, owner included.
func (s *SeriesStore) Heartbeat(ctx context.Context, owner string, expires time.Time) (int, error) {
	tx, err := s.leaseTx(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM mon_members WHERE owner = ? OR expires < ?`), owner, unixSeconds(time.Now())); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO mon_members (owner, expires) VALUES (?, ?)`), owner, unixSeconds(expires)); err != nil {
		return 0, err
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM mon_members`).Scan(&n); err != nil {
		return 0, err
	}
	return n, tx.Commit()
}

// Leave removes owner from the members and gives up its leases.
func (s *SeriesStore) Leave(ctx context.Context, owner string) error {
	if _, err := s.pool.ExecContext(ctx, s.q(`DELETE FROM mon_members WHERE owner = ?`), owner); err != nil {
		return err
	}
	return s.Release(ctx, "", owner)
}

// Redact is dsn without its password, to print.
func Redact(dsn string) string { return redact(dsn) }

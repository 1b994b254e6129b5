// Package archive stores measurements: runs, their steps, time-series
// samples, jobs and events, in a SQLite file (WAL) with versioned migrations.
// Metric names follow the GGF NMWG hierarchy (bandwidth.achievable,
// delay.roundtrip, loss.roundtrip, ...) plus wanlab's own; docs/archive.md
// describes the schema for SQL, pandas or Grafana users.
package archive

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver, registered as "sqlite"
)

// Archive is an open measurement archive.
type Archive struct {
	db   *sql.DB
	path string
}

// migrations are applied in order; a database records the last one applied.
// Never edit one that has shipped: add another.
var migrations = []string{
	`CREATE TABLE runs (
		id             INTEGER PRIMARY KEY,
		kind           TEXT NOT NULL,       -- e.g. "measure throughput", "run"
		name           TEXT NOT NULL,       -- what was measured, e.g. "a->b"
		testbed        TEXT NOT NULL DEFAULT '',
		started_at     TEXT NOT NULL,       -- RFC 3339, UTC
		ended_at       TEXT,
		status         TEXT NOT NULL,       -- running, done, partial, interrupted, failed
		reason         TEXT NOT NULL DEFAULT '',
		params         TEXT NOT NULL DEFAULT '{}', -- JSON
		result         TEXT NOT NULL DEFAULT '{}', -- JSON summary
		scenario       TEXT NOT NULL DEFAULT '',   -- scenario text, if any
		wanlab_version TEXT NOT NULL DEFAULT '',
		machine        TEXT NOT NULL DEFAULT '{}'  -- JSON facts about the machine
	);
	CREATE TABLE steps (
		id         INTEGER PRIMARY KEY,
		run_id     INTEGER NOT NULL REFERENCES runs(id),
		idx        INTEGER NOT NULL,
		params     TEXT NOT NULL DEFAULT '{}',
		started_at TEXT NOT NULL,
		ended_at   TEXT,
		status     TEXT NOT NULL
	);
	CREATE TABLE samples (
		run_id  INTEGER NOT NULL REFERENCES runs(id),
		step_id INTEGER,
		t       REAL NOT NULL,   -- Unix seconds
		metric  TEXT NOT NULL,   -- NMWG name, e.g. bandwidth.achievable
		subject TEXT NOT NULL,   -- what it is about, e.g. "a->b stream 1"
		value   REAL NOT NULL,
		unit    TEXT NOT NULL
	);
	CREATE INDEX samples_run_metric ON samples(run_id, metric, t);
	CREATE TABLE events (
		run_id  INTEGER NOT NULL REFERENCES runs(id),
		step_id INTEGER,
		t       REAL NOT NULL,
		level   TEXT NOT NULL,   -- info, warning, error
		message TEXT NOT NULL
	);`,
}

// Open opens (creating if needed) the archive at path and brings its schema
// up to date.
func Open(path string) (*Archive, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)")
	if err != nil {
		return nil, fmt.Errorf("opening archive %s: %w", path, err)
	}
	a := &Archive{db: db, path: path}
	if err := a.migrate(); err != nil {
		db.Close()
		return nil, fmt.Errorf("archive %s: %w", path, err)
	}
	return a, nil
}

// Close closes the archive.
func (a *Archive) Close() error { return a.db.Close() }

func (a *Archive) migrate() error {
	if _, err := a.db.Exec(`CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, applied_at TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("creating the schema table (is it a SQLite file?): %w", err)
	}
	var have int
	if err := a.db.QueryRow(`SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&have); err != nil {
		return err
	}
	if have > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this wanlab knows (%d): upgrade wanlab", have, len(migrations))
	}
	for v := have; v < len(migrations); v++ {
		tx, err := a.db.Begin()
		if err != nil {
			return err
		}
		if _, err := tx.Exec(migrations[v]); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %d: %w", v+1, err)
		}
		if _, err := tx.Exec(`INSERT INTO schema_version VALUES (?, ?)`, v+1, now()); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migration %d: %w", v+1, err)
		}
	}
	return nil
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// Run is one stored run.
type Run struct {
	ID            int64           `json:"id"`
	Kind          string          `json:"kind"`
	Name          string          `json:"name"`
	Testbed       string          `json:"testbed,omitempty"`
	StartedAt     string          `json:"started_at"`
	EndedAt       string          `json:"ended_at,omitempty"`
	Status        string          `json:"status"`
	Reason        string          `json:"reason,omitempty"`
	Params        json.RawMessage `json:"params"`
	Result        json.RawMessage `json:"result"`
	WanlabVersion string          `json:"wanlab_version"`
	Samples       int64           `json:"samples"`
}

// Run statuses.
const (
	StatusRunning     = "running"
	StatusDone        = "done"
	StatusPartial     = "partial"
	StatusInterrupted = "interrupted"
	StatusFailed      = "failed"
)

// StartRun records a run as started and returns its id. It is stored at
// once, so a run cut short is still in the archive, marked running until
// EndRun says otherwise.
func (a *Archive) StartRun(kind, name, testbed, version string, params any) (int64, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return 0, err
	}
	r, err := a.db.Exec(`INSERT INTO runs (kind, name, testbed, started_at, status, params, wanlab_version) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		kind, name, testbed, now(), StatusRunning, string(p), version)
	if err != nil {
		return 0, fmt.Errorf("recording the run in %s: %w", a.path, err)
	}
	return r.LastInsertId()
}

// EndRun records how a run ended, with its summary.
func (a *Archive) EndRun(id int64, status, reason string, result any) error {
	res, err := json.Marshal(result)
	if err != nil {
		return err
	}
	_, err = a.db.Exec(`UPDATE runs SET ended_at = ?, status = ?, reason = ?, result = ? WHERE id = ?`, now(), status, reason, string(res), id)
	if err != nil {
		return fmt.Errorf("recording the end of run %d: %w", id, err)
	}
	return nil
}

// Sample is one value of one metric about one subject at one time.
type Sample struct {
	T       time.Time
	Metric  string
	Subject string
	Value   float64
	Unit    string
}

// AddSamples stores samples of a run in one transaction.
func (a *Archive) AddSamples(run int64, samples []Sample) error {
	if len(samples) == 0 {
		return nil
	}
	tx, err := a.db.Begin()
	if err != nil {
		return err
	}
	stmt, err := tx.Prepare(`INSERT INTO samples (run_id, t, metric, subject, value, unit) VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		tx.Rollback()
		return err
	}
	defer stmt.Close()
	for _, s := range samples {
		if _, err := stmt.Exec(run, float64(s.T.UnixNano())/1e9, s.Metric, s.Subject, s.Value, s.Unit); err != nil {
			tx.Rollback()
			return fmt.Errorf("storing samples of run %d: %w", run, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("storing samples of run %d: %w", run, err)
	}
	return nil
}

// AddEvent records something that happened during a run.
func (a *Archive) AddEvent(run int64, level, message string) error {
	_, err := a.db.Exec(`INSERT INTO events (run_id, t, level, message) VALUES (?, ?, ?, ?)`, run, float64(time.Now().UnixNano())/1e9, level, message)
	return err
}

// ErrNoRun means no run has that id.
var ErrNoRun = errors.New("no such run")

// Runs lists the runs, newest first.
func (a *Archive) Runs(ctx context.Context) ([]Run, error) {
	rows, err := a.db.QueryContext(ctx, `SELECT r.id, r.kind, r.name, r.testbed, r.started_at, COALESCE(r.ended_at, ''), r.status, r.reason,
		r.params, r.result, r.wanlab_version, (SELECT COUNT(*) FROM samples s WHERE s.run_id = r.id)
		FROM runs r ORDER BY r.id DESC`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		var r Run
		var params, result string
		if err := rows.Scan(&r.ID, &r.Kind, &r.Name, &r.Testbed, &r.StartedAt, &r.EndedAt, &r.Status, &r.Reason, &params, &result, &r.WanlabVersion, &r.Samples); err != nil {
			return nil, err
		}
		r.Params, r.Result = json.RawMessage(params), json.RawMessage(result)
		out = append(out, r)
	}
	return out, rows.Err()
}

// Samples calls fn for every sample of a run, in time order.
func (a *Archive) Samples(ctx context.Context, run int64, fn func(Sample) error) error {
	var n int
	if err := a.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM runs WHERE id = ?`, run).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("run %d: %w", run, ErrNoRun)
	}
	rows, err := a.db.QueryContext(ctx, `SELECT t, metric, subject, value, unit FROM samples WHERE run_id = ? ORDER BY t, metric, subject`, run)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var s Sample
		var t float64
		if err := rows.Scan(&t, &s.Metric, &s.Subject, &s.Value, &s.Unit); err != nil {
			return err
		}
		s.T = time.Unix(0, int64(t*1e9)).UTC()
		if err := fn(s); err != nil {
			return err
		}
	}
	return rows.Err()
}

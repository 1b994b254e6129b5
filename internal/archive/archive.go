// Package archive stores measurements: runs, their steps, time-series
// samples, jobs and events, in a SQLite file (WAL) or a PostgreSQL database
// with the same schema, brought up to date by versioned migrations.
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
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib" // the PostgreSQL driver, registered as "pgx"
	"golang.org/x/sys/unix"
	_ "modernc.org/sqlite" // the pure-Go SQLite driver, registered as "sqlite"

	"github.com/wanlab/wanlab/internal/workload/job"
)

// Archive is an open measurement archive.
type Archive struct {
	db       *sql.DB
	path     string // as given, without a password
	postgres bool
	readOnly bool
}

// migrations are applied in order; a database records the last one applied.
// Never edit one that has shipped: add another. Statements are split at
// semicolons, so comments must not contain one.
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
	`ALTER TABLE runs ADD COLUMN controller TEXT NOT NULL DEFAULT ''; -- "BOOT-ID PID" of the process recording it
	ALTER TABLE steps ADD COLUMN workload TEXT NOT NULL DEFAULT '';
	ALTER TABLE steps ADD COLUMN label TEXT NOT NULL DEFAULT '';    -- e.g. "jobs=10"
	ALTER TABLE steps ADD COLUMN reason TEXT NOT NULL DEFAULT '';
	ALTER TABLE steps ADD COLUMN result TEXT NOT NULL DEFAULT '{}'; -- JSON summary
	CREATE TABLE jobs (
		run_id  INTEGER NOT NULL REFERENCES runs(id),
		step_id INTEGER NOT NULL REFERENCES steps(id),
		job     INTEGER NOT NULL,
		host    TEXT NOT NULL,
		subject TEXT NOT NULL DEFAULT '',
		started REAL NOT NULL,  -- Unix seconds
		ended   REAL NOT NULL,
		bytes   INTEGER NOT NULL,
		status  TEXT NOT NULL,  -- ok, timeout, failed, corrupt, cancelled
		reason  TEXT NOT NULL DEFAULT '',
		tcp_rtt_ms      REAL NOT NULL DEFAULT 0,    -- TCP_INFO at the job's end, 0 if not measured
		tcp_retransmits INTEGER NOT NULL DEFAULT 0
	);
	CREATE INDEX jobs_step ON jobs(step_id);`,
	// The monitoring service's: summarised results of each path as points
	// in base units, their hourly aggregates, the tests run, alerts, and
	// leases that split a mesh between service processes.
	`CREATE TABLE mon_points (
		t      REAL NOT NULL,   -- Unix seconds, when the result was summarised
		src    TEXT NOT NULL,
		dst    TEXT NOT NULL,   -- for SNMP: the interface
		test   TEXT NOT NULL,   -- the configuration's test name, or "snmp"
		metric TEXT NOT NULL,   -- e.g. rtt_median_seconds, throughput_bits_per_second
		value  REAL NOT NULL
	);
	CREATE INDEX mon_points_path ON mon_points(src, dst, metric, t, test, value); -- covering: a range of a path is read from the index alone
	CREATE INDEX mon_points_t ON mon_points(t);
	CREATE TABLE mon_hourly (
		hour   REAL NOT NULL,   -- Unix seconds of the hour's start
		src    TEXT NOT NULL,
		dst    TEXT NOT NULL,
		test   TEXT NOT NULL,
		metric TEXT NOT NULL,
		min    REAL NOT NULL,
		mean   REAL NOT NULL,
		median REAL NOT NULL,
		p95    REAL NOT NULL,
		max    REAL NOT NULL,
		count  INTEGER NOT NULL,
		PRIMARY KEY (src, dst, metric, test, hour)
	);
	CREATE TABLE mon_tests (
		id      INTEGER PRIMARY KEY,
		test    TEXT NOT NULL,
		kind    TEXT NOT NULL,  -- probe, throughput, transfer
		src     TEXT NOT NULL,
		dst     TEXT NOT NULL,
		started REAL NOT NULL,
		ended   REAL NOT NULL,
		status  TEXT NOT NULL,  -- ok, failed
		reason  TEXT NOT NULL DEFAULT '',
		result  TEXT NOT NULL DEFAULT '{}'  -- JSON, with both ends' CPU
	);
	CREATE INDEX mon_tests_path ON mon_tests(src, dst, test, started);
	CREATE TABLE mon_alerts (
		id        INTEGER PRIMARY KEY,
		rule      TEXT NOT NULL,  -- throughput_below, loss_above, rtt_step, clock_unsynchronised, no_data
		src       TEXT NOT NULL,
		dst       TEXT NOT NULL,
		test      TEXT NOT NULL,
		started   REAL NOT NULL,
		ended     REAL,           -- NULL while it is active
		value     REAL NOT NULL,
		baseline  REAL NOT NULL,
		threshold REAL NOT NULL,
		message   TEXT NOT NULL,
		evidence  TEXT NOT NULL DEFAULT '{}',
		ref       TEXT NOT NULL   -- the service's name of the alert, which ends it
	);
	CREATE INDEX mon_alerts_started ON mon_alerts(started);
	CREATE INDEX mon_alerts_ref ON mon_alerts(ref);
	CREATE TABLE mon_leases (
		name    TEXT PRIMARY KEY, -- "share N" of the mesh, or "host NAME" while a throughput-class test holds it
		owner   TEXT NOT NULL,    -- the service process, "BOOT-ID PID"
		expires REAL NOT NULL
	);
	CREATE TABLE mon_members (
		owner   TEXT PRIMARY KEY, -- a service process sharing the archive
		expires REAL NOT NULL
	)`,
	// 4: who acknowledged an alert, the audit of every state change made
	// through wanlab serve's API or dashboard, and the test-bed's link
	// changes it saw (injected events).
	`ALTER TABLE mon_alerts ADD COLUMN acked_by TEXT NOT NULL DEFAULT '';
	ALTER TABLE mon_alerts ADD COLUMN acked_at REAL;
	ALTER TABLE mon_alerts ADD COLUMN ack_note TEXT NOT NULL DEFAULT '';
	CREATE TABLE mon_audit (
		id       INTEGER PRIMARY KEY,
		t        REAL NOT NULL,
		identity TEXT NOT NULL,   -- the token's name, '' if none was given
		remote   TEXT NOT NULL,   -- the caller's address
		action   TEXT NOT NULL,   -- login, ack, run
		target   TEXT NOT NULL,   -- an alert's ref, a path's test
		outcome  TEXT NOT NULL    -- ok, or why it was refused
	);
	CREATE INDEX mon_audit_t ON mon_audit(t);
	CREATE TABLE mon_changes (
		id   INTEGER PRIMARY KEY,
		t    REAL NOT NULL,
		what TEXT NOT NULL,  -- the change as asked, as "site taipei: delay=250ms"
		dirs TEXT NOT NULL   -- JSON: the link directions it changed
	);
	CREATE INDEX mon_changes_t ON mon_changes(t)`,
}

// IsPostgres says whether dsn names a PostgreSQL database rather than a file.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// Open opens the archive at path, a SQLite file (created if needed) or a
// postgres:// URL, and brings its schema up to date.
func Open(path string) (*Archive, error) {
	a := &Archive{path: path, postgres: IsPostgres(path)}
	var err error
	if a.postgres {
		a.path = redact(path)
		a.db, err = openPostgres(path)
	} else {
		// Immediate transactions take the write lock when they begin, so that
		// two wanlab processes on one fresh file wait for each other rather
		// than fail with "database is locked" when a reader turns writer.
		a.db, err = sql.Open("sqlite", sqliteDSN(path, "_txlock=immediate&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"))
	}
	if err != nil {
		return nil, fmt.Errorf("opening archive %s: %w", a.path, redactErr(err, path))
	}
	if a.postgres {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.db.PingContext(ctx); err != nil {
			a.db.Close()
			return nil, fmt.Errorf("connecting to archive %s: %w", a.path, redactErr(err, path))
		}
	}
	// Another process may hold the new file's lock while it turns it into
	// a WAL database, which no busy timeout waits for: try again a while.
	err = a.migrate()
	for deadline := time.Now().Add(15 * time.Second); isBusy(err) && time.Now().Before(deadline); err = a.migrate() {
		time.Sleep(time.Duration(20+rand.IntN(80)) * time.Millisecond)
	}
	if err != nil {
		a.db.Close()
		return nil, fmt.Errorf("archive %s: %w", a.path, redactErr(err, path))
	}
	return a, nil
}

// deadPeer is how long a PostgreSQL connection may leave data unacknowledged
// (or keepalives unanswered) before it counts as broken: a server cut off
// without a reset fails a write in this time rather than hanging it, and the
// monitoring service buffers instead of stalling.
const deadPeer = 30 * time.Second

// openPostgres opens a PostgreSQL archive whose connections notice a dead
// server within deadPeer (TCP_USER_TIMEOUT and keepalives).
func openPostgres(dsn string) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	d := &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: deadPeer / 3, Control: func(network, _ string, c syscall.RawConn) error {
		if !strings.HasPrefix(network, "tcp") {
			return nil // a Unix socket: the server is on this machine
		}
		var serr error
		c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(deadPeer/time.Millisecond))
		})
		return serr
	}}
	if cfg.ConnectTimeout == 0 {
		d.Timeout = deadPeer
	}
	cfg.DialFunc = d.DialContext
	return stdlib.OpenDB(*cfg), nil
}

// isBusy says whether err is SQLite's "database is locked".
func isBusy(err error) bool {
	return err != nil && strings.Contains(err.Error(), "SQLITE_BUSY")
}

// OpenReadOnly opens an existing archive to read it. A SQLite file this
// user may not write is opened read-only (and must already be of this
// wanlab's schema, since an upgrade writes); any other archive as Open does.
func OpenReadOnly(path string) (*Archive, error) {
	if IsPostgres(path) || writable(path) {
		return Open(path)
	}
	a := &Archive{path: path, readOnly: true}
	var have int
	var err error
	// A WAL archive in a folder this user may not write cannot be read the
	// usual way (SQLite would make its -shm file): then read it as a file
	// that nobody changes, which it is while nobody may write it.
	for _, mode := range []string{"mode=ro", "mode=ro&immutable=1"} {
		if a.db, err = sql.Open("sqlite", sqliteDSN(path, mode)); err != nil {
			return nil, fmt.Errorf("opening archive %s: %w", a.path, err)
		}
		if err = a.db.QueryRow(`SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&have); err == nil {
			break
		}
		a.db.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("archive %s (read-only): not a wanlab archive, or not a SQLite file: %w", a.path, err)
	}
	if have != len(migrations) {
		a.db.Close()
		return nil, fmt.Errorf("archive %s is read-only and of schema v%d, not v%d: opening it once as a user who may write it upgrades it", a.path, have, len(migrations))
	}
	return a, nil
}

// sqliteDSN is the driver's name of a SQLite file with options; the busy
// timeout comes first, before any pragma that needs a lock.
func sqliteDSN(path, options string) string {
	return "file:" + path + "?_pragma=busy_timeout(10000)&" + options
}

// writable says whether this process may write the file at path.
func writable(path string) bool {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// ReadOnly says the archive was opened read-only.
func (a *Archive) ReadOnly() bool { return a.readOnly }

// redactErr replaces the password of dsn wherever err's text repeats it.
func redactErr(err error, dsn string) error {
	if err == nil || !IsPostgres(dsn) {
		return err
	}
	pw := password(dsn)
	if pw == "" || !strings.Contains(err.Error(), pw) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), pw, "***"))
}

// password is the password of a database URL, "" if it has none.
func password(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		pw, _ := u.User.Password()
		return pw
	}
	at := strings.LastIndex(dsn, "@")
	scheme := strings.Index(dsn, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return ""
	}
	_, pw, _ := strings.Cut(dsn[scheme+3:at], ":")
	return pw
}

// redact hides the password of a database URL.
func redact(dsn string) string {
	at := strings.LastIndex(dsn, "@")
	scheme := strings.Index(dsn, "://")
	if at < 0 || scheme < 0 {
		return dsn
	}
	userinfo := dsn[scheme+3 : at]
	if user, _, ok := strings.Cut(userinfo, ":"); ok {
		return dsn[:scheme+3] + user + ":***" + dsn[at:]
	}
	return dsn
}

// Location is where the archive is, without any password.
func (a *Archive) Location() string { return a.path }

// q adapts a query written with ? placeholders and SQLite's types to the
// archive's database.
func (a *Archive) q(query string) string {
	if !a.postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ddl adapts a migration's statements to the archive's database.
func (a *Archive) ddl(migration string) []string {
	if a.postgres {
		migration = strings.NewReplacer("INTEGER PRIMARY KEY", "BIGSERIAL PRIMARY KEY", "INTEGER", "BIGINT", "REAL", "DOUBLE PRECISION").Replace(migration)
	}
	var out []string
	for _, stmt := range strings.Split(migration, ";") {
		if hasCode(stmt) {
			out = append(out, stmt)
		}
	}
	return out
}

// hasCode says whether a piece of SQL is more than blanks and comments.
func hasCode(sql string) bool {
	for _, line := range strings.Split(sql, "\n") {
		if code, _, _ := strings.Cut(line, "--"); strings.TrimSpace(code) != "" {
			return true
		}
	}
	return false
}

// Close closes the archive.
func (a *Archive) Close() error { return a.db.Close() }

// migrate brings the schema up to date in one transaction that holds the
// archive's write lock from its start (SQLite: BEGIN IMMEDIATE; PostgreSQL:
// an advisory lock), so that processes opening one new archive at once
// migrate it once, one after the other.
func (a *Archive) migrate() error {
	tx, err := a.db.Begin()
	if err != nil {
		return fmt.Errorf("locking the archive to check its schema: %w", err)
	}
	defer tx.Rollback()
	if a.postgres {
		if _, err := tx.Exec(`SELECT pg_advisory_xact_lock(7400112)`); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(`CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, applied_at TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("creating the schema table (is it a wanlab archive?): %w", err)
	}
	var have int
	if err := tx.QueryRow(`SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&have); err != nil {
		return err
	}
	if have > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this wanlab knows (%d): upgrade wanlab", have, len(migrations))
	}
	for v := have; v < len(migrations); v++ {
		for _, stmt := range a.ddl(migrations[v]) {
			if _, err := tx.Exec(stmt); err != nil {
				return fmt.Errorf("migration %d: %w", v+1, err)
			}
		}
		if _, err := tx.Exec(a.q(`INSERT INTO schema_version VALUES (?, ?)`), v+1, now()); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrating to schema v%d: %w", len(migrations), err)
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
	// Scenario is the scenario text of a run of one; Runs leaves it out.
	Scenario string `json:"-"`
}

// Run statuses (steps use the same words).
const (
	StatusRunning     = "running"
	StatusDone        = "done"
	StatusPartial     = "partial"
	StatusInterrupted = "interrupted"
	StatusFailed      = "failed"
)

// NewRun describes a run about to start.
type NewRun struct {
	Kind, Name, Testbed, Version string
	Params                       any
	Scenario                     string
	Machine                      any
}

// StartRun records a run as started and returns its id. It is stored at
// once, so a run cut short is still in the archive, marked running until
// EndRun says otherwise (or MarkAbandoned finds its process gone).
func (a *Archive) StartRun(r NewRun) (int64, error) {
	p, err := json.Marshal(r.Params)
	if err != nil {
		return 0, err
	}
	m, err := json.Marshal(r.Machine)
	if err != nil {
		return 0, err
	}
	var id int64
	err = a.db.QueryRow(a.q(`INSERT INTO runs (kind, name, testbed, started_at, status, params, wanlab_version, scenario, machine, controller)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`),
		r.Kind, r.Name, r.Testbed, now(), StatusRunning, string(p), r.Version, r.Scenario, string(m), controllerID()).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("recording the run in %s: %w", a.path, err)
	}
	return id, nil
}

// ResumeRun marks an earlier run as running again, by this process.
func (a *Archive) ResumeRun(id int64) error {
	_, err := a.db.Exec(a.q(`UPDATE runs SET status = ?, reason = '', ended_at = NULL, controller = ? WHERE id = ?`), StatusRunning, controllerID(), id)
	if err != nil {
		return fmt.Errorf("resuming run %d: %w", id, err)
	}
	return nil
}

// controllerID names this process across reboots: the kernel's boot id and
// the pid.
func controllerID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b)) + " " + strconv.Itoa(os.Getpid())
}

// MarkAbandoned marks as interrupted every run still recorded as running
// whose process is gone (killed, or the machine rebooted), with its
// unfinished steps, and returns their ids.
func (a *Archive) MarkAbandoned(ctx context.Context) ([]int64, error) {
	rows, err := a.db.QueryContext(ctx, a.q(`SELECT id, controller FROM runs WHERE status = ?`), StatusRunning)
	if err != nil {
		return nil, err
	}
	type orphan struct {
		id  int64
		why string
	}
	var orphans []orphan
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	for rows.Next() {
		var id int64
		var ctl string
		if err := rows.Scan(&id, &ctl); err != nil {
			rows.Close()
			return nil, err
		}
		bootID, pidText, _ := strings.Cut(ctl, " ")
		pid, _ := strconv.Atoi(pidText)
		switch {
		case ctl == "":
			// Recorded by a wanlab that did not say who it was: leave it.
		case bootID != strings.TrimSpace(string(boot)):
			orphans = append(orphans, orphan{id, "the machine restarted while the run was going on"})
		case pid > 0 && syscall.Kill(pid, 0) == syscall.ESRCH:
			orphans = append(orphans, orphan{id, fmt.Sprintf("the wanlab process recording it (pid %d) ended without finishing it (killed?)", pid)})
		}
	}
	rows.Close()
	var ids []int64
	for _, o := range orphans {
		if err := a.EndRun(o.id, StatusInterrupted, o.why, nil); err != nil {
			return ids, err
		}
		if _, err := a.db.ExecContext(ctx, a.q(`UPDATE steps SET status = ?, reason = ?, ended_at = ? WHERE run_id = ? AND status = ?`),
			StatusInterrupted, o.why, now(), o.id, StatusRunning); err != nil {
			return ids, err
		}
		ids = append(ids, o.id)
	}
	return ids, nil
}

// EndRun records how a run ended, with its summary (nil keeps the one stored).
func (a *Archive) EndRun(id int64, status, reason string, result any) error {
	var err error
	if result == nil {
		_, err = a.db.Exec(a.q(`UPDATE runs SET ended_at = ?, status = ?, reason = ? WHERE id = ?`), now(), status, reason, id)
	} else {
		var res []byte
		if res, err = json.Marshal(result); err != nil {
			return err
		}
		_, err = a.db.Exec(a.q(`UPDATE runs SET ended_at = ?, status = ?, reason = ?, result = ? WHERE id = ?`), now(), status, reason, string(res), id)
	}
	if err != nil {
		return fmt.Errorf("recording the end of run %d: %w", id, err)
	}
	return nil
}

// Step is one stored step of a run.
type Step struct {
	ID        int64           `json:"id"`
	Index     int             `json:"index"`
	Workload  string          `json:"workload"`
	Label     string          `json:"label"`
	Params    json.RawMessage `json:"params"`
	StartedAt string          `json:"started_at"`
	EndedAt   string          `json:"ended_at,omitempty"`
	Status    string          `json:"status"`
	Reason    string          `json:"reason,omitempty"`
	Result    json.RawMessage `json:"result"`
}

// StartStep records a step of a run as started.
func (a *Archive) StartStep(run int64, index int, workload, label string, params any) (int64, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return 0, err
	}
	var id int64
	err = a.db.QueryRow(a.q(`INSERT INTO steps (run_id, idx, workload, label, params, started_at, status) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`),
		run, index, workload, label, string(p), now(), StatusRunning).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("recording step %d of run %d: %w", index, run, err)
	}
	return id, nil
}

// EndStep records how a step ended, with its summary.
func (a *Archive) EndStep(step int64, status, reason string, result any) error {
	res, err := json.Marshal(result)
	if err != nil {
		return err
	}
	if _, err := a.db.Exec(a.q(`UPDATE steps SET ended_at = ?, status = ?, reason = ?, result = ? WHERE id = ?`), now(), status, reason, string(res), step); err != nil {
		return fmt.Errorf("recording the end of step %d: %w", step, err)
	}
	return nil
}

// Steps lists a run's steps in order; an interrupted and resumed run can
// have several tries of one index, the last is the one that counts.
func (a *Archive) Steps(ctx context.Context, run int64) ([]Step, error) {
	rows, err := a.db.QueryContext(ctx, a.q(`SELECT id, idx, workload, label, params, started_at, COALESCE(ended_at, ''), status, reason, result
		FROM steps WHERE run_id = ? ORDER BY idx, id`), run)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Step
	for rows.Next() {
		var s Step
		var params, result string
		if err := rows.Scan(&s.ID, &s.Index, &s.Workload, &s.Label, &params, &s.StartedAt, &s.EndedAt, &s.Status, &s.Reason, &result); err != nil {
			return nil, err
		}
		s.Params, s.Result = json.RawMessage(params), json.RawMessage(result)
		out = append(out, s)
	}
	return out, rows.Err()
}

// Sample is one value of one metric about one subject at one time.
type Sample struct {
	T       time.Time
	Metric  string
	Subject string
	Value   float64
	Unit    string
}

// insertRows inserts rows into table's columns in one transaction: with
// COPY into PostgreSQL, with a prepared INSERT into SQLite.
func (a *Archive) insertRows(table string, columns []string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	if a.postgres {
		conn, err := a.db.Conn(context.Background())
		if err != nil {
			return err
		}
		defer conn.Close()
		return conn.Raw(func(dc any) error {
			_, err := dc.(*stdlib.Conn).Conn().CopyFrom(context.Background(), pgx.Identifier{table}, columns, pgx.CopyFromRows(rows))
			return err
		})
	}
	// SQLite inserts fastest one prepared row at a time.
	tx, err := a.db.Begin()
	if err != nil {
		return err
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(columns)), ", ")
	st, err := tx.Prepare("INSERT INTO " + table + " (" + strings.Join(columns, ", ") + ") VALUES (" + marks + ")")
	if err != nil {
		tx.Rollback()
		return err
	}
	defer st.Close()
	for _, r := range rows {
		if _, err := st.Exec(r...); err != nil {
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

// nullID stores 0 as NULL: a sample or event of no step.
func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// AddSamples stores samples of a run (and of one of its steps, unless step
// is 0) in one transaction.
func (a *Archive) AddSamples(run, step int64, samples []Sample) error {
	rows := make([][]any, len(samples))
	for i, s := range samples {
		rows[i] = []any{run, nullID(step), unixSeconds(s.T), s.Metric, s.Subject, s.Value, s.Unit}
	}
	if err := a.insertRows("samples", []string{"run_id", "step_id", "t", "metric", "subject", "value", "unit"}, rows); err != nil {
		return fmt.Errorf("storing samples of run %d: %w", run, err)
	}
	return nil
}

// AddJobs stores the jobs of a step.
func (a *Archive) AddJobs(run, step int64, jobs []job.Record) error {
	rows := make([][]any, len(jobs))
	for i, j := range jobs {
		rows[i] = []any{run, step, j.ID, j.Host, j.Subject, unixSeconds(j.Start), unixSeconds(j.End), j.Bytes, j.Status, j.Reason, j.TCPRTTms, int64(j.TCPRetransmits)}
	}
	if err := a.insertRows("jobs", []string{"run_id", "step_id", "job", "host", "subject", "started", "ended", "bytes", "status", "reason", "tcp_rtt_ms", "tcp_retransmits"}, rows); err != nil {
		return fmt.Errorf("storing jobs of run %d: %w", run, err)
	}
	return nil
}

// Jobs calls fn for every job of a step, in the order they started.
func (a *Archive) Jobs(ctx context.Context, step int64, fn func(job.Record) error) error {
	rows, err := a.db.QueryContext(ctx, a.q(`SELECT job, host, subject, started, ended, bytes, status, reason, tcp_rtt_ms, tcp_retransmits FROM jobs WHERE step_id = ? ORDER BY started, job`), step)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var j job.Record
		var start, end float64
		if err := rows.Scan(&j.ID, &j.Host, &j.Subject, &start, &end, &j.Bytes, &j.Status, &j.Reason, &j.TCPRTTms, &j.TCPRetransmits); err != nil {
			return err
		}
		j.Start, j.End = fromUnix(start), fromUnix(end)
		if err := fn(j); err != nil {
			return err
		}
	}
	return rows.Err()
}

func fromUnix(t float64) time.Time { return time.Unix(0, int64(t*1e9)).UTC() }

// Event levels. Link is a change made to the test-bed's links (an event
// of the scenario's timeline, or wanlab testbed set) while the run ran.
const (
	Info    = "info"
	Warning = "warning"
	Failure = "error"
	Link    = "link"
)

// AddEvent records something that happens now during a run (and one of
// its steps, unless step is 0).
func (a *Archive) AddEvent(run, step int64, level, message string) error {
	return a.AddEventAt(run, step, time.Now(), level, message)
}

// AddEventAt records something that happened at t during a run.
func (a *Archive) AddEventAt(run, step int64, t time.Time, level, message string) error {
	_, err := a.db.Exec(a.q(`INSERT INTO events (run_id, step_id, t, level, message) VALUES (?, ?, ?, ?, ?)`), run, nullID(step), unixSeconds(t), level, message)
	if err != nil {
		return fmt.Errorf("recording an event of run %d: %w", run, err)
	}
	return nil
}

// Event is one stored event.
type Event struct {
	Step    int64     `json:"step_id,omitempty"`
	T       time.Time `json:"t"`
	Level   string    `json:"level"`
	Message string    `json:"message"`
}

// Events lists a run's events in time order.
func (a *Archive) Events(ctx context.Context, run int64) ([]Event, error) {
	rows, err := a.db.QueryContext(ctx, a.q(`SELECT COALESCE(step_id, 0), t, level, message FROM events WHERE run_id = ? ORDER BY t`), run)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		var t float64
		if err := rows.Scan(&e.Step, &t, &e.Level, &e.Message); err != nil {
			return nil, err
		}
		e.T = fromUnix(t)
		out = append(out, e)
	}
	return out, rows.Err()
}

// ErrNoRun means no run has that id.
var ErrNoRun = errors.New("no such run")

const runColumns = `r.id, r.kind, r.name, r.testbed, r.started_at, COALESCE(r.ended_at, ''), r.status, r.reason,
	r.params, r.result, r.wanlab_version, (SELECT COUNT(*) FROM samples s WHERE s.run_id = r.id)`

func scanRun(sc interface{ Scan(...any) error }, extra ...any) (Run, error) {
	var r Run
	var params, result string
	err := sc.Scan(append([]any{&r.ID, &r.Kind, &r.Name, &r.Testbed, &r.StartedAt, &r.EndedAt, &r.Status, &r.Reason, &params, &result, &r.WanlabVersion, &r.Samples}, extra...)...)
	r.Params, r.Result = json.RawMessage(params), json.RawMessage(result)
	return r, err
}

// Runs lists the runs, newest first.
func (a *Archive) Runs(ctx context.Context) ([]Run, error) {
	rows, err := a.db.QueryContext(ctx, `SELECT `+runColumns+` FROM runs r ORDER BY r.id DESC`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// GetRun returns one run with its scenario text.
func (a *Archive) GetRun(ctx context.Context, id int64) (Run, error) {
	var scenario string
	r, err := scanRun(a.db.QueryRowContext(ctx, a.q(`SELECT `+runColumns+`, r.scenario FROM runs r WHERE r.id = ?`), id), &scenario)
	r.Scenario = scenario
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("run %d: %w", id, ErrNoRun)
	}
	return r, err
}

// StoredBytes estimates the space a run's samples, jobs and events take.
func (a *Archive) StoredBytes(ctx context.Context, run int64) (int64, error) {
	var n int64
	err := a.db.QueryRowContext(ctx, a.q(`SELECT
		COALESCE((SELECT SUM(LENGTH(metric) + LENGTH(subject) + LENGTH(unit) + 40) FROM samples WHERE run_id = ?), 0) +
		COALESCE((SELECT SUM(LENGTH(host) + LENGTH(subject) + LENGTH(status) + LENGTH(reason) + 56) FROM jobs WHERE run_id = ?), 0) +
		COALESCE((SELECT SUM(LENGTH(message) + 32) FROM events WHERE run_id = ?), 0)`), run, run, run).Scan(&n)
	return n, err
}

// Samples calls fn for every sample of a run, in time order.
func (a *Archive) Samples(ctx context.Context, run int64, fn func(Sample) error) error {
	var n int
	if err := a.db.QueryRowContext(ctx, a.q(`SELECT COUNT(*) FROM runs WHERE id = ?`), run).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("run %d: %w", run, ErrNoRun)
	}
	rows, err := a.db.QueryContext(ctx, a.q(`SELECT t, metric, subject, value, unit FROM samples WHERE run_id = ? ORDER BY t, metric, subject`), run)
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
		s.T = fromUnix(t)
		if err := fn(s); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Recording is one measurement being kept in an archive: recorded as
// started at once, so that it is there even if it is cut short.
type Recording struct {
	a  *Archive
	id int64
}

// Record opens the archive at path and records a measurement as started.
// An empty path keeps nothing: Finish on the Recording does nothing.
func Record(path string, r NewRun) (*Recording, error) {
	if path == "" {
		return &Recording{}, nil
	}
	a, err := Open(path)
	if err != nil {
		return nil, err
	}
	id, err := a.StartRun(r)
	if err != nil {
		a.Close()
		return nil, err
	}
	return &Recording{a: a, id: id}, nil
}

// Finish stores the measurement's samples and how it ended: failed when it
// measured nothing, partial when it failed after measuring something,
// done otherwise.
func (r *Recording) Finish(samples []Sample, result any, measureErr error) error {
	if r.a == nil {
		return nil
	}
	defer r.a.Close()
	status, reason := StatusDone, ""
	switch {
	case measureErr != nil && result == nil:
		status, reason = StatusFailed, measureErr.Error()
	case measureErr != nil:
		status, reason = StatusPartial, measureErr.Error()
	}
	if err := r.a.AddSamples(r.id, 0, samples); err != nil {
		return err
	}
	return r.a.EndRun(r.id, status, reason, result)
}

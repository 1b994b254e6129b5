// Package archive stores measurements in a SQLite file (WAL) or a
// PostgreSQL database with the same schema, brought up to date by
// versioned migrations: runs, their steps, time-series samples, jobs and
// events in a RunStore (runs.go), the monitoring service's series, tests,
// alerts, audit, changes and leases in a SeriesStore (series.go), both
// over one db (db.go), whose queryAll and queryEach are the only loops
// over rows.
// Metric names follow the GGF NMWG hierarchy (bandwidth.achievable,
// delay.roundtrip, loss.roundtrip, ...) plus wanlab's own; docs/archive.md
// describes the schema for SQL, pandas or Grafana users.
package archive

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib" // the PostgreSQL driver, registered as "pgx"
	"golang.org/x/sys/unix"
	"modernc.org/sqlite" // the pure-Go SQLite driver, registered as "sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Archive is an open measurement archive: the runs' store and the
// monitoring series' store over one database, whose schema it keeps up to
// date.
type Archive struct {
	*db
	*RunStore
	*SeriesStore
}

// newArchive is an archive over d, whose pool Open sets.
func newArchive(d *db) *Archive {
	return &Archive{db: d, RunStore: &RunStore{d}, SeriesStore: &SeriesStore{d}}
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
	// 5: the address family of a monitoring test run once per family
	// (ipv4 or ipv6, '' for a test's one run over its hosts' preference):
	// part of a path's series, of its hourly rollup's key, of its tests and
	// alerts, with the scope of an alert (ipv4-only, ipv6-only or path).
	`ALTER TABLE mon_points ADD COLUMN family TEXT NOT NULL DEFAULT '';
	DROP INDEX mon_points_path;
	CREATE INDEX mon_points_path ON mon_points(src, dst, metric, t, test, family, value);
	CREATE TABLE mon_hourly_v5 (
		hour   REAL NOT NULL,
		src    TEXT NOT NULL,
		dst    TEXT NOT NULL,
		test   TEXT NOT NULL,
		family TEXT NOT NULL DEFAULT '',
		metric TEXT NOT NULL,
		min    REAL NOT NULL,
		mean   REAL NOT NULL,
		median REAL NOT NULL,
		p95    REAL NOT NULL,
		max    REAL NOT NULL,
		count  INTEGER NOT NULL,
		PRIMARY KEY (src, dst, metric, test, family, hour)
	);
	INSERT INTO mon_hourly_v5 (hour, src, dst, test, family, metric, min, mean, median, p95, max, count)
		SELECT hour, src, dst, test, '', metric, min, mean, median, p95, max, count FROM mon_hourly;
	DROP TABLE mon_hourly;
	ALTER TABLE mon_hourly_v5 RENAME TO mon_hourly;
	ALTER TABLE mon_tests ADD COLUMN family TEXT NOT NULL DEFAULT '';
	ALTER TABLE mon_alerts ADD COLUMN family TEXT NOT NULL DEFAULT '';
	ALTER TABLE mon_alerts ADD COLUMN scope TEXT NOT NULL DEFAULT ''`,
}

// IsPostgres says whether dsn names a PostgreSQL database rather than a file.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// Open opens the archive at path, a SQLite file (created if needed) or a
// postgres:// URL, and brings its schema up to date.
func Open(path string) (*Archive, error) {
	a := newArchive(&db{path: path, postgres: IsPostgres(path)})
	var err error
	if a.postgres {
		a.path = redact(path)
		a.pool, err = openPostgres(path)
	} else {
		// Immediate transactions take the write lock when they begin, so that
		// two wanlab processes on one fresh file wait for each other rather
		// than fail with "database is locked" when a reader turns writer.
		a.pool, err = sql.Open("sqlite", sqliteDSN(path, "_txlock=immediate&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"))
	}
	if err != nil {
		return nil, fmt.Errorf("opening archive %s: %w", a.path, redactErr(err, path))
	}
	if a.postgres {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.pool.PingContext(ctx); err != nil {
			a.pool.Close()
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
		a.pool.Close()
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

// isBusy says whether err is SQLite's "database is locked": SQLITE_BUSY
// or one of its extended codes.
func isBusy(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == sqlite3.SQLITE_BUSY
}

// OpenReadOnly opens an existing archive to read it. A SQLite file this
// user may not write is opened read-only (and must already be of this
// wanlab's schema, since an upgrade writes); any other archive as Open does.
func OpenReadOnly(path string) (*Archive, error) {
	if IsPostgres(path) || writable(path) {
		return Open(path)
	}
	a := newArchive(&db{path: path, readOnly: true})
	var have int
	var err error
	// A WAL archive in a folder this user may not write cannot be read the
	// usual way (SQLite would make its -shm file): then read it as a file
	// that nobody changes, which it is while nobody may write it.
	for _, mode := range []string{"mode=ro", "mode=ro&immutable=1"} {
		if a.pool, err = sql.Open("sqlite", sqliteDSN(path, mode)); err != nil {
			return nil, fmt.Errorf("opening archive %s: %w", a.path, err)
		}
		if err = a.pool.QueryRow(`SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&have); err == nil {
			break
		}
		a.pool.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("archive %s (read-only): not a wanlab archive, or not a SQLite file: %w", a.path, err)
	}
	if have != len(migrations) {
		a.pool.Close()
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

// Close closes the archive.
func (a *Archive) Close() error { return a.pool.Close() }

// migrate brings the schema up to date in one transaction that holds the
// archive's write lock from its start (SQLite: BEGIN IMMEDIATE; PostgreSQL:
// an advisory lock), so that processes opening one new archive at once
// migrate it once, one after the other.
func (a *Archive) migrate() error {
	tx, err := a.pool.Begin()
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

package archive

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// db is an open database of either kind, with what both stores need to
// speak to it: its SQL dialect, bulk inserts and the one loop over rows.
type db struct {
	pool     *sql.DB
	path     string // as given, without a password
	postgres bool
	readOnly bool
}

// q adapts a query written with ? placeholders and SQLite's types to the
// archive's database.
func (d *db) q(query string) string {
	if !d.postgres {
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
func (d *db) ddl(migration string) []string {
	if d.postgres {
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

// insertRows inserts rows into table's columns in one transaction: with
// COPY into PostgreSQL, with a prepared INSERT into SQLite.
func (d *db) insertRows(table string, columns []string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	if d.postgres {
		conn, err := d.pool.Conn(context.Background())
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
	tx, err := d.pool.Begin()
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

// scanner is a row to read: a *sql.Row or the current row of *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// queryEach runs query (with ? placeholders) and calls row for each row
// it returns, in order, until row fails; the rows are closed when it
// returns. It and queryAll are the archive's only loops over rows.
func (d *db) queryEach(ctx context.Context, query string, row func(scanner) error, args ...any) error {
	rows, err := d.pool.QueryContext(ctx, d.q(query), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// queryAll runs query and returns every row as scan reads it.
func queryAll[T any](ctx context.Context, d *db, query string, scan func(scanner) (T, error), args ...any) ([]T, error) {
	var out []T
	err := d.queryEach(ctx, query, func(sc scanner) error {
		v, err := scan(sc)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	}, args...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// nullID stores 0 as NULL: a sample or event of no step.
func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func fromUnix(t float64) time.Time { return time.Unix(0, int64(t*1e9)).UTC() }

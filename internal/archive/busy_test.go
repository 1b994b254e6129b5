package archive

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
)

// TestIsBusyOnALockedFile takes an archive's write lock and writes to it
// from another connection that does not wait: the error SQLite gives is
// busy by its type and code, wrapped or not, and no text alone is.
func TestIsBusyOnALockedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	a, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	holder, err := a.pool.Begin() // immediate: takes the write lock now
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()

	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, lockedErr := other.Exec(`INSERT INTO mon_changes (t, what, dirs) VALUES (1, 'x', '[]')`)
	if lockedErr == nil {
		t.Fatal("a write to a locked archive succeeded")
	}
	_, otherErr := other.Exec(`SELECT * FROM no_such_table`)

	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"locked", lockedErr, true},
		{"locked, wrapped", fmt.Errorf("migration 1: %w", lockedErr), true},
		{"another SQLite error", otherErr, false},
		{"the text alone", errors.New("database is locked (5) (SQLITE_BUSY)"), false},
		{"nil", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := isBusy(c.err); got != c.want {
				t.Errorf("isBusy(%v) = %v, want %v", c.err, got, c.want)
			}
		})
	}
}

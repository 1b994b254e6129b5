package testsupport

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/proc"
)

func TestMain(m *testing.M) { Main(m) }

func TestPackagesParse(t *testing.T) {
	pkgs, err := Packages()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, p := range pkgs {
		if names[p.Name] {
			t.Errorf("%s is listed twice", p.Name)
		}
		names[p.Name] = true
		if p.Why == "" {
			t.Errorf("%s: say which tests use it after #", p.Name)
		}
		for _, g := range p.Groups {
			if g != "test" && g != "bench" && g != "demo" && g != "image" {
				t.Errorf("%s: unknown group %q", p.Name, g)
			}
		}
	}
	for _, want := range []string{"iperf3", "postgresql", "chromium"} {
		if !names[want] {
			t.Errorf("%s is missing from packages.txt", want)
		}
	}
}

func TestPostgresIsPrivate(t *testing.T) {
	url := Postgres(t)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version string
	if err := db.QueryRow("SHOW server_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if os.Getenv(PostgresEnv) != "" {
		t.Logf("using %s's server, PostgreSQL %s", PostgresEnv, version)
		return
	}
	if !strings.Contains(url, "127.0.0.1") || strings.Contains(url, ":5432/") {
		t.Errorf("the private server should be on a free loopback port, not %s", url)
	}
	// Its directory is this process's, and goes with it.
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), instancePrefix+"postgres-*"))
	mine := 0
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, ownerFile)); err == nil && string(b) == proc.ID(os.Getpid()) {
			mine++
		}
	}
	if mine != 1 {
		t.Errorf("%d server directories owned by this test binary, want 1", mine)
	}
}

func TestSweepRemovesDeadOwners(t *testing.T) {
	dir, err := os.MkdirTemp("", instancePrefix+"dead-")
	if err != nil {
		t.Fatal(err)
	}
	// pid 1 with a start time it never had: a test binary that is gone.
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte("1 999999999999"), 0o600); err != nil {
		t.Fatal(err)
	}
	sweep()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		os.RemoveAll(dir)
		t.Errorf("the directory of a dead test run was left: %v", err)
	}
}

// TestOwnedDirKeptWhileItsOwnerLives: another test binary's sweep leaves
// the directory of a live one alone.
func TestOwnedDirKeptWhileItsOwnerLives(t *testing.T) {
	dir, err := OwnedDir("kept")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sweep()
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("a sweep removed the directory of a live test binary: %v", err)
	}
}

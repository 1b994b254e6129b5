package testsupport

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/wanlab/wanlab/internal/proc"
)

// PostgresEnv names an existing PostgreSQL server for the tests to use
// instead of a private one: postgres://USER:PASSWORD@HOST:PORT/DB.
const PostgresEnv = "WANLAB_TEST_POSTGRES"

var (
	pgOnce sync.Once
	pgURL  string
	pgErr  error
)

// Postgres returns the URL of a PostgreSQL database the test may use: the
// server that WANLAB_TEST_POSTGRES names, or else a private server that
// this test binary starts once (initdb into a temporary directory, listening
// on a free loopback port with a generated password) and stops at its end
// (see Main). Tests share the database; each should work in a schema of
// its own.
func Postgres(t testing.TB) string {
	t.Helper()
	if url := os.Getenv(PostgresEnv); url != "" {
		return url
	}
	Need(t, "postgresql")
	pgOnce.Do(func() { pgURL, pgErr = startPostgres() })
	if pgErr != nil {
		t.Fatalf("starting a private PostgreSQL: %v", pgErr)
	}
	return pgURL
}

// postgresBin finds a program of the newest PostgreSQL installed.
func postgresBin(name string) (string, error) {
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	slices.SortFunc(found, func(a, b string) int { return version(a) - version(b) })
	if len(found) > 0 {
		return found[len(found)-1], nil
	}
	return exec.LookPath(name)
}

func version(binPath string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(binPath))))
	return v
}

// serverUser is who the server runs as: PostgreSQL refuses to run as root,
// so root hands it to the postgres (or nobody) account.
func serverUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, fmt.Errorf("running as root and there is no postgres or nobody account to run PostgreSQL as")
}

func startPostgres() (string, error) {
	initdb, err := postgresBin("initdb")
	if err != nil {
		return "", err
	}
	server, err := postgresBin("postgres")
	if err != nil {
		return "", err
	}
	cred, err := serverUser()
	if err != nil {
		return "", err
	}
	in, err := newInstance("postgres")
	if err != nil {
		return "", err
	}
	// SIGINT is PostgreSQL's fast shutdown: it ends its sessions, removes
	// its shared memory and exits.
	in.stop = syscall.SIGINT
	fail := func(err error) (string, error) {
		in.terminate()
		return "", err
	}
	secret := make([]byte, 16)
	rand.Read(secret)
	password := hex.EncodeToString(secret)
	pwfile := filepath.Join(in.dir, "password")
	if err := os.WriteFile(pwfile, []byte(password+"\n"), 0o600); err != nil {
		return fail(err)
	}
	if cred != nil {
		for _, p := range []string{in.dir, pwfile} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return fail(err)
			}
		}
	}
	data := filepath.Join(in.dir, "data")
	initCmd := exec.Command(initdb, "-D", data, "-U", "wanlab", "--pwfile", pwfile, "--auth", "scram-sha-256", "-E", "UTF8", "--no-sync", "--no-instructions")
	initCmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initCmd.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("initdb: %w: %s", err, out))
	}
	var url string
	for try := 0; ; try++ {
		port, err := freePort()
		if err != nil {
			return fail(err)
		}
		cmd := exec.Command(server, "-D", data, "-p", strconv.Itoa(port), "-k", in.dir,
			"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
			"-c", "full_page_writes=off", "-c", "max_connections=50")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		if err := in.start(cmd); err != nil {
			return fail(err)
		}
		admin := fmt.Sprintf("postgres://wanlab:%s@127.0.0.1:%d/postgres?sslmode=disable", password, port)
		err = in.waitFor(30*time.Second, func() error { return ping(admin) })
		if err != nil && try < 2 && strings.Contains(in.logTail(), "Address already in use") {
			<-in.exited
			continue // another process took the port first
		}
		if err != nil {
			return fail(err)
		}
		if err := exec1(admin, "CREATE DATABASE wanlab_test"); err != nil {
			return fail(err)
		}
		url = fmt.Sprintf("postgres://wanlab:%s@127.0.0.1:%d/wanlab_test?sslmode=disable", password, port)
		return url, nil
	}
}

func ping(url string) error {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

func exec1(url, stmt string) error {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec(stmt)
	return err
}

// stopLeftPostgres stops a server that a killed test run left in dir: the
// parent-death signal normally ends it, but a server mid-start may miss it.
func stopLeftPostgres(dir string) {
	pidfile, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
	if err != nil {
		return
	}
	lines := strings.Split(string(pidfile), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || pid <= 0 {
		return
	}
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if !strings.Contains(string(cmdline), dir) {
		return // not that server any more
	}
	syscall.Kill(pid, syscall.SIGQUIT) // immediate shutdown: it removes its shared memory
	for i := 0; i < 100 && proc.Alive(pid); i++ {
		time.Sleep(50 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
}

// PostgresSchema returns the URL of a schema of its own in Postgres's
// database, for one test, dropped at its end.
func PostgresSchema(t testing.TB) string {
	t.Helper()
	url := Postgres(t)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	schema := fmt.Sprintf("wanlab_test_%d_%d", os.Getpid(), time.Now().UnixNano())
	if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("PostgreSQL: creating schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		if db, err := sql.Open("pgx", url); err == nil {
			db.Exec("DROP SCHEMA " + schema + " CASCADE")
			db.Close()
		}
	})
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "search_path=" + schema
}

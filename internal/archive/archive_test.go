package archive

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/testsupport"
	"github.com/wanlab/wanlab/internal/workload/job"
)

func TestMain(m *testing.M) { testsupport.Main(m) }

// backends runs fn against a fresh SQLite file and a fresh schema of a
// PostgreSQL database (a private server, or WANLAB_TEST_POSTGRES's). path
// opens the same archive again.
func backends(t *testing.T, fn func(t *testing.T, path string)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, filepath.Join(t.TempDir(), "a.db")) })
	t.Run("postgres", func(t *testing.T) { fn(t, testsupport.PostgresSchema(t)) })
}

// openArchive opens the archive at path, closed when the test ends.
func openArchive(t *testing.T, path string) *Archive {
	t.Helper()
	a, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func TestRunsAndSamples(t *testing.T) { backends(t, testRunsAndSamples) }

func testRunsAndSamples(t *testing.T, path string) {
	a, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	id, err := a.StartRun(NewRun{Kind: "measure throughput", Name: "a->b", Testbed: "t1", Version: "test", Params: map[string]int{"streams": 4}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_800_000_000, 0)
	samples := []Sample{
		{T: t0, Metric: "bandwidth.achievable", Subject: "a->b", Value: 9.5e6, Unit: "bit/s"},
		{T: t0.Add(time.Second), Metric: "bandwidth.achievable", Subject: "a->b", Value: 9.6e6, Unit: "bit/s"},
	}
	if err := a.AddSamples(id, 0, samples); err != nil {
		t.Fatal(err)
	}
	// A second run that never ends: it stays, marked running.
	cut, _ := a.StartRun(NewRun{Kind: "measure probe", Name: "a->b", Testbed: "t1", Version: "test"})
	if err := a.EndRun(id, StatusDone, "", map[string]float64{"bits_per_second": 9.55e6}); err != nil {
		t.Fatal(err)
	}
	a.Close()

	// Reopening applies no migration twice and finds everything.
	a, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	runs, err := a.Runs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].ID != cut || runs[0].Status != StatusRunning || runs[1].Status != StatusDone || runs[1].Samples != 2 {
		t.Fatalf("runs %+v", runs)
	}
	if !strings.Contains(string(runs[1].Params), `"streams":4`) || !strings.Contains(string(runs[1].Result), "9550000") {
		t.Errorf("params %s, result %s", runs[1].Params, runs[1].Result)
	}
	var got []Sample
	if err := a.Samples(context.Background(), id, func(s Sample) error { got = append(got, s); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].Value != 9.6e6 || !got[1].T.Equal(t0.Add(time.Second)) {
		t.Errorf("samples %+v", got)
	}
	if err := a.Samples(context.Background(), 999, func(Sample) error { return nil }); !errors.Is(err, ErrNoRun) {
		t.Errorf("unknown run: %v, want ErrNoRun", err)
	}
}

func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	notDB := filepath.Join(dir, "notes.txt")
	os.WriteFile(notDB, []byte("this is not a database, just some text that is long enough"), 0o644)
	if _, err := Open(notDB); err == nil || !strings.Contains(err.Error(), notDB) {
		t.Errorf("opening a text file: %v", err)
	}
	newer := filepath.Join(dir, "newer.db")
	a, err := Open(newer)
	if err != nil {
		t.Fatal(err)
	}
	a.pool.Exec(`INSERT INTO schema_version VALUES (99, 'future')`)
	a.Close()
	if _, err := Open(newer); err == nil || !strings.Contains(err.Error(), "newer than this wanlab knows") {
		t.Errorf("opening a newer archive: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "no", "such", "dir.db")); err == nil {
		t.Error("opened an archive in a directory that does not exist")
	}
}

// BenchmarkAddSamples measures storage rate; the target is 100,000 samples/s.
func BenchmarkAddSamples(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchAddSamples(b, filepath.Join(b.TempDir(), "bench.db")) })
	b.Run("postgres", func(b *testing.B) { benchAddSamples(b, testsupport.PostgresSchema(b)) })
}

func benchAddSamples(b *testing.B, path string) {
	a, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	id, _ := a.StartRun(NewRun{Kind: "bench", Name: "x"})
	batch := make([]Sample, 10000)
	for i := range batch {
		batch[i] = Sample{T: time.Unix(int64(i), 0), Metric: "bandwidth.achievable", Subject: "a->b stream 1", Value: float64(i), Unit: "bit/s"}
	}
	b.ResetTimer()
	for b.Loop() {
		if err := a.AddSamples(id, 0, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(batch)*b.N)/b.Elapsed().Seconds(), "samples/s")
}

func TestStepsJobsEvents(t *testing.T) { backends(t, testStepsJobsEvents) }

func testStepsJobsEvents(t *testing.T, path string) {
	a := openArchive(t, path)
	ctx := context.Background()
	run, err := a.StartRun(NewRun{Kind: "run", Name: "objectivity", Testbed: "obj", Version: "test", Scenario: "name: obj\n", Machine: map[string]int{"cpus": 2}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_800_000_000, 0)
	var steps []int64
	for i, label := range []string{"jobs=1", "jobs=5"} {
		id, err := a.StartStep(run, i, "ramp", label, map[string]int{"jobs": 1 + 4*i})
		if err != nil {
			t.Fatal(err)
		}
		steps = append(steps, id)
		jobs := []job.Record{{ID: 1, Host: "client", Start: t0, End: t0.Add(60 * time.Second), Bytes: 120e6, Status: job.OK}}
		if i == 1 {
			jobs = append(jobs, job.Record{ID: 2, Host: "client", Start: t0, End: t0.Add(25 * time.Second), Bytes: 1e6, Status: job.Timeout, Reason: "no reply to page 7 in 25s", TCPRTTms: 51.5, TCPRetransmits: 3})
		}
		if err := a.AddJobs(run, id, jobs); err != nil {
			t.Fatal(err)
		}
		if err := a.AddSamples(run, id, []Sample{{T: t0, Metric: "cpu.utilization", Subject: "host server", Value: 55, Unit: "%"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.EndStep(steps[0], StatusDone, "", map[string]float64{"throughput_mbps": 37}); err != nil {
		t.Fatal(err)
	}
	if err := a.AddEvent(run, steps[1], Warning, "1 job timed out"); err != nil {
		t.Fatal(err)
	}
	got, err := a.Steps(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Status != StatusDone || got[1].Status != StatusRunning || got[1].Label != "jobs=5" || !strings.Contains(string(got[0].Result), "37") {
		t.Fatalf("steps %+v", got)
	}
	var jobs []job.Record
	a.Jobs(ctx, steps[1], func(j job.Record) error { jobs = append(jobs, j); return nil })
	if len(jobs) != 2 || jobs[1].Status != job.Timeout || jobs[1].Wallclock() != 25*time.Second || jobs[0].Bytes != 120e6 || jobs[1].TCPRTTms != 51.5 || jobs[1].TCPRetransmits != 3 {
		t.Fatalf("jobs %+v", jobs)
	}
	events, err := a.Events(ctx, run)
	if err != nil || len(events) != 1 || events[0].Step != steps[1] || events[0].Level != Warning {
		t.Fatalf("events %+v, %v", events, err)
	}
	r, err := a.GetRun(ctx, run)
	if err != nil || r.Scenario != "name: obj\n" || r.Samples != 2 {
		t.Fatalf("run %+v, %v", r, err)
	}
	if n, err := a.StoredBytes(ctx, run); err != nil || n < 100 {
		t.Errorf("stored bytes %d, %v", n, err)
	}
	if _, err := a.GetRun(ctx, 999); !errors.Is(err, ErrNoRun) {
		t.Errorf("GetRun(999): %v", err)
	}

	// A run whose process is gone is found and marked interrupted, with its
	// unfinished steps; this process's own run is left alone.
	if ids, err := a.MarkAbandoned(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("MarkAbandoned with a live controller: %v, %v", ids, err)
	}
	if _, err := a.pool.Exec(a.q(`UPDATE runs SET controller = ? WHERE id = ?`), strings.Fields(controllerID())[0]+" 999999999", run); err != nil {
		t.Fatal(err)
	}
	ids, err := a.MarkAbandoned(ctx)
	if err != nil || len(ids) != 1 || ids[0] != run {
		t.Fatalf("MarkAbandoned: %v, %v", ids, err)
	}
	r, _ = a.GetRun(ctx, run)
	got, _ = a.Steps(ctx, run)
	if r.Status != StatusInterrupted || !strings.Contains(r.Reason, "pid 999999999") || got[1].Status != StatusInterrupted || got[0].Status != StatusDone {
		t.Fatalf("after MarkAbandoned: run %s %q, steps %s %s", r.Status, r.Reason, got[0].Status, got[1].Status)
	}
	if err := a.ResumeRun(run); err != nil {
		t.Fatal(err)
	}
	if r, _ = a.GetRun(ctx, run); r.Status != StatusRunning || r.Reason != "" {
		t.Fatalf("resumed run %+v", r)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://wanlab:secret@127.0.0.1:5432/db": "postgres://wanlab:***@127.0.0.1:5432/db",
		"postgres://wanlab@127.0.0.1/db":             "postgres://wanlab@127.0.0.1/db",
		"wanlab.db":                                  "wanlab.db",
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestUpgradeFromVersion1: an archive written by a wanlab with schema 1
// (measure runs only) opens with its runs intact and gains steps' results
// and jobs.
func TestUpgradeFromVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at TEXT NOT NULL)`,
		migrations[0],
		`INSERT INTO schema_version VALUES (1, '2026-11-01T00:00:00Z')`,
		`INSERT INTO runs (kind, name, started_at, status) VALUES ('measure probe', 'a->b', '2026-11-01T00:00:00Z', 'done')`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	a := openArchive(t, path)
	runs, err := a.Runs(context.Background())
	if err != nil || len(runs) != 1 || runs[0].Name != "a->b" {
		t.Fatalf("runs after the upgrade: %+v, %v", runs, err)
	}
	step, err := a.StartStep(runs[0].ID, 0, "w", "x=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.AddJobs(runs[0].ID, step, []job.Record{{ID: 1, Host: "a", Status: job.OK}}); err != nil {
		t.Fatalf("jobs after the upgrade: %v", err)
	}
}

// TestConcurrentOpenOfANewArchive: two wanlab runs on one fresh SQLite
// file failed with "database is locked" about a third of the time.
func TestConcurrentOpenOfANewArchive(t *testing.T) {
	for try := range 10 {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("new%d.db", try))
		const n = 4
		errs := make(chan error, n)
		for range n {
			go func() {
				a, err := Open(path)
				if err == nil {
					_, err = a.StartRun(NewRun{Kind: "run", Name: "x"})
					a.Close()
				}
				errs <- err
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Fatalf("try %d: %v", try, err)
			}
		}
	}
}

// TestReadOnlyArchive: reading verbs work on an archive they may not
// write, instead of failing with "is it a SQLite file?".
func TestReadOnlyArchive(t *testing.T) {
	if path := os.Getenv("ARCHIVE_READ"); path != "" {
		// The reader, run as user nobody by the test below.
		a, err := OpenReadOnly(path)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		runs, err := a.Runs(context.Background())
		if err != nil || len(runs) != 1 {
			t.Fatalf("%v %+v", err, runs)
		}
		fmt.Printf("runs: %d %s\n", len(runs), runs[0].Name)
		return
	}
	testsupport.NeedRoot(t) // to read as another user
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	path := filepath.Join(dir, "ro.db")
	a, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := a.StartRun(NewRun{Kind: "run", Name: "kept"})
	a.EndRun(id, StatusDone, "", nil)
	a.Close()
	os.Chmod(path, 0o444)
	exe := filepath.Join(dir, "reader")
	b, _ := os.ReadFile(os.Args[0])
	os.WriteFile(exe, b, 0o755)
	cmd := exec.Command(exe, "-test.run=^TestReadOnlyArchive$", "-test.v")
	cmd.Env = append(os.Environ(), "ARCHIVE_READ="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "runs: 1 kept") {
		t.Errorf("reading as nobody: %v\n%s", err, out)
	}
}

// TestPasswordNeverPrinted: a postgres URL's password is not in an error.
func TestPasswordNeverPrinted(t *testing.T) {
	for _, dsn := range []string{
		"postgres://wanlab:s3cr3t-pw@127.0.0.1:1/x?connect_timeout=1",
		"postgres://wanlab:s3cr3t-pw@[::1:bad/x",
	} {
		_, err := Open(dsn)
		if err == nil || strings.Contains(err.Error(), "s3cr3t-pw") {
			t.Errorf("Open(%q): %v", dsn, err)
		}
	}
}

package archive

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRunsAndSamples(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	a, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	id, err := a.StartRun("measure throughput", "a->b", "t1", "test", map[string]int{"streams": 4})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_800_000_000, 0)
	samples := []Sample{
		{T: t0, Metric: "bandwidth.achievable", Subject: "a->b", Value: 9.5e6, Unit: "bit/s"},
		{T: t0.Add(time.Second), Metric: "bandwidth.achievable", Subject: "a->b", Value: 9.6e6, Unit: "bit/s"},
	}
	if err := a.AddSamples(id, samples); err != nil {
		t.Fatal(err)
	}
	// A second run that never ends: it stays, marked running.
	cut, _ := a.StartRun("measure probe", "a->b", "t1", "test", nil)
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
	a.db.Exec(`INSERT INTO schema_version VALUES (99, 'future')`)
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
	a, err := Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	id, _ := a.StartRun("bench", "x", "", "", nil)
	batch := make([]Sample, 10000)
	for i := range batch {
		batch[i] = Sample{T: time.Unix(int64(i), 0), Metric: "bandwidth.achievable", Subject: "a->b stream 1", Value: float64(i), Unit: "bit/s"}
	}
	b.ResetTimer()
	for b.Loop() {
		if err := a.AddSamples(id, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(batch)*b.N)/b.Elapsed().Seconds(), "samples/s")
}

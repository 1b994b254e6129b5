package taskfarm

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/job"
)

// farm runs a master and its workers (split over hostsOfWorkers) on loopback.
func farm(t *testing.T, spec MasterSpec, hostsOfWorkers int, records *int) (Result, []WorkerResult) {
	t.Helper()
	m, err := Listen(spec, limits.Default, bind.Local{Addr: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	wres := make(chan WorkerResult, hostsOfWorkers)
	for h := range hostsOfWorkers {
		n := spec.Workers / hostsOfWorkers
		if h < spec.Workers%hostsOfWorkers {
			n++
		}
		go func() {
			wres <- RunWorkers(ctx, WorkerSpec{Address: fmt.Sprintf("127.0.0.1:%d", m.Port()), Workers: n}, time.Minute)
		}()
	}
	var mu sync.Mutex
	res := m.Run(ctx, func(r job.Record) {
		mu.Lock()
		defer mu.Unlock()
		if r.Status != job.OK || r.End.Before(r.Start) || r.Bytes != int64(spec.ResultSize) {
			t.Errorf("task record %+v", r)
		}
		*records++
	})
	var ws []WorkerResult
	for range hostsOfWorkers {
		ws = append(ws, <-wres)
	}
	return res, ws
}

func TestFarmRunsEveryTask(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec MasterSpec
	}{
		{"sleep prefetch 1", MasterSpec{Tasks: 40, Duration: 10 * time.Millisecond, Work: WorkSleep, ResultSize: 100, Prefetch: 1, Workers: 4}},
		{"cpu big results prefetch 3", MasterSpec{Tasks: 30, Duration: time.Millisecond, Work: WorkCPU, ResultSize: 100 << 10, Prefetch: 3, Workers: 3}},
		{"zero length", MasterSpec{Tasks: 5000, Work: WorkSleep, Prefetch: 4, Workers: 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var records int
			res, ws := farm(t, tc.spec, 2, &records)
			if res.Error != "" || res.Completed != tc.spec.Tasks {
				t.Fatalf("completed %d of %d: %s", res.Completed, tc.spec.Tasks, res.Error)
			}
			var tasks int64
			for _, w := range ws {
				if w.Error != "" {
					t.Fatal(w.Error)
				}
				tasks += w.Tasks
			}
			if tasks != int64(tc.spec.Tasks) || records != tc.spec.Tasks {
				t.Errorf("workers ran %d tasks, %d reported; want %d", tasks, records, tc.spec.Tasks)
			}
			if res.ResultBytes != int64(tc.spec.Tasks*tc.spec.ResultSize) {
				t.Errorf("result bytes %d, want %d", res.ResultBytes, tc.spec.Tasks*tc.spec.ResultSize)
			}
			// Total time is at least the work divided among the workers.
			ideal := time.Duration(tc.spec.Tasks/tc.spec.Workers) * tc.spec.Duration
			if got := time.Duration(res.Seconds * float64(time.Second)); got < ideal {
				t.Errorf("took %v, less than the ideal %v", got, ideal)
			}
		})
	}
}

func TestMissingWorkersTimeOut(t *testing.T) {
	m, err := Listen(MasterSpec{Tasks: 1, Work: WorkSleep, Prefetch: 1, Workers: 2, ConnectTimeout: 200 * time.Millisecond}, limits.Default, bind.Local{Addr: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	go RunWorkers(context.Background(), WorkerSpec{Address: fmt.Sprintf("127.0.0.1:%d", m.Port()), Workers: 1}, time.Minute)
	res := m.Run(context.Background(), func(job.Record) {})
	if !strings.Contains(res.Error, "1 of 2 connected") {
		t.Fatalf("error %q does not say how many workers came", res.Error)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		spec MasterSpec
		want string
	}{
		{MasterSpec{Tasks: 0, Work: WorkSleep, Prefetch: 1, Workers: 1}, "tasks must be at least 1"},
		{MasterSpec{Tasks: 1, Work: "dance", Prefetch: 1, Workers: 1}, `work "dance"`},
		{MasterSpec{Tasks: 1, Work: WorkSleep, Prefetch: 0, Workers: 1}, "prefetch"},
		// A role with 200,000 workers took an agent from 32 to 427 MB in 3 s.
		{MasterSpec{Tasks: 1, Work: WorkSleep, Prefetch: 1, Workers: 200_000}, "workers 200000: over the agent's limit"},
		{MasterSpec{Tasks: 1_000_000, Work: WorkSleep, Prefetch: 1, Workers: 1, Duration: time.Hour}, "ideal time"},
		{MasterSpec{Tasks: 1000, Work: WorkSleep, Prefetch: 1, Workers: 1, ResultSize: MaxResultSize}, "the results"},
	} {
		if err := tc.spec.Validate(limits.Limits{MaxDuration: time.Hour, MaxBytes: 1 << 30, MaxConnections: 1024}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.spec, err, tc.want)
		}
	}
}

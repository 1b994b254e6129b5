package taskfarm

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// TestWorkersEndWithTheirContext: a worker's task of a minute on the CPU
// went on after its controller was gone. Workers end within a slice of
// their context's end, whatever their task, and send no result for it.
func TestWorkersEndWithTheirContext(t *testing.T) {
	for _, work := range []string{WorkCPU, WorkSleep} {
		t.Run(work, func(t *testing.T) {
			tok := token.New()
			m, err := Listen(MasterSpec{Tasks: 4, Duration: time.Minute, Work: work, Prefetch: 2, Workers: 1, Token: tok},
				limits.Default, bind.Local{Addr: "127.0.0.1"})
			if err != nil {
				t.Fatal(err)
			}
			mctx, stopMaster := context.WithCancel(context.Background())
			defer stopMaster()
			tasks := make(chan job.Record, 4)
			mastered := make(chan Result, 1)
			go func() { mastered <- m.Run(mctx, func(r job.Record) { tasks <- r }) }()

			started := make(chan struct{})
			var once sync.Once
			taskStarted = func(uint32) { once.Do(func() { close(started) }) }
			defer func() { taskStarted = func(uint32) {} }()
			ctx, cancel := context.WithCancel(context.Background())
			worked := make(chan WorkerResult, 1)
			go func() {
				worked <- RunWorkers(ctx, WorkerSpec{Address: fmt.Sprintf("127.0.0.1:%d", m.Port()), Workers: 1, Token: tok}, time.Hour)
			}()
			select {
			case <-started: // the worker is in its first task
			case <-time.After(10 * time.Second):
				t.Fatal("the worker did not start a task within 10 s")
			}
			cancel()
			select {
			case res := <-worked:
				if res.Tasks != 0 || res.Error != "" {
					t.Errorf("workers stopped in their first task: %+v, want no task done and no error", res)
				}
			case <-time.After(3 * time.Second):
				t.Fatalf("the worker still runs its %s task 3 s after its context ended", work)
			}
			stopMaster()
			if res := <-mastered; res.Completed != 0 {
				t.Errorf("the master got %d results of tasks cut short", res.Completed)
			}
			if len(tasks) != 0 {
				t.Errorf("%d tasks reported done", len(tasks))
			}
		})
	}
}

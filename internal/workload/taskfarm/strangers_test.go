package taskfarm

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/testsupport"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// TestStrangersDoNotBreakAFarm: strangers connected to the master's port
// before its workers cost the farm nothing (one silent connection once
// held the master's token check, inline, until the farm's connect timeout).
func TestStrangersDoNotBreakAFarm(t *testing.T) {
	tests := []struct {
		name      string
		strangers int
	}{
		{"one silent connection", 1},
		{"a port full of them", token.MaxPending + 36},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok := token.New()
			spec := MasterSpec{Tasks: 4, Work: WorkSleep, Prefetch: 1, Workers: 2, ConnectTimeout: 5 * time.Second, Token: tok}
			m, err := Listen(spec, limits.Default, bind.Local{Addr: "127.0.0.1"})
			if err != nil {
				t.Fatal(err)
			}
			addr := fmt.Sprintf("127.0.0.1:%d", m.Port())
			// The strangers come first: the master meets them first.
			strangers := testsupport.DialStrangers(t, addr, tc.strangers)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done := make(chan Result, 1)
			go func() { done <- m.Run(ctx, func(job.Record) {}) }()
			strangers.WaitClosed(t, tc.strangers-token.MaxPending)
			go RunWorkers(ctx, WorkerSpec{Address: addr, Workers: spec.Workers, Token: tok}, time.Minute)
			if res := <-done; res.Error != "" || res.Completed != spec.Tasks {
				t.Errorf("with %d strangers: %d of %d tasks completed (%s)", tc.strangers, res.Completed, spec.Tasks, res.Error)
			}
		})
	}
}

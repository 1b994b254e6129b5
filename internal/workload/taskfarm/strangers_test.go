package taskfarm

import (
	"context"
	"fmt"
	"net"
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
// held the master's token check, inline, until the farm's connect
// timeout), and nor does a connection that presents the token but never
// its hello (the master once read each hello inline, within the farm's
// own deadline).
func TestStrangersDoNotBreakAFarm(t *testing.T) {
	tests := []struct {
		name      string
		strangers int  // silent connections from another address
		mute      bool // a connection presents the token, then sends nothing
	}{
		{"one silent connection", 1, false},
		{"a port full of them", token.Margin + 36, false},
		{"a token but no hello", 0, true},
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
			strangers := testsupport.DialStrangersFrom(t, addr, "127.0.0.2", tc.strangers)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if tc.mute {
				muteWorker(t, addr, tok)
			}
			done := make(chan Result, 1)
			go func() { done <- m.Run(ctx, func(job.Record) {}) }()
			strangers.WaitClosed(t, tc.strangers-token.Margin)
			go RunWorkers(ctx, WorkerSpec{Address: addr, Workers: spec.Workers, Token: tok}, time.Minute)
			if res := <-done; res.Error != "" || res.Completed != spec.Tasks {
				t.Errorf("%s: %d of %d tasks completed (%s)", tc.name, res.Completed, spec.Tasks, res.Error)
			}
		})
	}
}

// muteWorker connects to the master at addr, presents the token and
// sends nothing more; it closes when the test ends.
func muteWorker(t *testing.T, addr string, tok token.Token) {
	t.Helper()
	c, err := net.Dial("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write(tok.Greeting()); err != nil {
		t.Fatal(err)
	}
}

// TestMasterEndsWhileAwaitingAHello: the master read a worker's hello for
// up to 10 s whatever its context; it ends as soon as its context does.
func TestMasterEndsWhileAwaitingAHello(t *testing.T) {
	tok := token.New()
	spec := MasterSpec{Tasks: 4, Work: WorkSleep, Prefetch: 1, Workers: 1, ConnectTimeout: time.Minute, Token: tok}
	m, err := Listen(spec, limits.Default, bind.Local{Addr: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	watch := testsupport.WatchReads(m.ln)
	m.ln = watch
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Result, 1)
	go func() { done <- m.Run(ctx, func(job.Record) {}) }()
	muteWorker(t, fmt.Sprintf("127.0.0.1:%d", m.Port()), tok)
	watch.Wait(t) // the master reads the hello
	cancel()
	select {
	case res := <-done:
		if res.Error == "" {
			t.Error("a master stopped before its workers came reports no error")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the master still awaits a hello 2 s after its context ended")
	}
}

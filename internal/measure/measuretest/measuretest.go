// Package measuretest serves agents for the tests of measurements: an
// agent's server on a socket, reached as a measure.Endpoint. The workload
// kinds' tests import it from their external test packages (the agent's
// server imports the workloads, so their own package cannot).
package measuretest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/agent"
	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/datadir"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/measure"
)

// Agent serves an agent with limits lim on a socket in a temporary
// directory and returns an endpoint for it on loopback, and a function
// that kills it. Both end with the test.
func Agent(t testing.TB, host string, lim limits.Limits) (measure.Endpoint, context.CancelFunc) {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, host+".sock")
	data, err := datadir.Open(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := &agent.Server{Host: host, Version: "test", Limits: lim, Data: data}
	served := make(chan error, 1)
	go func() { served <- srv.ServeSocket(ctx, sock) }()
	t.Cleanup(func() { cancel(); <-served })
	// The socket appears as the server starts: wait for it, generously on
	// a loaded machine.
	var c *agentapi.Client
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c, err = agentapi.Dial(context.Background(), host, sock); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("dialling the agent of %s: %v", host, err)
	}
	t.Cleanup(func() { c.Close() })
	return measure.Endpoint{Host: host, Addr: "127.0.0.1", Agent: c}, cancel
}

package mesh

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/testsupport"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// TestStrangersAreBounded: plain connections to a node's port wait for
// their token at most token.MaxPending at once, the oldest dropped for new
// ones (each once waited 30 s, without bound), and the mesh's own streams
// still get in.
func TestStrangersAreBounded(t *testing.T) {
	tok := token.New()
	srv, err := Listen(0, bind.Local{Addr: "127.0.0.1"}, tok, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { srv.Serve(ctx); close(served) }()
	defer func() { cancel(); <-served }()
	addr := fmt.Sprintf("127.0.0.1:%d", srv.Port())
	const n = 3 * token.MaxPending
	testsupport.DialStrangers(t, addr, n).WaitClosed(t, n-token.MaxPending)
	spec := NodeSpec{
		Host: "a", Peers: []Peer{{Name: "b", Address: addr, Weight: 1}}, Token: tok,
		Sizes: []int64{256 << 10}, Streams: 4, Duration: 200 * time.Millisecond, Seed: 1,
	}
	sum, err := Loop(ctx, spec, nil, func(job.Record) {})
	if err != nil || sum.Transfers == 0 || sum.Failed != 0 {
		t.Errorf("with %d strangers connected: %+v, %v", n, sum, err)
	}
}

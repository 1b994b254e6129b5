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

// TestStrangersAreBounded: plain connections from one address to a node's
// port wait for their token at most max(its connection limit,
// token.Margin) at once, new ones closed past that (each once waited 30 s,
// without bound), and the mesh's own streams still get in.
func TestStrangersAreBounded(t *testing.T) {
	tok := token.New()
	srv, err := Listen(0, bind.Local{Addr: "127.0.0.1"}, tok, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	srv.MaxConnections = 8
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { srv.Serve(ctx); close(served) }()
	defer func() { cancel(); <-served }()
	addr := fmt.Sprintf("127.0.0.1:%d", srv.Port())
	const n = 3 * token.Margin
	testsupport.DialStrangersFrom(t, addr, "127.0.0.2", n).WaitClosed(t, n-token.Margin)
	spec := NodeSpec{
		Host: "a", Peers: []Peer{{Name: "b", Address: addr, Weight: 1}}, Token: tok,
		Sizes: []int64{256 << 10}, Streams: 4, Duration: 200 * time.Millisecond, Seed: 1,
	}
	sum, err := Loop(ctx, spec, nil, func(job.Record) {})
	if err != nil || sum.Transfers == 0 || sum.Failed != 0 {
		t.Errorf("with %d strangers connected: %+v, %v", n, sum, err)
	}
}

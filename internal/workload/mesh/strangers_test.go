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
// port wait for their token at most max(the streams its peers open,
// token.Margin) at once, new ones closed past that (each once waited 30 s,
// without bound), and the mesh's own streams still get in.
func TestStrangersAreBounded(t *testing.T) {
	tok := token.New()
	srv, err := Listen(0, bind.Local{Addr: "127.0.0.1"}, tok, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", srv.Port())
	spec := NodeSpec{
		Host: "a", Peers: []Peer{{Name: "b", Address: addr, Weight: 1}}, Token: tok,
		Sizes: []int64{256 << 10}, Streams: 4, Duration: 200 * time.Millisecond, Seed: 1,
	}
	srv.Expect = spec.Connections()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { srv.Serve(ctx); close(served) }()
	defer func() { cancel(); <-served }()
	const n = 3 * token.Margin
	testsupport.DialStrangersFrom(t, addr, "127.0.0.2", n).WaitClosed(t, n-token.Margin)
	sum, err := Loop(ctx, spec, nil, func(r job.Record) {
		if r.Status != job.OK {
			t.Errorf("transfer %d with %d strangers connected: %s %s", r.ID, n, r.Status, r.Reason)
		}
	})
	if err != nil || sum.Transfers == 0 || sum.Failed != 0 {
		t.Errorf("with %d strangers connected: %+v, %v", n, sum, err)
	}
}

// TestExpect: a node's listener expects its peers' streams, not the
// agent's connection limit (1,024 by default, which let one stranger hold
// as many connections awaiting their token).
func TestExpect(t *testing.T) {
	peers := []Peer{{Name: "b"}, {Name: "c"}, {Name: "d"}}
	for _, tc := range []struct {
		spec  NodeSpec // its Connections set Expect, if it has peers
		limit int
		want  int
	}{
		{NodeSpec{}, 1024, 1024},
		{NodeSpec{Peers: peers, Streams: 8}, 1024, 27},
		{NodeSpec{Peers: peers, Streams: 500}, 1024, 1024},
	} {
		srv := &Server{}
		if len(tc.spec.Peers) > 0 {
			srv.Expect = tc.spec.Connections()
		}
		if got := srv.expect(tc.limit); got != tc.want {
			t.Errorf("%d peers of %d streams, %d connections at most: expects %d, want %d", len(tc.spec.Peers), tc.spec.Streams, tc.limit, got, tc.want)
		}
	}
}

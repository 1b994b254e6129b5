package mesh

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// unlimited is the weight, in bit/s, of a peer nothing limits the way to.
const unlimited = 10e9

// run starts a node on every host of the mesh and collects their
// transfers until every loop is done.
func run(ctx context.Context, env kind.Env, m *Spec) (*kind.Outcome, error) {
	nodes := make([]kind.Started, len(m.Hosts))
	var errs []error
	for i, host := range m.Hosts {
		spec := &Node{Port: m.Port, Disk: m.Disk, NodeSpec: NodeSpec{
			Peers: peers(env, host, m), Sizes: m.Sizes, Streams: m.Streams, MaxWait: m.MaxWait, Duration: m.Duration,
			Seed: env.Seed() + uint64(i), FirstJob: i * 1_000_000, Token: env.Token(),
		}}
		r, err := env.Start(ctx, host, fmt.Sprintf("%s-node%d", env.ID(), i), RoleNode, spec, true)
		if err != nil {
			errs = append(errs, err)
			break
		}
		nodes[i] = r
	}
	var mu sync.Mutex
	var jobs []job.Record
	add := func(r job.Record) {
		env.Expect(1)
		mu.Lock()
		jobs = append(jobs, r)
		mu.Unlock()
		env.Done(r)
	}
	var wg sync.WaitGroup
	for _, n := range nodes {
		if n == nil {
			continue
		}
		wg.Go(func() {
			var sum Summary
			if err := n.Summary(add, &sum); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	// Every node serves the others until all have finished their loops.
	for _, n := range nodes {
		if n != nil {
			n.Stop(ctx)
			n.Drain()
		}
	}
	return outcome(jobs), errors.Join(errs...)
}

// outcome is a mesh step's figures: its transfers' and the bytes they
// moved, in all and over the step.
func outcome(jobs []job.Record) *kind.Outcome {
	o := &kind.Outcome{Jobs: jobs, Metrics: kind.JobMetrics(jobs)}
	var bytes int64
	for _, j := range jobs {
		bytes += j.Bytes
	}
	o.Metrics[results.Transfers] = float64(len(jobs))
	o.Metrics[results.Bytes] = float64(bytes)
	if span := kind.JobSpan(jobs); span > 0 {
		o.Metrics[results.AggregateMbps] = float64(bytes) * 8 / span / 1e6
	}
	return o
}

// peers are the other nodes of host's mesh, each weighted by the rate
// host's traffic to it can get (env.Bottleneck: its site's access link,
// or the path's bottleneck), in Mbit/s.
func peers(env kind.Env, host string, m *Spec) []Peer {
	var peers []Peer
	for _, p := range m.Hosts {
		if p == host {
			continue
		}
		rate := env.Bottleneck(host, p)
		if rate <= 0 {
			rate = unlimited
		}
		peers = append(peers, Peer{Name: p, Address: net.JoinHostPort(env.Addr(p), strconv.Itoa(m.Port)), Weight: rate / 1e6})
	}
	return peers
}

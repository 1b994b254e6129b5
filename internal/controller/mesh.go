package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/wanlab/wanlab/internal/agent"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/mesh"
)

// runMesh starts a node on every host of the mesh and collects their
// transfers until every loop is done.
func runMesh(ctx context.Context, env *stepEnv, m *scenario.Mesh) (*outcome, error) {
	nodes := make([]*measure.Role, len(m.Hosts))
	var errs []error
	for i, host := range m.Hosts {
		spec := agent.MeshNodeSpec{Port: m.Port, Disk: m.Disk, NodeSpec: mesh.NodeSpec{
			Peers: meshPeers(env, host, m), Sizes: m.Sizes, Streams: m.Streams, MaxWait: m.MaxWait, Duration: m.Duration,
			Seed: env.seed + uint64(i), FirstJob: i * 1_000_000, Token: env.token,
		}}
		r, err := measure.StartRole(ctx, env.hosts[host], fmt.Sprintf("%s-node%d", env.id, i), agent.RoleMeshNode, spec, true)
		if err != nil {
			errs = append(errs, err)
			break
		}
		nodes[i] = r
	}
	c := &collect{env: env}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range nodes {
		if n == nil {
			continue
		}
		wg.Go(func() {
			var sum mesh.Summary
			if err := n.Summary(func(r job.Record) { env.expected.add(1); c.add(r) }, &sum); err != nil {
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
	o := &outcome{jobs: c.jobs, metrics: kind.JobMetrics(c.jobs)}
	var bytes int64
	for _, j := range c.jobs {
		bytes += j.Bytes
	}
	o.metrics[results.Transfers] = float64(len(c.jobs))
	o.metrics[results.Bytes] = float64(bytes)
	if span := jobSpan(c.jobs); span > 0 {
		o.metrics[results.AggregateMbps] = float64(bytes) * 8 / span / 1e6
	}
	return o, errors.Join(errs...)
}

// meshPeers weights each peer of host by its site's bandwidth (the lower of
// its access link's two directions), or for a host without a site by the
// bottleneck of the path to it.
func meshPeers(env *stepEnv, host string, m *scenario.Mesh) []mesh.Peer {
	var peers []mesh.Peer
	for _, p := range m.Hosts {
		if p == host {
			continue
		}
		weight := 10e9 // an unlimited path
		peer, _ := env.topo.Host(p)
		if peer.Site != "" {
			up, _ := env.topo.Direction("site " + peer.Site + " up")
			down, _ := env.topo.Direction("site " + peer.Site + " down")
			weight = minRate(float64(up.Config.Rate), float64(down.Config.Rate))
		} else if path, ok := env.topo.Path(host, p); ok && path.Bottleneck > 0 {
			weight = path.Bottleneck
		}
		peers = append(peers, mesh.Peer{Name: p, Address: fmt.Sprintf("%s:%d", peer.Addr, m.Port), Weight: weight / 1e6})
	}
	return peers
}

// minRate is the lower of two rates where 0 means unlimited.
func minRate(a, b float64) float64 {
	switch {
	case a == 0 && b == 0:
		return 10e9
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

package eventdb

import (
	"maps"
	"testing"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
)

// TestFit: a measured step gives the server's CPU per page (of its one
// client host's path, or of every path), each client host's CPU per page
// received beyond what its jobs burn on their events when every job
// finished, and each client's path efficiency (pages over the bytes its
// link carried).
func TestFit(t *testing.T) {
	one := smallSpec(ModelSingle, 0)
	one.Clients = []string{"c1"}
	jobs := func(status ...string) []job.Record {
		var js []job.Record
		for i, s := range status {
			js = append(js, job.Record{ID: i, Host: "c1", Status: s, Bytes: 5e6})
		}
		return js
	}
	// 10 s; the server used 40% of a core for 10,000 pages; c1 50% for its
	// 2 jobs of 10 events at 2 ms each (0.04 s) and 10 MB of pages
	// (1e7/8192 pages); its link carried 10 Mbit/s for the 8 Mbit/s of
	// pages.
	metrics := results.Metrics{results.ServerPages: 10000, "cpu_pct.srv": 40, "cpu_pct.c1": 50, "link_mbps.srv->c1": 10}
	idle := maps.Clone(metrics)
	idle["cpu_pct.c1"] = 0.1 // 0.01 s: less than its jobs burnt
	recv := (5 - 0.04) * 8192 / 1e7
	for _, c := range []struct {
		name    string
		spec    *Spec
		metrics results.Metrics
		jobs    []job.Record
		want    map[string]float64
	}{
		{"one client host", one, metrics, jobs(job.OK, job.OK), map[string]float64{
			"server_cpu_s_per_page.c1": 4e-4, "client_cpu_s_per_page.c1": recv, "tcp_efficiency.srv->c1": 0.8}},
		{"a job timed out: no client CPU", one, metrics, jobs(job.OK, job.Timeout), map[string]float64{
			"server_cpu_s_per_page.c1": 4e-4, "tcp_efficiency.srv->c1": 0.8}},
		{"two client hosts: every path's server CPU", smallSpec(ModelSingle, 0), metrics, jobs(job.OK, job.OK), map[string]float64{
			"server_cpu_s_per_page": 4e-4, "client_cpu_s_per_page.c1": recv, "tcp_efficiency.srv->c1": 0.8}},
		{"a client that used less than its jobs burnt: none received", one, idle, jobs(job.OK, job.OK), map[string]float64{
			"server_cpu_s_per_page.c1": 4e-4, "client_cpu_s_per_page.c1": 0, "tcp_efficiency.srv->c1": 0.8}},
	} {
		got, err := fit(pathEnv(), kind.Measured{Spec: c.spec, Metrics: c.metrics, Seconds: 10, Jobs: c.jobs})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		kindtest.CheckFit(t, c.name, got, c.want)
	}
	if got, _ := fit(pathEnv(), kind.Measured{Spec: one, Metrics: metrics}); len(got) != 0 {
		t.Errorf("a step of unknown length: %v", got)
	}
}

// TestFittedParams: the params calibration fits are the ones the model
// reads: per client host first.
func TestFittedParams(t *testing.T) {
	env := pathEnv()
	env.Fitted = map[string]float64{"server_cpu_s_per_page.c1": 0.003, "client_cpu_s_per_event.c2": 0.5, "client_cpu_s_per_page.c2": 0.25, "tcp_efficiency.srv->c1": 0.5}
	s := smallSpec(ModelSingle, 0)
	if got := s.serverCPU(env, "c1"); got != 0.003 {
		t.Errorf("server CPU for c1: %g", got)
	}
	if got := s.serverCPU(env, "c2"); got != 0.001 {
		t.Errorf("server CPU for c2: %g, want the step's", got)
	}
	if got := s.clientCPU(env, "c2"); got != 0.5 {
		t.Errorf("client CPU of c2: %g", got)
	}
	if got, none := s.clientRecv(env, "c2"), s.clientRecv(env, "c1"); got != 0.25 || none != 0 {
		t.Errorf("client CPU per page received: c2 %g, c1 %g (want 0.25 and none)", got, none)
	}
	actors, err := s.build(env)
	if err != nil {
		t.Fatal(err)
	}
	var reply int64
	for _, op := range actors[2].Ops {
		if op.Do == "repeat" {
			reply = op.Body[0].Body[0].Reply
		}
	}
	if actors[2].Host != "c1" || reply != 16384 {
		t.Errorf("a page to c1 at efficiency 0.5: %d bytes on the wire, want 16384 (%+v)", reply, actors[2].Ops)
	}
}

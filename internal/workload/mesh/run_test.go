package mesh

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
)

// meshEnv runs a mesh's nodes in this process, host hN on the loopback
// address 127.0.0.N, all on one port, as a mesh's nodes are.
func meshEnv(t *testing.T, hosts []string) *kindtest.Env {
	env := kindtest.NewEnv(t, Kind)
	env.Addrs = map[string]string{}
	for _, h := range hosts {
		env.Addrs[h] = "127.0.0." + strings.TrimPrefix(h, "h")
	}
	return env
}

// freePort is a port free on the loopback addresses, for a mesh's nodes.
func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestRun runs a mesh of three nodes in this process, from memory and
// from disk to disk: every node moves files until its time is up, serves
// the others until the controller stops it, and the step's figures add up.
func TestRun(t *testing.T) {
	for _, disk := range []bool{false, true} {
		t.Run(fmt.Sprintf("disk %v", disk), func(t *testing.T) {
			const size = 64 << 10
			spec := &Spec{Hosts: []string{"h1", "h2", "h3"}, Duration: 500 * time.Millisecond, MaxWait: 20 * time.Millisecond,
				Sizes: []int64{size}, Streams: 2, Port: freePort(t), Disk: disk}
			env := meshEnv(t, spec.Hosts)
			o, err := Kind.Run(context.Background(), env, spec)
			if err != nil {
				t.Fatal(err)
			}
			if len(o.Jobs) < len(spec.Hosts) || len(env.Jobs()) != len(o.Jobs) || env.Expected() != len(o.Jobs) {
				t.Fatalf("%d transfers, %d done of %d expected", len(o.Jobs), len(env.Jobs()), env.Expected())
			}
			from := map[string]int{}
			for _, j := range o.Jobs {
				from[j.Host]++
				if j.Status != job.OK || j.Bytes != 2*size {
					t.Errorf("transfer %d (%s): %s %s, %d bytes", j.ID, j.Subject, j.Status, j.Reason, j.Bytes)
				}
			}
			if len(from) != len(spec.Hosts) {
				t.Errorf("transfers from %v, want from every host", from)
			}
			if o.Metrics["transfers"] != float64(len(o.Jobs)) || o.Metrics["bytes"] != float64(2*size*len(o.Jobs)) ||
				o.Metrics["aggregate_mbps"] <= 0 || o.Metrics["jobs_ok"] != float64(len(o.Jobs)) {
				t.Errorf("figures %v", o.Metrics)
			}
			for _, r := range env.Started() {
				if !r.Ended() || r.Streams() != 2 {
					t.Errorf("node on %s: ended %v, %d streams", r.Host, r.Ended(), r.Streams())
				}
			}
		})
	}
}

// TestRunNodeFails: a node that cannot start ends the step with its error,
// and the nodes started before it run their loops (their transfers to it
// failing) and are stopped.
func TestRunNodeFails(t *testing.T) {
	spec := &Spec{Hosts: []string{"h1", "h2"}, Duration: 300 * time.Millisecond, Sizes: []int64{1 << 10}, Streams: 2, Port: freePort(t)}
	env := meshEnv(t, spec.Hosts)
	env.Down = []string{"h2"}
	o, err := Kind.Run(context.Background(), env, spec)
	if err == nil || !strings.Contains(err.Error(), "agent on h2: unreachable") {
		t.Errorf("%v, want the second node's error", err)
	}
	if started := env.Started(); len(started) != 1 || !started[0].Ended() {
		t.Errorf("the first node was not stopped")
	}
	if len(o.Jobs) == 0 || o.Metrics["jobs_failed"] != float64(len(o.Jobs)) {
		t.Errorf("transfers %+v, want every one failed", o.Jobs)
	}
}

// TestPeers: each peer is weighted by the rate to it in Mbit/s, 10 Gbit/s
// when nothing limits it, at the mesh's port.
func TestPeers(t *testing.T) {
	env := meshEnv(t, []string{"h1", "h2", "h3"})
	env.Bottlenecks = map[[2]string]float64{{"h1", "h2"}: 100e6, {"h1", "h3"}: 0}
	got := peers(env, "h1", &Spec{Hosts: []string{"h1", "h2", "h3"}, Port: 5300})
	want := []Peer{{Name: "h2", Address: "127.0.0.2:5300", Weight: 100}, {Name: "h3", Address: "127.0.0.3:5300", Weight: 10000}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("peers %v, want %v", got, want)
	}
}

func TestRunRefusesAnotherSpec(t *testing.T) {
	var other struct{ kind.Spec }
	if _, err := Kind.Run(context.Background(), kindtest.NewEnv(t, Kind), other); err == nil {
		t.Error("ran a spec of another kind")
	}
	if _, err := nodeRole.Run(context.Background(), nil, nil); err == nil {
		t.Error("ran a node without its spec")
	}
}

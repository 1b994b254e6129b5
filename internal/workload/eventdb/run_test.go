package eventdb

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
)

func TestRun(t *testing.T) {
	spec := &Spec{Server: "s", Clients: []string{"c1", "c2"}, Store: Store{Events: 100, EventSize: 40000, PageSize: 8192},
		EventsPerJob: 5, Jobs: 3, ServerModel: ModelConnection, Timeout: 10 * time.Second}
	for _, tc := range []struct {
		name    string
		down    string
		jobs    int
		wantErr string
	}{
		{name: "every job reads its events", jobs: 6},
		{name: "a client host refuses", down: "c2", jobs: 3, wantErr: "agent on c2: unreachable"},
		{name: "the server's host refuses", down: "s", wantErr: "agent on s: unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := kindtest.NewEnv(t, Kind)
			env.Down = []string{tc.down}
			o, err := Kind.Run(context.Background(), env, spec)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			if tc.jobs == 0 {
				if o != nil {
					t.Errorf("outcome %+v without a server", o)
				}
				return
			}
			if len(o.Jobs) != tc.jobs || len(env.Jobs()) != tc.jobs || env.Expected() != 6 {
				t.Fatalf("%d jobs, %d done of %d expected", len(o.Jobs), len(env.Jobs()), env.Expected())
			}
			var read float64
			for _, j := range o.Jobs {
				if j.Status != job.OK {
					t.Errorf("job %d on %s: %s %s", j.ID, j.Host, j.Status, j.Reason)
				}
				read += float64(j.Bytes)
			}
			m := o.Metrics
			if m[results.Jobs] != 6 || m[results.JobsPerClient] != 3 || m["jobs_ok"] != float64(tc.jobs) {
				t.Errorf("figures %v", m)
			}
			// The server sent what the jobs read, each page one request.
			if m[results.ServerPages]*8192 != read || m[results.ThroughputMbps] <= 0 {
				t.Errorf("the server sent %v pages, the jobs read %v B; throughput %v Mbit/s", m[results.ServerPages], read, m[results.ThroughputMbps])
			}
			var started []string
			for _, r := range env.Started() {
				started = append(started, r.Host+" "+r.ID+" "+r.Name)
			}
			if !slices.Contains(started, "s step0-server eventdb-server") || !slices.Contains(started, "c1 step0-client0 eventdb-client") {
				t.Errorf("roles started: %q", started)
			}
		})
	}
}

// TestRunSeveralServers runs a step of two servers on loopback: each
// client's jobs read from its own server (client i from servers[i mod
// 2]) and name it; the step's figures are both servers' together; when a
// server cannot start, the one started is stopped and the step fails.
func TestRunSeveralServers(t *testing.T) {
	spec := &Spec{Servers: []string{"s1", "s2"}, Clients: []string{"c1", "c2", "c3"}, Store: Store{Events: 100, EventSize: 40000, PageSize: 8192},
		EventsPerJob: 5, Jobs: 2, ServerModel: ModelThreads, Threads: 2, Timeout: 10 * time.Second}
	t.Run("every client reads from its server", func(t *testing.T) {
		env := kindtest.NewEnv(t, Kind)
		o, err := Kind.Run(context.Background(), env, spec)
		if err != nil {
			t.Fatal(err)
		}
		servers := map[string]*kindtest.Role{} // by host
		addressOf := map[string]string{}       // a client's server's address, by client host
		for _, r := range env.Started() {
			switch r.Name {
			case RoleServer:
				servers[r.Host] = r
			case RoleClient:
				addressOf[r.Host] = r.Spec.(*ClientSpec).Address
			}
		}
		if len(servers) != 2 || servers["s1"] == nil || servers["s2"] == nil || servers["s1"].ID != "step0-server0" || servers["s2"].ID != "step0-server1" {
			t.Fatalf("servers started: %+v", servers)
		}
		for host, want := range map[string]int{"s1": 4, "s2": 2} {
			if got := servers[host].Spec.(*ServerSpec).Sessions; got != want {
				t.Errorf("server %s expects %d sessions, want %d (its clients' jobs)", host, got, want)
			}
		}
		wantServer := map[string]string{"c1": "s1", "c2": "s2", "c3": "s1"}
		for client, server := range wantServer {
			if addressOf[client] != servers[server].Address() {
				t.Errorf("client %s reads from %s, want %s's %s", client, addressOf[client], server, servers[server].Address())
			}
		}
		var read float64
		for _, j := range o.Jobs {
			if j.Status != job.OK || j.Subject != wantServer[j.Host] {
				t.Errorf("job %d on %s: %s %s, subject %q (want %q)", j.ID, j.Host, j.Status, j.Reason, j.Subject, wantServer[j.Host])
			}
			read += float64(j.Bytes)
		}
		m := o.Metrics
		if len(o.Jobs) != 6 || env.Expected() != 6 || m[results.Jobs] != 6 || m[results.JobsPerClient] != 2 {
			t.Errorf("%d jobs, %d expected; figures %v", len(o.Jobs), env.Expected(), m)
		}
		if m[results.ServerPages]*8192 != read || m[results.ThroughputMbps] <= 0 {
			t.Errorf("the servers sent %v pages, the jobs read %v B; throughput %v Mbit/s", m[results.ServerPages], read, m[results.ThroughputMbps])
		}
	})
	t.Run("a server's host refuses", func(t *testing.T) {
		env := kindtest.NewEnv(t, Kind)
		env.Down = []string{"s2"}
		o, err := Kind.Run(context.Background(), env, spec)
		if err == nil || !strings.Contains(err.Error(), "agent on s2: unreachable") || o != nil {
			t.Fatalf("outcome %+v, error %v; want none, and s2's", o, err)
		}
		started := env.Started()
		if len(started) != 1 || started[0].Host != "s1" || !started[0].Ended() {
			t.Errorf("roles started %+v: want s1's server, stopped", started)
		}
	})
}

func TestRunRefusesAnotherSpec(t *testing.T) {
	var other struct{ kind.Spec }
	if _, err := Kind.Run(context.Background(), kindtest.NewEnv(t, Kind), other); err == nil {
		t.Error("ran a spec of another kind")
	}
}

func TestRolesRefuseAnotherSpec(t *testing.T) {
	for _, r := range Kind.Roles {
		if _, err := r.Run(context.Background(), nil, &struct{ kind.RoleSpec }{}); err == nil {
			t.Errorf("%s ran a spec of another role", r.Name)
		}
	}
}

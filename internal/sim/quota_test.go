package sim

import "testing"

// TestQuota: a host with a CPU quota runs its Execs at full speed until the
// 100 ms period's budget (Quota x 0.1 s of core time) is spent, then waits
// for the next period, as CFS bandwidth control does; the closed forms
// below count periods.
func TestQuota(t *testing.T) {
	needSimulator(t)
	quota := func(q float64, cores int) Host { return Host{Name: "q", Cores: cores, Speed: 1, Quota: q} }
	exec := func(s float64) Op { return Op{Do: Exec, Seconds: s} }
	sleep := func(s float64) Op { return Op{Do: Sleep, Seconds: s} }
	tests := []struct {
		name   string
		host   Host
		actors []Actor
		// end is when the last actor ends; done, if set, when each
		// actor's "done" mark is.
		end  float64
		done map[string]float64
	}{{
		name:   "a lone 1 s exec on half a core: 50 ms a period, 19 periods and a half",
		host:   quota(0.5, 1),
		actors: []Actor{actor("x", "q", exec(1))},
		end:    19*0.1 + 0.05,
	}, {
		name:   "10 bursts of 20 ms between 80 ms sleeps: as fast as on a whole core",
		host:   quota(0.5, 1),
		actors: []Actor{actor("x", "q", Op{Do: Repeat, Times: 10, Body: []Op{exec(0.02), sleep(0.08)}})},
		end:    1,
	}, {
		name:   "a burst of 70 ms: 50 ms, a wait until 100 ms, then 20 ms",
		host:   quota(0.5, 1),
		actors: []Actor{actor("x", "q", exec(0.07))},
		end:    0.12,
	}, {
		name:   "two threads share the quota: 1 s of work in all, as one thread",
		host:   quota(0.5, 1),
		actors: []Actor{actor("x", "q", exec(0.5), mark("done")), actor("y", "q", exec(0.5), mark("done"))},
		end:    1.95,
		done:   map[string]float64{"x": 1.95, "y": 1.95},
	}, {
		name: "an exec started while the host is throttled waits for the next period",
		host: quota(0.5, 1),
		actors: []Actor{
			actor("x", "q", exec(0.05), mark("done")),
			actor("y", "q", sleep(0.06), exec(0.01), mark("done")),
		},
		end:  0.11,
		done: map[string]float64{"x": 0.05, "y": 0.11},
	}, {
		name:   "1.5 cores on 2: two 1 s threads use 150 ms a period, 13 periods and 25 ms",
		host:   quota(1.5, 2),
		actors: []Actor{actor("x", "q", exec(1)), actor("y", "q", exec(1))},
		end:    13*0.1 + 0.05/2,
	}, {
		name:   "a quota of the host's cores never throttles",
		host:   quota(1, 1),
		actors: []Actor{actor("x", "q", exec(1))},
		end:    1,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := runOK(t, &Program{Platform: Platform{Hosts: []Host{tc.host}}, Actors: tc.actors})
			near(t, "end", out.End, tc.end, 1e-6)
			if !out.Ended {
				t.Error("not ended")
			}
			var work float64
			for _, a := range tc.actors {
				work += opSeconds(a.Ops)
			}
			near(t, "host CPU", out.HostCPU["q"], work, 1e-9)
			for _, m := range marksOf(out, "done") {
				near(t, m.Actor+" done", m.T, tc.done[m.Actor], 1e-6)
			}
		})
	}
}

// opSeconds is the Exec seconds of ops.
func opSeconds(ops []Op) float64 {
	var s float64
	for _, op := range ops {
		switch op.Do {
		case Exec:
			s += op.Seconds
		case Repeat:
			s += float64(op.Times) * opSeconds(op.Body)
		}
	}
	return s
}

package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// exact turns off LV08's corrections (bandwidth 0.97, latency 13.01) so
// times are the closed forms.
var exact = Config{BandwidthFactor: 1, LatencyFactor: 1}

func host(name string, cores int) Host { return Host{Name: name, Cores: cores, Speed: 1} }

// mesh joins every ordered pair of hosts by one link "a>b" of bps bits/s and
// lat seconds.
func mesh(bps, lat float64, hosts ...Host) Platform {
	p := Platform{Hosts: hosts}
	for _, a := range hosts {
		for _, b := range hosts {
			if a.Name == b.Name {
				continue
			}
			name := a.Name + ">" + b.Name
			p.Links = append(p.Links, Link{Name: name, BPS: bps, Latency: lat})
			p.Routes = append(p.Routes, Route{From: a.Name, To: b.Name, Links: []string{name}})
		}
	}
	return p
}

func actor(name, host string, ops ...Op) Actor { return Actor{Name: name, Host: host, Ops: ops} }

func daemon(name, host string, ops ...Op) Actor {
	return Actor{Name: name, Host: host, Ops: ops, Daemon: true}
}

func sink(name, host string) Actor { return daemon(name, host, Op{Do: Serve}) }

func mark(label string) Op { return Op{Do: Mark, Label: label} }

func needSimulator(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("needs bin/wanlab-sim (make build): %v", err)
	}
}

func runOK(t *testing.T, p *Program) *Output {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := Run(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func near(t *testing.T, what string, got, want, rel float64) {
	t.Helper()
	if math.Abs(got-want) > rel*math.Abs(want)+1e-9 {
		t.Errorf("%s = %.6f, want %.6f (within %.2g%%)", what, got, want, rel*100)
	}
}

// marksOf are the times of an output's marks with this label.
func marksOf(out *Output, label string) []MarkAt {
	var m []MarkAt
	for _, x := range out.Marks {
		if x.Label == label {
			m = append(m, x)
		}
	}
	return m
}

func TestRun(t *testing.T) {
	needSimulator(t)
	const MB = 1_000_000
	twoHosts := mesh(10e6, 0.01, host("a", 1), host("b", 2))
	tests := []struct {
		name  string
		prog  Program
		check func(t *testing.T, out *Output)
	}{{
		name: "one flow of 10 MB on 10 Mbit/s takes 8 s and the latency",
		prog: Program{Platform: twoHosts, Config: exact, Actors: []Actor{
			actor("c", "a", Op{Do: Send, To: "s", Bytes: 10 * MB}), sink("s", "b"),
		}},
		check: func(t *testing.T, out *Output) {
			near(t, "end", out.End, 8+0.01, 1e-9)
			near(t, "a>b bytes", out.LinkBytes["a>b"], 10*MB, 0)
			if !out.Ended {
				t.Error("not ended")
			}
		},
	}, {
		name: "one flow with LV08's own factors: bandwidth 0.97, latency 13.01",
		prog: Program{Platform: twoHosts, Actors: []Actor{
			actor("c", "a", Op{Do: Send, To: "s", Bytes: 10 * MB}), sink("s", "b"),
		}},
		check: func(t *testing.T, out *Output) { near(t, "end", out.End, 8/0.97+13.01*0.01, 1e-6) },
	}, {
		name: "two flows on one link get half each",
		prog: Program{Platform: twoHosts, Config: exact, Actors: []Actor{
			actor("c1", "a", Op{Do: Send, To: "s", Bytes: 5 * MB}, mark("done")),
			actor("c2", "a", Op{Do: Send, To: "s", Bytes: 5 * MB}, mark("done")),
			sink("s", "b"),
		}},
		check: func(t *testing.T, out *Output) {
			for _, m := range marksOf(out, "done") {
				near(t, m.Actor+" done", m.T, 8+0.01, 1e-9)
			}
		},
	}, {
		name: "a flow capped at 1 Mbit/s",
		prog: Program{Platform: twoHosts, Config: exact, Actors: []Actor{
			actor("c", "a", Op{Do: Send, To: "s", Bytes: 1 * MB, RateBPS: 1e6}), sink("s", "b"),
		}},
		check: func(t *testing.T, out *Output) { near(t, "end", out.End, 8+0.01, 1e-9) },
	}, {
		name: "a TCP window of 64 KiB over 100 ms round trips",
		prog: Program{Platform: mesh(10e6, 0.05, host("a", 1), host("b", 1)),
			Config: Config{TCPWindow: 65536, BandwidthFactor: 1, LatencyFactor: 1},
			Actors: []Actor{actor("c", "a", Op{Do: Send, To: "s", Bytes: 10 * MB}), sink("s", "b")},
		},
		check: func(t *testing.T, out *Output) { near(t, "end", out.End, 10*MB/(65536/0.1)+0.05, 1e-6) },
	}, {
		name: "two execs of 4 s on one core",
		prog: Program{Platform: Platform{Hosts: []Host{host("a", 1)}}, Actors: []Actor{
			actor("x", "a", Op{Do: Exec, Seconds: 4}), actor("y", "a", Op{Do: Exec, Seconds: 4}),
		}},
		check: func(t *testing.T, out *Output) {
			near(t, "end", out.End, 8, 1e-9)
			near(t, "host cpu", out.HostCPU["a"], 8, 1e-9)
		},
	}, {
		name: "two execs of 4 s on two cores",
		prog: Program{Platform: Platform{Hosts: []Host{host("a", 2)}}, Actors: []Actor{
			actor("x", "a", Op{Do: Exec, Seconds: 4}), actor("y", "a", Op{Do: Exec, Seconds: 4}),
		}},
		check: func(t *testing.T, out *Output) { near(t, "end", out.End, 4, 1e-9) },
	}, {
		name: "an exec of 4 s on cores of half speed",
		prog: Program{Platform: Platform{Hosts: []Host{{Name: "a", Cores: 2, Speed: 0.5}}}, Actors: []Actor{
			actor("x", "a", Op{Do: Exec, Seconds: 4}),
		}},
		check: func(t *testing.T, out *Output) {
			near(t, "end", out.End, 8, 1e-9)
			near(t, "host cpu", out.HostCPU["a"], 4, 1e-9)
		},
	}, {
		name: "a disk writes 100 MB at 50 MB/s and reads them at 100 MB/s",
		prog: Program{Platform: Platform{Hosts: []Host{{Name: "a", Cores: 1, Speed: 1, DiskReadBPS: 100 * MB, DiskWriteBPS: 50 * MB}}},
			Actors: []Actor{actor("x", "a", Op{Do: Write, Bytes: 100 * MB}, Op{Do: Read, Bytes: 100 * MB})}},
		check: func(t *testing.T, out *Output) { near(t, "end", out.End, 3, 1e-9) },
	}, {
		name: "a recv ends when the message arrived",
		prog: Program{Platform: twoHosts, Config: exact, Actors: []Actor{
			actor("c", "a", Op{Do: Sleep, Seconds: 1}, Op{Do: Send, To: "r", Bytes: MB}),
			actor("r", "b", Op{Do: Recv}, mark("got")),
		}},
		check: func(t *testing.T, out *Output) {
			if m := marksOf(out, "got"); len(m) != 1 {
				t.Errorf("marks %+v", out.Marks)
			} else {
				near(t, "got", m[0].T, 1+0.8+0.01, 1e-9)
			}
		},
	}, {
		name: "a send to an actor on the same host crosses its loopback",
		prog: Program{Platform: twoHosts, Config: exact, Actors: []Actor{
			actor("c", "a", Op{Do: Send, To: "s", Bytes: 10 * MB}), sink("s", "a"),
		}},
		check: func(t *testing.T, out *Output) {
			// Its ACKs (SimGrid's cross traffic, 5% of a flow's
			// rate) load the same link back.
			near(t, "end", out.End, 10*MB/(10e9/8)*1.05, 1e-9)
			if out.LinkBytes["a>b"] != 0 {
				t.Errorf("link bytes %v", out.LinkBytes)
			}
		},
	}, {
		name: "par runs its branches at once",
		prog: Program{Platform: Platform{Hosts: []Host{host("a", 2)}}, Actors: []Actor{
			actor("x", "a", Op{Do: Par, Branches: [][]Op{{{Do: Exec, Seconds: 2}}, {{Do: Exec, Seconds: 3}}}}, mark("joined")),
		}},
		check: func(t *testing.T, out *Output) {
			near(t, "joined", marksOf(out, "joined")[0].T, 3, 1e-9)
			near(t, "host cpu", out.HostCPU["a"], 5, 1e-9)
		},
	}, {
		name: "marks carry the innermost repeat's iteration",
		prog: Program{Platform: Platform{Hosts: []Host{host("a", 1)}}, Actors: []Actor{
			actor("x", "a", mark("out"), Op{Do: Repeat, Times: 2, Body: []Op{
				{Do: Repeat, Times: 3, Body: []Op{{Do: Sleep, Seconds: 1}, mark("in")}},
				mark("outer"),
			}}),
		}},
		check: func(t *testing.T, out *Output) {
			var got []int
			var last float64
			for _, m := range out.Marks {
				got = append(got, m.Iter)
				if m.T < last {
					t.Errorf("marks out of time order: %+v", out.Marks)
				}
				last = m.T
			}
			want := []int{-1, 0, 1, 2, 0, 0, 1, 2, 1}
			if len(got) != len(want) {
				t.Fatalf("iters %v, want %v", got, want)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("iters %v, want %v", got, want)
				}
			}
		},
	}, {
		name: "calls: host CPU and link bytes add up",
		prog: Program{Platform: twoHosts, Config: exact, Actors: []Actor{
			actor("c", "a", Op{Do: Repeat, Times: 3, Body: []Op{
				{Do: Call, To: "s", Bytes: 100, Reply: 1000, ServerSeconds: 0.5}, {Do: Exec, Seconds: 0.25},
			}}, Op{Do: Send, To: "s", Bytes: MB}),
			sink("s", "b"),
		}},
		check: func(t *testing.T, out *Output) {
			call := 0.01 + 100/1.25e6 + 0.5 + 0.01 + 1000/1.25e6
			near(t, "end", out.End, 3*(call+0.25)+0.01+0.8, 1e-9)
			near(t, "cpu a", out.HostCPU["a"], 0.75, 1e-9)
			near(t, "cpu b", out.HostCPU["b"], 1.5, 1e-9)
			near(t, "a>b", out.LinkBytes["a>b"], 300+MB, 0)
			near(t, "b>a", out.LinkBytes["b>a"], 3000, 0)
		},
	}, {
		name: "the horizon cuts the simulation",
		prog: Program{Platform: Platform{Hosts: []Host{host("a", 1)}}, Horizon: 10, Actors: []Actor{
			actor("x", "a", mark("start"), Op{Do: Sleep, Seconds: 100}, mark("never")),
		}},
		check: func(t *testing.T, out *Output) {
			if out.Ended || out.End != 10 || len(out.Marks) != 1 {
				t.Errorf("ended %v at %v with marks %+v, want not ended at 10 with the start mark", out.Ended, out.End, out.Marks)
			}
		},
	}, {
		name: "a recv nobody sends to never ends",
		prog: Program{Platform: Platform{Hosts: []Host{host("a", 1)}}, Actors: []Actor{
			actor("x", "a", Op{Do: Sleep, Seconds: 3}, Op{Do: Recv}), actor("y", "a", Op{Do: Sleep, Seconds: 1}),
		}},
		check: func(t *testing.T, out *Output) {
			if out.Ended || out.End != 3 {
				t.Errorf("ended %v at %v, want not ended, stuck at 3", out.Ended, out.End)
			}
		},
	}, {
		name: "the horizon counts what is under way: bytes moved, CPU used",
		prog: Program{Platform: twoHosts, Config: exact, Horizon: 8.01, Actors: []Actor{
			actor("c", "a", Op{Do: Send, To: "s", Bytes: 100 * MB}), actor("x", "b", Op{Do: Exec, Seconds: 100}), sink("s", "b"),
		}},
		check: func(t *testing.T, out *Output) {
			near(t, "a>b bytes", out.LinkBytes["a>b"], 10*MB, 1e-6)
			near(t, "cpu b", out.HostCPU["b"], 8.01, 1e-6)
			if out.Ended {
				t.Error("ended")
			}
		},
	}, {
		name: "a program that ends before its horizon",
		prog: Program{Platform: Platform{Hosts: []Host{host("a", 1)}}, Horizon: 10, Actors: []Actor{
			actor("x", "a", Op{Do: Sleep, Seconds: 2}),
		}},
		check: func(t *testing.T, out *Output) {
			if !out.Ended || out.End != 2 {
				t.Errorf("ended %v at %v, want ended at 2", out.Ended, out.End)
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, runOK(t, &tt.prog)) })
	}
}

// TestServeThreads: four calls of 1 s of work arrive at once; the server
// host has four cores. Threads 1 serves them one after the other (a thread
// is free once the work is done: the reply travels on its own), Threads 2
// two at a time, Threads 0 all at once.
func TestServeThreads(t *testing.T) {
	needSimulator(t)
	const lat = 0.001
	for _, tt := range []struct {
		threads int
		want    float64
	}{
		{1, lat + 4 + lat},
		{2, lat + 2 + lat},
		{0, lat + 1 + lat},
	} {
		p := Program{Platform: mesh(1e9, lat, host("a", 1), host("b", 4)), Config: exact}
		for _, c := range []string{"c1", "c2", "c3", "c4"} {
			p.Actors = append(p.Actors, actor(c, "a", Op{Do: Call, To: "s", ServerSeconds: 1}))
		}
		p.Actors = append(p.Actors, daemon("s", "b", Op{Do: Serve, Threads: tt.threads}))
		out := runOK(t, &p)
		near(t, fmt.Sprintf("end with threads %d", tt.threads), out.End, tt.want, 1e-9)
	}
}

// TestServeSending: four replies of 1 MB over one 1 MB/s link share it
// (all arrive at 4 s) or, one sending at a time, go in turn (1, 2, 3 and
// 4 s): the same end, the same throughput, a lower mean wait.
func TestServeSending(t *testing.T) {
	needSimulator(t)
	const lat = 0.001
	for _, tt := range []struct {
		sending int
		want    []float64
	}{
		{0, []float64{4, 4, 4, 4}},
		{1, []float64{1, 2, 3, 4}},
		{2, []float64{2, 2, 4, 4}},
	} {
		p := Program{Platform: mesh(8e6, lat, host("a", 1), host("b", 1)), Config: exact}
		for _, c := range []string{"c1", "c2", "c3", "c4"} {
			p.Actors = append(p.Actors, actor(c, "a", Op{Do: Call, To: "s", Reply: 1e6}, mark("done")))
		}
		p.Actors = append(p.Actors, daemon("s", "b", Op{Do: Serve, Sending: tt.sending}))
		out := runOK(t, &p)
		done := marksOf(out, "done")
		if len(done) != 4 {
			t.Fatalf("sending %d: %d calls done, want 4", tt.sending, len(done))
		}
		for i, m := range done {
			near(t, fmt.Sprintf("sending %d: reply %d", tt.sending, i+1), m.T, lat+tt.want[i]+lat, 1e-3)
		}
	}
}

// TestStockUntilRefused: three workers take tasks from a master that has
// ten; exactly ten are granted, then every worker is refused and ends.
func TestStockUntilRefused(t *testing.T) {
	needSimulator(t)
	for _, threads := range []int{0, 1} {
		p := Program{Platform: mesh(1e8, 0.001, host("m", 1), host("w", 3)), Config: exact}
		for _, w := range []string{"w1", "w2", "w3"} {
			p.Actors = append(p.Actors, actor(w, "w", Op{Do: Repeat, UntilRefused: true, Body: []Op{
				{Do: Call, To: "m", Bytes: 100, Reply: 10000},
				{Do: Exec, Seconds: 1},
				mark("task"),
			}}, mark("refused")))
		}
		p.Actors = append(p.Actors, daemon("m", "m", Op{Do: Serve, Stock: 10, Threads: threads}))
		out := runOK(t, &p)
		if n := len(marksOf(out, "task")); n != 10 {
			t.Errorf("threads %d: %d tasks done, want 10", threads, n)
		}
		if n := len(marksOf(out, "refused")); n != 3 || !out.Ended {
			t.Errorf("threads %d: %d workers refused (ended %v), want 3", threads, n, out.Ended)
		}
		near(t, "worker CPU", out.HostCPU["w"], 10, 1e-9)
		// Ten tasks of 1 s on three cores: four rounds.
		if out.End < 4 || out.End > 4.1 {
			t.Errorf("threads %d: end %v, want about 4 s", threads, out.End)
		}
	}
}

// TestCallTimeout: calls to a server that works 5 s for each, with a
// timeout of 1 s, leave a timeout mark at 1 s after each call began; the
// server's work still happens, and a later call gets its own reply.
func TestCallTimeout(t *testing.T) {
	needSimulator(t)
	p := Program{Platform: mesh(1e9, 0.001, host("a", 1), host("b", 4)), Config: exact, Actors: []Actor{
		actor("c", "a",
			Op{Do: Repeat, Times: 2, Body: []Op{{Do: Call, To: "s", ServerSeconds: 5, Timeout: 1}}},
			Op{Do: Call, To: "s", ServerSeconds: 0.5, Timeout: 10}, mark("answered")),
		daemon("s", "b", Op{Do: Serve}),
	}}
	out := runOK(t, &p)
	to := marksOf(out, TimeoutLabel)
	if len(to) != 2 {
		t.Fatalf("timeouts %+v, want 2", to)
	}
	for i, m := range to {
		near(t, "timeout", m.T, float64(i+1), 1e-9)
		if m.Iter != i || m.Actor != "c" {
			t.Errorf("timeout mark %+v, want iteration %d of c", m, i)
		}
	}
	a := marksOf(out, "answered")
	if len(a) != 1 {
		t.Fatalf("marks %+v", out.Marks)
	}
	near(t, "answered", a[0].T, 2+0.001+0.5+0.001, 1e-9)
	// The end is the caller's: the server's abandoned work goes on past it.
	near(t, "end", out.End, a[0].T, 1e-9)
}

func TestRunRefuses(t *testing.T) {
	needSimulator(t)
	plat := mesh(1e6, 0.01, host("a", 1), host("b", 1))
	plat.Hosts = append(plat.Hosts, host("c", 1))
	deep := []Op{mark("bottom")}
	for range MaxDepth {
		deep = []Op{{Do: Repeat, Times: 1, Body: deep}}
	}
	many := make([]Actor, MaxActors+1)
	tests := []struct {
		name string
		prog Program
		err  error
		says string
	}{
		{"unknown op", Program{Platform: plat, Actors: []Actor{actor("x", "a", Op{Do: "jump"})}}, ErrBadProgram, `unknown op "jump"`},
		{"unknown actor", Program{Platform: plat, Actors: []Actor{actor("x", "a", Op{Do: Send, To: "y"})}}, ErrBadProgram, `unknown actor "y"`},
		{"unknown host", Program{Platform: plat, Actors: []Actor{actor("x", "z")}}, ErrBadProgram, `unknown host "z"`},
		{"unknown link", Program{Platform: Platform{Hosts: plat.Hosts, Routes: []Route{{From: "a", To: "b", Links: []string{"l"}}}}}, ErrBadProgram, `unknown link "l"`},
		{"send with no route", Program{Platform: plat, Actors: []Actor{actor("x", "a", Op{Do: Send, To: "y"}), sink("y", "c")}}, ErrBadProgram, `no route from host "a" to host "c"`},
		{"call with no way back", Program{Platform: Platform{Hosts: plat.Hosts, Links: plat.Links, Routes: plat.Routes[:1]},
			Actors: []Actor{actor("x", "a", Op{Do: Call, To: "y"}), sink("y", "b")}}, ErrBadProgram, `no route from host "b" to host "a"`},
		{"not a number", Program{Platform: plat, Actors: []Actor{actor("x", "a", Op{Do: Exec, Seconds: math.NaN()})}}, ErrBadProgram, "actor x op 1 (exec)"},
		{"nested too deep", Program{Platform: plat, Actors: []Actor{actor("x", "a", deep...)}}, ErrTooLarge, "deeper than 32"},
		{"too many actors", Program{Platform: plat, Actors: many}, ErrTooLarge, "50001 actors, the limit is 50000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Run(context.Background(), &tt.prog)
			if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("Run = %+v, %v; want %v saying %s", out, err, tt.err, tt.says)
			}
		})
	}
}

// TestSimulatorRefuses feeds bin/wanlab-sim programs past its own bounds
// directly, as Run would not.
func TestSimulatorRefuses(t *testing.T) {
	needSimulator(t)
	path, err := simulator()
	if err != nil {
		t.Fatal(err)
	}
	deep := `{"do":"mark"}`
	for range MaxDepth + 1 {
		deep = `{"do":"repeat","times":1,"body":[` + deep + `]}`
	}
	for _, tt := range []struct{ name, in, says string }{
		{"deep", `{"platform":{"hosts":[{"name":"a","cores":1,"speed":1}]},"actors":[{"name":"x","host":"a","ops":[` + deep + `]}]}`, "nested deeper than 32"},
		{"not JSON", `{"platform":`, "bad JSON"},
		{"bad field", `{"platform":{"hosts":[{"name":"a","cores":-1,"speed":1}]}}`, "cores must be between 0 and 4096"},
	} {
		cmd := exec.Command(path)
		cmd.Stdin = strings.NewReader(tt.in)
		msg, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(msg), tt.says) {
			t.Errorf("%s: %v: %s; want exit 2 saying %s", tt.name, err, msg, tt.says)
		}
	}
}

func TestRunStopsWithContext(t *testing.T) {
	needSimulator(t)
	// A billion tiny sleeps: minutes of the simulator's time.
	p := Program{Platform: Platform{Hosts: []Host{host("a", 1)}}, Actors: []Actor{
		actor("x", "a", Op{Do: Repeat, Times: 1_000_000_000, Body: []Op{{Do: Sleep, Seconds: 1e-6}}}),
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Run(ctx, &p)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run = %v, want the context's deadline", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Run returned after %v", d)
	}
}

func TestNoSimulator(t *testing.T) {
	t.Setenv(SimulatorEnv, "/nonexistent/wanlab-sim")
	err := Available()
	if !errors.Is(err, ErrNoSimulator) || !strings.Contains(err.Error(), "apt-get install -y libsimgrid-dev nlohmann-json3-dev") {
		t.Fatalf("Available = %v", err)
	}
	if _, err := Run(context.Background(), &Program{}); !errors.Is(err, ErrNoSimulator) {
		t.Fatalf("Run = %v", err)
	}
}

func TestBoundedBuffer(t *testing.T) {
	for _, tt := range []struct {
		discard  bool
		writes   []string
		want     string
		overflow bool
		failed   bool
	}{
		{false, []string{"ab", "cd"}, "abcd", false, false},
		{false, []string{"ab", "cde"}, "ab", true, true},
		{true, []string{"ab", "cde", "f"}, "abcd", true, false},
	} {
		b := &boundedBuffer{max: 4, discard: tt.discard}
		failed := false
		for _, w := range tt.writes {
			if n, err := b.Write([]byte(w)); err != nil {
				failed = true
			} else if n != len(w) {
				t.Errorf("Write(%q) = %d", w, n)
			}
		}
		if b.String() != tt.want || b.overflow != tt.overflow || failed != tt.failed {
			t.Errorf("discard %v, writes %q: kept %q, overflow %v, failed %v; want %q, %v, %v",
				tt.discard, tt.writes, b.String(), b.overflow, failed, tt.want, tt.overflow, tt.failed)
		}
	}
}

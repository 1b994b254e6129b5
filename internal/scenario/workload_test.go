package scenario

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/workload/command"
	"github.com/wanlab/wanlab/internal/workload/eventdb"
	"github.com/wanlab/wanlab/internal/workload/throughput"
	"github.com/wanlab/wanlab/internal/workload/transfer"
)

const farmBed = `name: wl
hosts:
  server: {cpus: 0.5}
  c1: {}
  c2: {}
links:
  - {between: [c1, server], rate: 100Mbit, delay: 1ms}
  - {between: [c2, server], rate: 100Mbit, delay: 1ms}
`

func TestWorkloadSweep(t *testing.T) {
	src := farmBed + `workloads:
  - name: ramp
    eventdb:
      server: server
      clients: [c1, c2]
      events_per_job: 100
      threads: 4
    sweep:
      jobs: [1, 5, 10]
    quick:
      events_per_job: 10
      sweep: {jobs: [1, 2]}
  - throughput: {from: c1, to: server, duration: 2s}
    sweep:
      streams: [1, 4]
      window: [64KiB, 1MiB]
    repeat: 2
`
	f, err := Parse("s.yaml", []byte(src), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Workloads) != 2 {
		t.Fatalf("%d workloads", len(f.Workloads))
	}
	ramp := f.Workloads[0]
	if ramp.Name != "ramp" || len(ramp.Steps) != 3 {
		t.Fatalf("ramp: %+v", ramp)
	}
	for i, jobs := range []int{1, 5, 10} {
		e := ramp.Steps[i].Spec.(*eventdb.Spec)
		if e.Jobs != jobs || e.EventsPerJob != 100 || e.ServerModel != "threads" || e.Timeout != 25*time.Second || e.Store.PageSize != 8192 {
			t.Errorf("step %d: %+v", i, e)
		}
	}
	if got := ramp.Steps[1].Label(); got != "jobs=5" {
		t.Errorf("label %q", got)
	}
	tp := f.Workloads[1]
	if tp.Name != "throughput" || len(tp.Steps) != 8 {
		t.Fatalf("throughput: %d steps", len(tp.Steps))
	}
	if got := tp.Steps[3].Label(); got != "streams=1 window=1MiB repeat=2" {
		t.Errorf("label %q", got)
	}
	if last, ok := tp.Steps[7].Spec.(*throughput.Step); !ok || last.Streams != 4 || last.Window != 1<<20 {
		t.Errorf("last step %+v", tp.Steps[7].Spec)
	}

	q, err := Parse("s.yaml", []byte(src), true)
	if err != nil {
		t.Fatal(err)
	}
	if s := q.Workloads[0].Steps; len(s) != 2 || s[1].Spec.(*eventdb.Spec).Jobs != 2 || s[1].Spec.(*eventdb.Spec).EventsPerJob != 10 {
		t.Errorf("quick steps: %d, %+v", len(s), s[len(s)-1].Spec)
	}
}

func TestWorkloadErrors(t *testing.T) {
	for _, tc := range []struct {
		name, workloads, want string
	}{
		{"unknown host", "  - eventdb: {server: nosuch, clients: [c1]}\n", `s.yaml:10: workloads[0].eventdb.server: unknown host "nosuch" (hosts: server, c1, c2)`},
		{"unknown kind", "  - database: {}\n", `s.yaml:10: workloads[0].database: unknown field "database"`},
		{"no kind", "  - name: x\n", "no workload kind"},
		{"two kinds", "  - probe: {from: c1, to: server}\n    mesh: {}\n", "a workload has one kind"},
		{"unknown setting", "  - eventdb:\n      server: server\n      clients: [c1]\n      colour: red\n", `s.yaml:13: workloads[0].eventdb.colour: unknown eventdb setting "colour"`},
		{"empty sweep", "  - eventdb: {server: server, clients: [c1]}\n    sweep: {jobs: []}\n", "s.yaml:11: workloads[0].sweep.jobs: a sweep needs a list"},
		{"impossible store", "  - eventdb: {server: server, clients: [c1], event_size: 4KB}\n", "pages (8192 B) are larger than events (4000 B)"},
		{"bad swept value", "  - eventdb: {server: server, clients: [c1]}\n    sweep: {jobs: [1, -3]}\n", "s.yaml:11: workloads[0].eventdb.jobs: -3 is out of range"},
		{"swept unknown setting", "  - eventdb: {server: server, clients: [c1]}\n    sweep: {jbos: [1]}\n", `s.yaml:11: workloads[0].eventdb.jbos: unknown eventdb setting "jbos"`},
		{"same host", "  - throughput: {from: c1, to: c1}\n", "from and to are the same host"},
		{"duplicate names", "  - probe: {from: c1, to: server}\n  - probe: {from: c2, to: server}\n", `two workloads are called "probe"`},
		{"not a list", "  eventdb: {}\n", "expected a list of workloads"},
		{"master is worker", "  - taskfarm: {master: server, workers: [server]}\n", `"server" is the master`},
		{"server is client", "  - eventdb: {server: server, clients: [c1, server]}\n", `workloads[0].eventdb.clients[1]: "server" is the server`},
		{"no clients", "  - eventdb: {server: server}\n", "workloads[0].eventdb.clients: missing: list the client hosts, such as [client1, client2]"},
		{"no workers", "  - taskfarm: {master: server}\n", "workloads[0].taskfarm.workers: missing: list the worker hosts"},
		{"unknown worker", "  - taskfarm: {master: server, workers: [c1, c9]}\n", `workloads[0].taskfarm.workers[1]: unknown host "c9"`},
		{"huge sweep", "  - probe: {from: c1, to: server}\n    repeat: 100\n    sweep: {count: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]}\n", "the sweep has more than 1000 steps"},
		{"udp without rate", "  - throughput: {from: c1, to: server, protocol: udp}\n", "a udp test needs a target rate"},
		{"command without clients", "  - command: {server: {host: server, run: [nginx]}}\n", "workloads[0].command.clients: give at least one client"},
		{"command on an unknown host", "  - command: {clients: [{host: c9, run: [curl]}]}\n", `workloads[0].command.clients[0].host: unknown host "c9"`},
		{"command without a program", "  - command: {clients: [{host: c1, run: []}]}\n", "workloads[0].command.clients[0].run: give the program"},
		{"unknown placeholder", "  - command: {clients: [{host: c1, run: [curl, \"{home}\"]}]}\n", "unknown placeholder {home}"},
		{"placeholder of an unknown host", "  - command: {clients: [{host: c1, run: [curl, \"http://{addr:c9}/\"]}]}\n", `run[1]: unknown host "c9"`},
		{"client waits for a port", "  - command: {clients: [{host: c1, run: [curl], ready: 80}]}\n", "only the server waits for a port"},
		{"file outside its folder", "  - command: {files: [{host: server, name: ../x, text: a}], clients: [{host: c1, run: [curl]}]}\n", "files[0].name"},
		{"file with size and text", "  - command: {files: [{host: server, name: x, size: 1MB, text: a}], clients: [{host: c1, run: [curl]}]}\n", "give a size (generated data) or a text, one of them"},
		{"watch of an unknown host", "  - probe: {from: c1, to: server}\n    watch: {host: c9}\n", `workloads[0].watch.host: unknown host "c9"`},
		{"watch too often", "  - probe: {from: c1, to: server}\n    watch: {host: c1, interval: 10us}\n", "interval 10µs"},
		{"watch with an unknown field", "  - probe: {from: c1, to: server}\n    watch: [{host: c1, pid: 3}]\n", `workloads[0].watch[0].pid: unknown field "pid"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(farmBed+"workloads:\n"+tc.workloads), false)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant %q", err, tc.want)
			}
			if _, ok := err.(*Error); !ok {
				t.Errorf("error is %T, not *Error", err)
			}
		})
	}
}

// Anchors defined on one host and used by another work, as in the built-in
// scenarios.
func TestAnchorsAcrossHosts(t *testing.T) {
	f, err := Parse("a.yaml", []byte("name: a\nhosts:\n  x: {sysctl: &cc {net.ipv4.tcp_congestion_control: reno}}\n  y: {sysctl: *cc}\nlinks:\n  - between: [x, y]\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	if y, _ := f.Testbed.Host("y"); y.Sysctl["net.ipv4.tcp_congestion_control"] != "reno" {
		t.Errorf("y: %+v", y)
	}
}

func TestBillionLaughsRefused(t *testing.T) {
	src := "name: b\nhosts:\n  x:\n    sysctl:\n      net.a: &a [\"l\",\"l\",\"l\",\"l\",\"l\",\"l\",\"l\",\"l\",\"l\"]\n"
	prev := "a"
	for _, name := range []string{"b", "c", "d", "e", "f", "g", "h"} {
		src += fmt.Sprintf("      net.%s: &%s [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n", name, name, prev, prev, prev, prev, prev, prev, prev, prev, prev)
		prev = name
	}
	done := make(chan error, 1)
	go func() { _, err := Parse("b.yaml", []byte(src), false); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("accepted a billion laughs")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a billion laughs took more than 10 s to refuse")
	}
}

func TestCommandAndWatch(t *testing.T) {
	src := farmBed + `workloads:
  - name: web
    command:
      files:
        - {host: server, name: conf, text: "listen {addr}:8080; root {dir};"}
        - {host: server, name: data.bin, size: 10MB}
      server: {host: server, run: [nginx, -c, "{dir}/conf"], ready: 8080}
      clients:
        - {host: c1, run: [curl, -o, "{dir}/data.bin", "http://{addr:server}:8080/data.bin"]}
      timeout: 1m
    watch: [{host: server, port: 8080}, {host: c1, peer: server, interval: 5ms}]
  - transfer: {from: server, to: c1, size: 10MB, read_ahead: false}
`
	f, err := Parse("s.yaml", []byte(src), false)
	if err != nil {
		t.Fatal(err)
	}
	w := f.Workloads[0]
	c, _ := w.Steps[0].Spec.(*command.Spec)
	if c == nil || c.Server.Ready != 8080 || len(c.Clients) != 1 || c.Timeout != time.Minute || c.Files[1].Size != 10_000_000 {
		t.Fatalf("command %+v", c)
	}
	if len(w.Watch) != 2 || w.Watch[0] != (Watch{Host: "server", Port: 8080, Interval: 10 * time.Millisecond}) || w.Watch[1].Peer != "server" || w.Watch[1].Interval != 5*time.Millisecond {
		t.Errorf("watches %+v", w.Watch)
	}
	if tr, _ := f.Workloads[1].Steps[0].Spec.(*transfer.Step); tr == nil || !tr.Serial {
		t.Error("read_ahead: false is not a serial transfer")
	}
}

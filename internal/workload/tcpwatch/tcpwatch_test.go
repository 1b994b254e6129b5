package tcpwatch

import (
	"context"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
)

func TestSpecValidate(t *testing.T) {
	fine := func() Spec { return Spec{Interval: 10 * time.Millisecond} }
	kindtest.RunValidates(t, fine, []kindtest.SpecCase[Spec]{
		{Name: "defaults", Edit: func(*Spec) {}},
		{Name: "port and prefix", Edit: func(s *Spec) { s.Port, s.Peer = 8080, "10.0.0.0/8" }},
		{Name: "an address", Edit: func(s *Spec) { s.Peer = "10.250.0.1" }},
		{Name: "port too high", Edit: func(s *Spec) { s.Port = 70000 }, Want: "port 70000"},
		{Name: "not an address", Edit: func(s *Spec) { s.Peer = "cern" }, Want: `peer "cern"`},
		{Name: "negative process", Edit: func(s *Spec) { s.PID = -1 }, Want: "process -1"},
		{Name: "interval too short", Edit: func(s *Spec) { s.Interval = time.Microsecond }, Want: "interval 1µs"},
		{Name: "interval too long", Edit: func(s *Spec) { s.Interval = time.Minute }, Want: "interval 1m0s"},
		{Name: "shorter than an interval", Edit: func(s *Spec) { s.Duration = time.Millisecond }, Want: "duration 1ms"},
		{Name: "above the limit", Edit: func(s *Spec) { s.Duration = 48 * time.Hour }, Want: "above the limit"},
	})
}

// discardConn is a connection to a loopback listener that reads and
// discards what it gets; both close when the test ends.
func discardConn(t *testing.T) net.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		if c, err := ln.Accept(); err == nil {
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestRunSeesALoopbackTransfer watches a real connection on this host's
// loopback (no privilege needed): the watch finds it by port, follows its
// bytes, and keeps to its interval.
func TestRunSeesALoopbackTransfer(t *testing.T) {
	c := discardConn(t)
	port := c.RemoteAddr().(*net.TCPAddr).Port
	stop := make(chan struct{})
	sent := make(chan int64, 1)
	go func() {
		buf := make([]byte, 64<<10)
		var n int64
		for {
			select {
			case <-stop:
				sent <- n
				return
			default:
			}
			k, err := c.Write(buf)
			n += int64(k)
			if err != nil {
				sent <- n
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var batches []Batch
	sum, err := Run(context.Background(), Spec{Port: port, Interval: 10 * time.Millisecond, Duration: 600 * time.Millisecond}, func(b Batch) error {
		batches = append(batches, b)
		return nil
	})
	close(stop)
	<-sent
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if sum.Ticks < 30 || sum.Conns != 2 {
		t.Fatalf("summary %+v: want about 60 samples of the 2 ends of the connection", sum)
	}
	local := c.LocalAddr().String()
	var client []Sample
	id := 0
	for _, b := range batches {
		for _, cn := range b.Conns {
			if cn.Local == local {
				id = cn.ID
			}
		}
		for _, s := range b.Samples {
			if s.Conn == id && id != 0 {
				client = append(client, s)
			}
		}
	}
	if len(client) < 30 {
		t.Fatalf("%d samples of the client's end %s, want about 60", len(client), local)
	}
	first, last := client[0], client[len(client)-1]
	if last.BytesAcked <= first.BytesAcked || last.MSS == 0 || last.Cwnd == 0 {
		t.Errorf("the client's end did not move: first %+v, last %+v", first, last)
	}
	if sum.IntervalP50 < 5 || sum.IntervalP50 > 20 {
		t.Errorf("achieved interval p50 %.2f ms, want about 10", sum.IntervalP50)
	}
}

func TestRunRefusesAMissingProcess(t *testing.T) {
	_, err := Run(context.Background(), Spec{PID: 1 << 30, Interval: 10 * time.Millisecond, Duration: 20 * time.Millisecond}, func(Batch) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "no such process") {
		t.Fatalf("got %v, want no such process", err)
	}
}

// TestRunSelectsByProcess finds a connection by the process that holds it.
func TestRunSelectsByProcess(t *testing.T) {
	c := discardConn(t)
	specs := []Spec{{PID: os.Getpid()}}
	if cg := ownCgroup(); cg != "" {
		specs = append(specs, Spec{Cgroup: cg})
	}
	for _, spec := range specs {
		spec.Interval, spec.Duration = 10*time.Millisecond, 150*time.Millisecond
		conns := map[string]bool{}
		_, err := Run(context.Background(), spec, func(b Batch) error {
			for _, cn := range b.Conns {
				conns[cn.Local] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !conns[c.LocalAddr().String()] {
			t.Errorf("the watch of %+v saw %v, not its connection from %s", spec, conns, c.LocalAddr())
		}
	}
}

// ownCgroup is this process's control group below the root, "" when it
// is the root.
func ownCgroup() string {
	data, _ := os.ReadFile("/proc/self/cgroup")
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && parts[2] != "/" && parts[2] != "" {
			if _, err := cgroupProcs(parts[2]); err == nil {
				return parts[2]
			}
		}
	}
	return ""
}

func TestCgroupPath(t *testing.T) {
	for _, bad := range []string{"", "/", "..", "../etc", "a/../../b"} {
		if _, err := cgroupPath(bad); err == nil {
			t.Errorf("cgroup path %q accepted", bad)
		}
	}
	if p, err := cgroupPath("/system.slice/nginx.service"); err != nil || p != "system.slice/nginx.service" {
		t.Errorf("got %q, %v", p, err)
	}
	if _, err := cgroupProcs("no/such/group/here"); err == nil || !strings.Contains(err.Error(), "no such control group") {
		t.Errorf("a missing cgroup: %v", err)
	}
}

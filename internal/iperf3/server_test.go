package iperf3

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/testsupport"
)

// iperf3Server is a private iperf3 -s -1 (one test, then it exits) on a
// free loopback port, killed when the test ends.
type iperf3Server struct {
	addr string
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan struct{}
}

// startIperf3 starts iperf3 -s -1 -J on host (127.0.0.1 or ::1) and
// waits until it listens.
func startIperf3(t testing.TB, host string) *iperf3Server {
	t.Helper()
	testsupport.Need(t, "iperf3")
	if host == "::1" {
		if ln, err := net.Listen("tcp6", "[::1]:0"); err != nil {
			t.Skipf("no IPv6 loopback here: %v", err)
		} else {
			ln.Close()
		}
	}
	for range 5 {
		port := freePort(t, host)
		s := &iperf3Server{addr: net.JoinHostPort(host, strconv.Itoa(port)), done: make(chan struct{})}
		s.cmd = exec.Command("iperf3", "-s", "-1", "-J", "-B", host, "-p", strconv.Itoa(port))
		s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.out
		if err := s.cmd.Start(); err != nil {
			t.Fatalf("starting iperf3: %v", err)
		}
		go func() { s.cmd.Wait(); close(s.done) }()
		t.Cleanup(func() {
			s.cmd.Process.Kill()
			<-s.done
		})
		if s.waitListening(t, port) {
			return s
		}
		t.Logf("iperf3 on port %d did not start (%s); another port", port, strings.TrimSpace(s.out.String()))
	}
	t.Fatal("iperf3 -s did not start on five ports")
	return nil
}

// freePort is a port nobody listens on just now.
func freePort(t testing.TB, host string) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitListening waits until the kernel shows the port listening (a
// connection would be taken as a test by a one-off server), or the
// server exited.
func (s *iperf3Server) waitListening(t testing.TB, port int) bool {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return false
		default:
		}
		if listening(port) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("iperf3 did not listen on port %d within 20s", port)
	return false
}

// listening reads /proc/net/tcp{,6} for a listening socket on port.
func listening(port int) bool {
	want := fmt.Sprintf(":%04X", port)
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 3 && strings.HasSuffix(fields[1], want) && fields[3] == "0A" {
				return true
			}
		}
	}
	return false
}

// signal sends the server a signal.
func (s *iperf3Server) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signalling iperf3: %v", err)
	}
}

// iperf3Report is what wanlab's tests read of iperf3's -J output.
type iperf3Report struct {
	End struct {
		SumSent struct {
			Bytes         float64 `json:"bytes"`
			BitsPerSecond float64 `json:"bits_per_second"`
			Retransmits   *int    `json:"retransmits"`
		} `json:"sum_sent"`
		SumReceived struct {
			Bytes         float64 `json:"bytes"`
			BitsPerSecond float64 `json:"bits_per_second"`
		} `json:"sum_received"`
	} `json:"end"`
	Error string `json:"error"`
}

// report waits for the one-off server to end its test and exit, and
// reads its own report of the test.
func (s *iperf3Server) report(t testing.TB) iperf3Report {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatal("iperf3 -s -1 did not exit within 30s of its test")
	}
	return parseReport(t, s.out.Bytes())
}

func parseReport(t testing.TB, data []byte) iperf3Report {
	t.Helper()
	var r iperf3Report
	// -1 -J may print a first document for a refused or failed attempt:
	// the last one is the test's.
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var doc iperf3Report
		if err := dec.Decode(&doc); err != nil {
			break
		}
		r = doc
	}
	return r
}

// iperf3Client runs iperf3's own client against addr and reads its report.
func iperf3Client(t testing.TB, addr string, args ...string) iperf3Report {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	out, err := exec.Command("iperf3", append([]string{"-c", host, "-p", port, "-J"}, args...)...).Output()
	if err != nil {
		t.Fatalf("iperf3 -c %s: %v\n%s", addr, err, out)
	}
	return parseReport(t, out)
}

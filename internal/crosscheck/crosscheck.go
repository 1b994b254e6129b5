// Package crosscheck runs the standard tools (ping, iperf3) inside test-bed
// hosts and parses what they report: the independent reference that wanlab's
// link emulation and measurements are checked against.
package crosscheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Runner runs tools in the hosts of a bed.
type Runner struct {
	// Command prepares argv to run in a host (backend.Bed's Command).
	Command func(ctx context.Context, host string, argv ...string) *exec.Cmd
}

// ExecRunner runs tools through `wanlab testbed exec` of the wanlab
// executable at exe: for tests and benchmarks that drive wanlab's CLI.
func ExecRunner(exe, testbed string) Runner {
	return Runner{Command: func(ctx context.Context, host string, argv ...string) *exec.Cmd {
		return exec.CommandContext(ctx, exe, append([]string{"testbed", "exec", testbed, host, "--"}, argv...)...)
	}}
}

// ErrToolMissing means ping or iperf3 is not installed.
var ErrToolMissing = errors.New("tool not installed")

// Require checks that the named tools are on PATH.
func Require(tools ...string) error {
	for _, t := range tools {
		if _, err := exec.LookPath(t); err != nil {
			return fmt.Errorf("%w: %s (install it, e.g. apt-get install %s)", ErrToolMissing, t, t)
		}
	}
	return nil
}

// PingResult is what ping reports.
type PingResult struct {
	Sent     int     `json:"sent"`
	Received int     `json:"received"`
	MinMS    float64 `json:"min"`
	AvgMS    float64 `json:"avg"`
	MaxMS    float64 `json:"max"`
	MdevMS   float64 `json:"mdev"`
	// MedianMS is the median of the replies' times: unlike the average, one
	// late reply does not move it.
	MedianMS float64 `json:"median"`
}

var (
	pingCountRE = regexp.MustCompile(`(\d+) packets transmitted, (\d+) received`)
	pingRTTRE   = regexp.MustCompile(`= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms`)
	pingTimeRE  = regexp.MustCompile(`time=([\d.]+) ms`)
)

// Ping sends count echo requests from host to addr, interval apart.
func (r Runner) Ping(ctx context.Context, host, addr string, count int, interval time.Duration) (PingResult, error) {
	out, err := r.Command(ctx, host, "ping", "-n", "-c", strconv.Itoa(count),
		"-i", strconv.FormatFloat(interval.Seconds(), 'f', 3, 64), "-W", "5", addr).CombinedOutput()
	res, perr := ParsePing(string(out))
	if perr != nil {
		return res, fmt.Errorf("ping from %s to %s: %v: %w", host, addr, err, perr)
	}
	return res, nil
}

// ParsePing reads the summary of iputils ping.
func ParsePing(out string) (PingResult, error) {
	var res PingResult
	m := pingCountRE.FindStringSubmatch(out)
	if m == nil {
		return res, fmt.Errorf("no ping summary in %q", strings.TrimSpace(out))
	}
	res.Sent, _ = strconv.Atoi(m[1])
	res.Received, _ = strconv.Atoi(m[2])
	if m := pingRTTRE.FindStringSubmatch(out); m != nil {
		res.MinMS, _ = strconv.ParseFloat(m[1], 64)
		res.AvgMS, _ = strconv.ParseFloat(m[2], 64)
		res.MaxMS, _ = strconv.ParseFloat(m[3], 64)
		res.MdevMS, _ = strconv.ParseFloat(m[4], 64)
	}
	var times []float64
	for _, m := range pingTimeRE.FindAllStringSubmatch(out, -1) {
		if v, err := strconv.ParseFloat(m[1], 64); err == nil {
			times = append(times, v)
		}
	}
	if len(times) > 0 {
		slices.Sort(times)
		res.MedianMS = times[len(times)/2]
	}
	return res, nil
}

// IperfOptions describes one iperf3 test between two hosts.
type IperfOptions struct {
	Client, Server string // host names
	ServerAddr     string
	Port           int
	Duration       time.Duration
	Streams        int
	Reverse        bool // server sends
	UDP            bool
	Rate           string // UDP target rate, e.g. "10M"
	Length         int    // UDP datagram size
	Window         string // socket buffer, e.g. "4M"
	Congestion     string // TCP congestion control, e.g. "cubic"
	// Omit leaves the first seconds (slow start) out of the result.
	Omit time.Duration
}

// IperfResult is the summary of an iperf3 run, in iperf3's own field names.
type IperfResult struct {
	SentBPS     float64 `json:"sent_bits_per_second"`
	ReceivedBPS float64 `json:"received_bits_per_second"`
	Retransmits int     `json:"retransmits"`
	// UDP only.
	Packets     int     `json:"packets,omitempty"`
	LostPackets int     `json:"lost_packets,omitempty"`
	LostPercent float64 `json:"lost_percent,omitempty"`
	JitterMS    float64 `json:"jitter_ms,omitempty"`
}

// Iperf runs an iperf3 server on Server for one test and the client on Client.
func (r Runner) Iperf(ctx context.Context, o IperfOptions) (IperfResult, error) {
	if o.Port == 0 {
		o.Port = 5201
	}
	port := strconv.Itoa(o.Port)
	ctx, cancel := context.WithTimeout(ctx, o.Duration+o.Omit+30*time.Second)
	defer cancel()
	server := r.Command(ctx, o.Server, "iperf3", "-s", "-1", "-p", port)
	var serverOut bytes.Buffer
	server.Stdout, server.Stderr = &serverOut, &serverOut
	if err := server.Start(); err != nil {
		return IperfResult{}, fmt.Errorf("starting iperf3 server on %s: %w", o.Server, err)
	}
	defer func() {
		server.Process.Kill()
		server.Wait()
	}()
	args := []string{"iperf3", "-J", "-c", o.ServerAddr, "-p", port, "-t", strconv.FormatFloat(o.Duration.Seconds(), 'f', -1, 64)}
	if o.Streams > 1 {
		args = append(args, "-P", strconv.Itoa(o.Streams))
	}
	if o.Reverse {
		args = append(args, "-R")
	}
	if o.Window != "" {
		args = append(args, "-w", o.Window)
	}
	if o.Congestion != "" {
		args = append(args, "-C", o.Congestion)
	}
	if o.Omit > 0 {
		args = append(args, "-O", strconv.FormatFloat(o.Omit.Seconds(), 'f', -1, 64))
	}
	if o.UDP {
		args = append(args, "-u", "-b", o.Rate)
		if o.Length > 0 {
			args = append(args, "-l", strconv.Itoa(o.Length))
		}
	}
	// The server needs a moment to listen and iperf3 has no wait-for-server
	// option; with -J it reports a refused connection in its JSON, exiting 0.
	var res IperfResult
	var err, perr error
	for attempt := 0; attempt < 50; attempt++ {
		var out []byte
		out, err = r.Command(ctx, o.Client, args...).Output()
		res, perr = ParseIperf(out, o.UDP)
		if perr == nil || !strings.Contains(perr.Error(), "Connection refused") || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if perr != nil {
		return res, fmt.Errorf("iperf3 %s -> %s: %v: %w (server said %q)", o.Client, o.Server, err, perr, strings.TrimSpace(serverOut.String()))
	}
	return res, nil
}

// ParseIperf reads iperf3's -J output.
func ParseIperf(out []byte, udp bool) (IperfResult, error) {
	var doc struct {
		Error string `json:"error"`
		End   struct {
			SumSent     iperfSum `json:"sum_sent"`
			SumReceived iperfSum `json:"sum_received"`
			Sum         iperfSum `json:"sum"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return IperfResult{}, fmt.Errorf("reading iperf3 JSON: %w", err)
	}
	if doc.Error != "" {
		return IperfResult{}, fmt.Errorf("iperf3: %s", doc.Error)
	}
	e := doc.End
	res := IperfResult{SentBPS: e.SumSent.BitsPerSecond, ReceivedBPS: e.SumReceived.BitsPerSecond, Retransmits: e.SumSent.Retransmits}
	if udp {
		// iperf3 3.12 reports UDP in end.sum; later versions also fill sum_received.
		s := e.Sum
		res.Packets, res.LostPackets, res.LostPercent, res.JitterMS = s.Packets, s.LostPackets, s.LostPercent, s.JitterMS
		if res.ReceivedBPS == 0 && s.Packets > 0 {
			res.ReceivedBPS = s.BitsPerSecond * (1 - s.LostPercent/100)
		}
		if res.SentBPS == 0 {
			res.SentBPS = s.BitsPerSecond
		}
	}
	return res, nil
}

type iperfSum struct {
	BitsPerSecond float64 `json:"bits_per_second"`
	Retransmits   int     `json:"retransmits"`
	Packets       int     `json:"packets"`
	LostPackets   int     `json:"lost_packets"`
	LostPercent   float64 `json:"lost_percent"`
	JitterMS      float64 `json:"jitter_ms"`
}

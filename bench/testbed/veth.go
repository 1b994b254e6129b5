package main

// The kernel's reference: wanlab's agents and iperf3 over a plain veth pair
// between two namespaces, with no emulator.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/testbed"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

// vethPair makes pair i of two namespaces joined by a plain veth pair,
// 10.252.i.1 and 10.252.i.2, with a root qdisc on both ends if one is
// given (tc's words, "tbf rate 10mbit ..."); cleanup removes them, also
// after an error.
func vethPair(i int, qdisc ...string) (a, b string, cleanup func(), err error) {
	a, b = testbed.NetnsName("benchveth", fmt.Sprintf("a%d", i)), testbed.NetnsName("benchveth", fmt.Sprintf("b%d", i))
	cleanup = func() {
		exec.Command("ip", "netns", "del", a).Run()
		exec.Command("ip", "netns", "del", b).Run()
	}
	cmds := [][]string{
		{"ip", "netns", "add", a}, {"ip", "netns", "add", b},
		{"ip", "link", "add", "wlveth-a", "netns", a, "type", "veth", "peer", "name", "wlveth-b", "netns", b},
		{"ip", "-n", a, "addr", "add", vethAddr(i, 1) + "/30", "dev", "wlveth-a"},
		{"ip", "-n", b, "addr", "add", vethAddr(i, 2) + "/30", "dev", "wlveth-b"},
		{"ip", "-n", a, "link", "set", "wlveth-a", "up"}, {"ip", "-n", b, "link", "set", "wlveth-b", "up"},
		{"ip", "-n", a, "link", "set", "lo", "up"}, {"ip", "-n", b, "link", "set", "lo", "up"},
	}
	if len(qdisc) > 0 {
		cmds = append(cmds,
			append([]string{"ip", "netns", "exec", a, "tc", "qdisc", "add", "dev", "wlveth-a", "root"}, qdisc...),
			append([]string{"ip", "netns", "exec", b, "tc", "qdisc", "add", "dev", "wlveth-b", "root"}, qdisc...))
	}
	for _, c := range cmds {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			return a, b, cleanup, fmt.Errorf("%v: %v: %s", c, err, out)
		}
	}
	return a, b, cleanup, nil
}

// vethAddr is host h (1 or 2) of veth pair i.
func vethAddr(i, h int) string { return fmt.Sprintf("10.252.%d.%d", i, h) }

// vethComparison runs wanlab's agents and iperf3 over a plain veth pair
// between two namespaces: no emulator, so both tools are the bottleneck.
func vethComparison() error {
	a, b, cleanup, err := vethPair(0)
	defer cleanup()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "wanlab-bench-veth")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	var agents []*exec.Cmd
	defer func() {
		cancel() // kills the agents
		for _, a := range agents {
			a.Wait()
		}
	}()
	var ends []measure.Endpoint
	for _, h := range []struct{ ns, name, addr string }{{a, "a", vethAddr(0, 1)}, {b, "b", vethAddr(0, 2)}} {
		sock := filepath.Join(dir, h.name+".sock")
		cmd := exec.CommandContext(ctx, "ip", "netns", "exec", h.ns, *wanlabBin, "agent", "--host", h.name, "--socket", sock)
		if err := cmd.Start(); err != nil {
			return err
		}
		agents = append(agents, cmd)
		var c *agentapi.Client
		for range 200 {
			if c, err = agentapi.Dial(ctx, h.name, sock); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil {
			return err
		}
		defer c.Close()
		ends = append(ends, measure.Endpoint{Host: h.name, Addr: h.addr, Agent: c})
	}
	d := duration()
	w, err := throughput.Measure(ctx, ends[0], ends[1], throughput.Spec{Protocol: throughput.TCP, Streams: 1, Duration: d, Interval: time.Second})
	if err != nil {
		return err
	}
	server := exec.Command("ip", "netns", "exec", b, "iperf3", "-s", "-1")
	if err := server.Start(); err != nil {
		return err
	}
	defer func() { server.Process.Kill(); server.Wait() }()
	var doc struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
			CPU struct {
				Host   float64 `json:"host_total"`
				Remote float64 `json:"remote_total"`
			} `json:"cpu_utilization_percent"`
		} `json:"end"`
	}
	for range 50 {
		out, _ := exec.Command("ip", "netns", "exec", a, "iperf3", "-J", "-c", vethAddr(0, 2), "-t", fmt.Sprint(d.Seconds())).Output()
		if json.Unmarshal(out, &doc) == nil && doc.End.SumReceived.BitsPerSecond > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	wGbit, iGbit := w.End.SumReceived.BitsPerSecond/1e9, doc.End.SumReceived.BitsPerSecond/1e9
	wCPU := w.End.CPU.SenderAgent + w.End.CPU.ReceiverAgent
	iCPU := doc.End.CPU.Host + doc.End.CPU.Remote
	fmt.Println("### Unshaped veth: wanlab's engine against iperf3")
	fmt.Println()
	fmt.Printf("One TCP stream for %v over a plain veth pair between two namespaces (no emulator). CPU is the sender's and receiver's process CPU in %% of one core (wanlab: the agents; iperf3: host_total + remote_total), per Gbit/s received.\n\n", d.Seconds())
	fmt.Println("| tool | throughput | sender + receiver CPU | CPU per Gbit/s |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| wanlab (sendfile) | %.2f Gbit/s | %.0f%% | %.0f%% |\n", wGbit, wCPU, wCPU/wGbit)
	fmt.Printf("| iperf3 | %.2f Gbit/s | %.0f%% | %.0f%% |\n\n", iGbit, iCPU, iCPU/iGbit)
	return nil
}

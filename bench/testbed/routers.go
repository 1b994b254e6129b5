package main

// A path through routers (issue 33): the engine's CPU for one stream
// through 6 directions against the same stream through 2.

import (
	"fmt"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/crosscheck"
)

// chainBed is the YAML of a test-bed whose hosts s0 and r0 are joined by
// a chain of n directions each way, through n-1 routers (g1, g2, ...),
// each direction at 1 Gbit/s with an equal share of 6 ms one way.
func chainBed(name string, n int, engine string) string {
	var y strings.Builder
	fmt.Fprintf(&y, "name: %s\nengine: %s\nrouters: {", name, engine)
	for i := 1; i < n; i++ {
		if i > 1 {
			y.WriteString(", ")
		}
		fmt.Fprintf(&y, "g%d: {}", i)
	}
	y.WriteString("}\nhosts: {s0: {}, r0: {}}\nlinks:\n")
	nodes := []string{"s0"}
	for i := 1; i < n; i++ {
		nodes = append(nodes, fmt.Sprintf("g%d", i))
	}
	nodes = append(nodes, "r0")
	delay := 6 * time.Millisecond / time.Duration(n)
	for i := range n {
		fmt.Fprintf(&y, "  - {between: [%s, %s], rate: 1Gbit, delay: %dus}\n", nodes[i], nodes[i+1], delay.Microseconds())
	}
	return y.String()
}

// routerPaths runs one TCP stream at 1 Gbit/s through 2 directions (one
// router) and through 6 (five routers), with the same 12 ms round trip,
// and compares the engine's CPU per Gbit: the target is at most 1.3 times
// as much through 6 (the path is resolved once per packet, not searched).
func routerPaths() error {
	fmt.Println("### A path through routers (issue 33)")
	fmt.Println()
	fmt.Println("One iperf3 TCP stream (cubic, -O leaves slow start out) from s0 to r0 through a chain of 1 Gbit/s directions with a 12 ms round trip in all: 2 directions each way (one router) or 6 (five routers), each case on a test-bed of its own with one engine thread. Target: the engine's CPU per Gbit through 6 directions at most 1.3 times that through 2.")
	fmt.Println()
	fmt.Println(engineHead)
	var ratios []string
	for _, offloads := range []bool{true, false} {
		var perGbit []float64
		for _, n := range []int{2, 6} {
			b, err := upBed(chainBed("bench-chain", n, engineYAML(offloads, 1)))
			if err != nil {
				return err
			}
			r, err := measureEngine(b, omit(), func() (float64, int, error) {
				return iperfPairs(b, 1, crosscheck.IperfOptions{Duration: duration(), Omit: omit(), Congestion: "cubic"})
			})
			b.down()
			if err != nil {
				return err
			}
			r.row(fmt.Sprintf("1 Gbit/s, 12 ms RTT, %d directions (%d routers)", n, n-1), offloads)
			if r.gbit > 0 {
				perGbit = append(perGbit, r.engineCores/r.gbit)
			}
		}
		if len(perGbit) == 2 && perGbit[0] > 0 {
			ratios = append(ratios, fmt.Sprintf("offloads %s: %.2fx", onOff(offloads), perGbit[1]/perGbit[0]))
		}
	}
	fmt.Println()
	fmt.Printf("Engine CPU per Gbit through 6 directions over that through 2: %s (target <= 1.3x).\n\n", strings.Join(ratios, ", "))
	return nil
}

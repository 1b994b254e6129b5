package proc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// NetDev is one interface's cumulative counters, as /proc/net/dev has them.
type NetDev struct {
	Name               string
	RxBytes, RxPackets uint64
	TxBytes, TxPackets uint64
}

// ParseNetDev reads /proc/net/dev's format: two header lines, then
// "NAME: rx_bytes rx_packets errs drop fifo frame compressed multicast
// tx_bytes tx_packets ...".
func ParseNetDev(r io.Reader) ([]NetDev, error) {
	sc := bufio.NewScanner(r)
	var out []NetDev
	for line := 0; sc.Scan(); line++ {
		if line < 2 {
			continue
		}
		name, rest, ok := strings.Cut(sc.Text(), ":")
		f := strings.Fields(rest)
		if !ok || len(f) < 10 || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("line %d of /proc/net/dev: %q is not NAME: 16 counters", line+1, sc.Text())
		}
		var n [4]uint64
		for i, k := range []int{0, 1, 8, 9} {
			v, err := strconv.ParseUint(f[k], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d of /proc/net/dev: counter %q: %w", line+1, f[k], err)
			}
			n[i] = v
		}
		out = append(out, NetDev{Name: strings.TrimSpace(name), RxBytes: n[0], RxPackets: n[1], TxBytes: n[2], TxPackets: n[3]})
	}
	return out, sc.Err()
}

// NetDevs reads the calling thread's network namespace's interfaces.
func NetDevs() ([]NetDev, error) {
	f, err := os.Open("/proc/thread-self/net/dev")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseNetDev(f)
}

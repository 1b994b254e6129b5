package proc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ParseSNMP reads one counter of /proc/net/snmp's format: per protocol, a
// line of names then a line of values, such as "Udp: InDatagrams ..."
// then "Udp: 12 ...".
func ParseSNMP(r io.Reader, protocol, name string) (uint64, error) {
	sc := bufio.NewScanner(r)
	var head []string
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != protocol+":" {
			continue
		}
		if head == nil {
			head = f
			continue
		}
		for i, n := range head {
			if n == name && i < len(f) {
				return strconv.ParseUint(f[i], 10, 64)
			}
		}
		break
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no %s %s in the SNMP counters", protocol, name)
}

// UDPRcvbufErrors is how many datagrams the UDP sockets of process pid's
// network namespace refused because their receive buffer was full.
func UDPRcvbufErrors(pid int) (uint64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/net/snmp")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return ParseSNMP(f, "Udp", "RcvbufErrors")
}

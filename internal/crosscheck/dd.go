package crosscheck

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
)

// ddSummaryRE matches GNU dd's last line: "12582912 bytes (13 MB, 12 MiB)
// copied, 3.10295 s, 4.1 MB/s".
var ddSummaryRE = regexp.MustCompile(`(?m)^(\d+) bytes .*copied, ([\d.]+) s,`)

// ParseDD returns the bytes per second of GNU dd's summary.
func ParseDD(out string) (float64, error) {
	m := ddSummaryRE.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no summary line in dd's output: %q", out)
	}
	bytes, _ := strconv.ParseFloat(m[1], 64)
	secs, err := strconv.ParseFloat(m[2], 64)
	if err != nil || secs <= 0 {
		return 0, fmt.Errorf("dd's summary %q has no duration", m[0])
	}
	return bytes / secs, nil
}

// DD runs dd in host with the given operands (e.g. of=..., oflag=direct)
// and returns its rate in bytes per second. Paths may use $TMPDIR, the
// host's data directory.
func (r Runner) DD(ctx context.Context, host string, operands string) (float64, error) {
	out, err := r.Command(ctx, host, "sh", "-c", "dd "+operands+" 2>&1").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("dd %s in host %s: %v: %s", operands, host, err, out)
	}
	return ParseDD(string(out))
}

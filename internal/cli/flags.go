package cli

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/wanlab/wanlab/internal/units"
)

// seconds is a duration flag that also takes a bare number of seconds, as
// iperf3's -t does.
type seconds struct{ d *time.Duration }

func (s seconds) String() string {
	if s.d == nil {
		return "0s"
	}
	return s.d.String()
}

func (s seconds) Set(v string) error {
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
		*s.d = time.Duration(f * float64(time.Second))
		return nil
	}
	d, err := units.ParseDuration(v)
	if err != nil {
		return err
	}
	*s.d = d
	return nil
}

func (s seconds) Type() string { return "duration" }

// bytesFlag is a byte-count flag that takes sizes as iperf3 does: a bare
// number of bytes, or with a unit, 8K (KiB), 1M, 64KiB, 1.5KB
// (units.ParseSize).
type bytesFlag struct{ n *int }

func (b bytesFlag) String() string {
	if b.n == nil {
		return "0"
	}
	return strconv.Itoa(*b.n)
}

func (b bytesFlag) Set(v string) error {
	z, err := units.ParseSize(v)
	if err != nil {
		return err
	}
	if z > math.MaxInt32 {
		return fmt.Errorf("size %q is too large", v)
	}
	*b.n = int(z)
	return nil
}

func (b bytesFlag) Type() string { return "size" }

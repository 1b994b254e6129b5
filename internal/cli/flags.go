package cli

import (
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

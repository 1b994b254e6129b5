package agent

import (
	"golang.org/x/sys/unix"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
)

// readClock reads the clock's synchronisation state from the kernel
// (adjtimex, as ntpd, chrony and ptp4l keep it): synchronised unless the
// kernel says the clock is unsynchronised, and its estimated and maximum
// error. Nothing is changed: the call only reads.
func readClock() *agentpb.Clock {
	var tx unix.Timex
	state, err := unix.Adjtimex(&tx)
	if err != nil {
		return &agentpb.Clock{}
	}
	return &agentpb.Clock{
		Synchronised:     state != unix.TIME_ERROR && tx.Status&unix.STA_UNSYNC == 0,
		EstimatedErrorNs: int64(tx.Esterror) * 1000,
		MaximumErrorNs:   int64(tx.Maxerror) * 1000,
	}
}

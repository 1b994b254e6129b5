package results

import (
	"fmt"
	"runtime"
)

// Signs are what tells whether the test-bed itself, not the scenario,
// limited what was measured. A figure below 0 is not known.
type Signs struct {
	MachineBusyPct float64 // the machine's CPUs, over all cores
	EngineCPUPct   float64 // the engine, % of one core
	OutsideModel   uint64  // packets dropped outside the link model
	HostRcvbuf     uint64  // datagrams the receiving hosts' full sockets refused
	LatenessP99us  float64 // the engine's release lateness
	NoRealtime     bool    // the engine runs without realtime scheduling
	CPUsMaySleep   bool    // CPUs may sleep deeply between packets
}

// Limits past which a result says more about the test-bed than the scenario.
const (
	// MachineBusyLimit is the machine's CPU use, over all cores, past which
	// the engine competes with the hosts for CPU.
	MachineBusyLimit = 95.0
	// EngineCPULimit is the engine's CPU use in % of one core past which
	// its packet thread is saturated (it also has a writer thread).
	EngineCPULimit = 160.0
	// LatenessLimitUs is the p99 release lateness past which delays and
	// rates drift from the model.
	LatenessLimitUs = 1000.0
)

// Limits is the one rule of "limited by the test-bed": each sign past its
// limit, in words; none when the test-bed held.
func (s Signs) Limits() []string { return s.past(1) }

// StrainShare is the share of a limit from which a sign explains a result
// that falls well short of what its path allows: the test-bed, close to
// its limits, is then the likelier cause than the path.
const StrainShare = 0.8

// Strained lists the load signs (CPU, lateness) past StrainShare of their
// limits, in words.
func (s Signs) Strained() []string {
	return Signs{MachineBusyPct: s.MachineBusyPct, EngineCPUPct: s.EngineCPUPct, LatenessP99us: s.LatenessP99us}.past(StrainShare)
}

func (s Signs) past(share float64) []string {
	var why []string
	if s.MachineBusyPct >= share*MachineBusyLimit {
		why = append(why, fmt.Sprintf("the machine's CPUs were %.0f%% busy (%d cores)", s.MachineBusyPct, runtime.NumCPU()))
	}
	if s.EngineCPUPct >= share*EngineCPULimit {
		why = append(why, fmt.Sprintf("the packet engine used %.0f%% of a core", s.EngineCPUPct))
	}
	if s.OutsideModel > 0 {
		why = append(why, fmt.Sprintf("%d packets were dropped outside the link model", s.OutsideModel))
	}
	if s.HostRcvbuf > 0 {
		why = append(why, fmt.Sprintf("%d datagrams were dropped by receiving hosts' full socket buffers (UDP RcvbufErrors): lost in the hosts, not on the path", s.HostRcvbuf))
	}
	if s.LatenessP99us > share*LatenessLimitUs {
		why = append(why, fmt.Sprintf("the engine released 1%% of packets more than %.1f ms late (the machine's CPUs were saturated?)", s.LatenessP99us/1000))
	}
	if s.NoRealtime {
		why = append(why, "the engine runs without realtime scheduling")
	}
	if s.CPUsMaySleep {
		why = append(why, "CPUs may sleep deeply between packets (PM QoS not held)")
	}
	return why
}

package job

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestBurnUsesCPUTime(t *testing.T) {
	cpu := func() time.Duration {
		var ru unix.Rusage
		unix.Getrusage(unix.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	before := cpu()
	Burn(20 * time.Millisecond)
	if used := cpu() - before; used < 19*time.Millisecond {
		t.Errorf("Burn(20ms) used %v of CPU", used)
	}
	Burn(0) // returns at once
}

package monitor

import (
	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/monitor/core"
)

// labelFamily gives an observation's points and its test's record the
// family of its path's key: a test run once per family stores each
// family's series apart ("" for a test's one run, as before families).
func labelFamily(o core.Observation, test *archive.TestRecord) {
	for i := range o.Points {
		o.Points[i].Family = o.Key.Family
	}
	if test != nil {
		test.Family = o.Key.Family
	}
}

// keyOf is the key of an alert's path.
func keyOf(a core.Alert) core.PathKey {
	return core.PathKey{Src: a.Src, Dst: a.Dst, Test: a.Test, Family: a.Family}
}

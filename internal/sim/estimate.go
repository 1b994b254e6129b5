package sim

// The parts of MemoryEstimate, in bytes: generous against what
// bin/wanlab-sim was measured to take (a 6,000-job eventdb step of 450,000
// calls: 215 MB at its peak; a 1,000-host mesh of a million routes: 352
// MB) and what the caller holds of a program while it runs.
const (
	// estimateBase is the simulator's own, SimGrid and its libraries.
	estimateBase = 48 << 20
	// estimateActor is an actor that may run at once: its stack's pages
	// that it touches (of 256 KiB mapped), its context and mailbox.
	estimateActor = 32 << 10
	// estimateOp is an op: decoded in the simulator, held by the caller
	// and encoded as JSON.
	estimateOp = 512
	// estimateRoute and estimateRouteLink are a route of SimGrid's Full
	// zone and each link of it.
	estimateRoute     = 256
	estimateRouteLink = 16
	// estimateMark is a mark recorded, written and read back.
	estimateMark = 256
)

// MemoryEstimate is how much memory simulating prog may take at its peak,
// in bytes, counted from the program before anything runs: the
// simulator's (its base, each actor that may run at once with a stack of
// its own, ops, the table of routes and each route, marks) and what the caller holds of it (the
// program, its encoding and the output). It errs high: a caller runs
// programs at once only while their estimates fit its memory.
//
// The actors that may run at once are the program's own, one per branch
// of each Par (each runs as an actor of its own), and, for each actor
// that makes Calls, a handler on the server's side. Marks count each Mark
// op as many times as its Repeats run it, and a timeout for each Call.
func MemoryEstimate(prog *Program) int64 {
	var c estimateCount
	for _, a := range prog.Actors {
		calls := c.calls
		c.count(a.Ops, 1)
		c.actors++
		if c.calls > calls {
			c.actors++ // its handler on the server's side
		}
	}
	n := int64(estimateBase) + c.actors*estimateActor + c.ops*estimateOp + min(c.marks, maxMarks)*estimateMark
	hosts := int64(len(prog.Platform.Hosts))
	n += hosts * hosts * 8 // the Full zone's table of routes
	for _, r := range prog.Platform.Routes {
		n += estimateRoute + int64(len(r.Links))*estimateRouteLink
	}
	return n
}

// estimateCount is what MemoryEstimate counts of the actors' ops.
type estimateCount struct {
	actors, ops, calls int64
	// marks are those made, each Repeat's body as many times as it runs
	// (saturating: a bound, not a figure).
	marks int64
}

func (c *estimateCount) count(ops []Op, times int64) {
	for i := range ops {
		op := &ops[i]
		c.ops++
		switch op.Do {
		case Mark:
			c.marks = satAdd(c.marks, times)
		case Call:
			c.calls++
			c.marks = satAdd(c.marks, times) // a timeout's
		case Repeat:
			c.count(op.Body, satMul(times, max(1, int64(op.Times))))
		case Par:
			for _, b := range op.Branches {
				c.actors++
				c.count(b, times)
			}
		}
	}
}

// maxMarks is the most marks the simulator records (kMaxMarks in
// sim/program.hpp).
const maxMarks = 5_000_000

// satAdd and satMul are a+b and a*b of counts that stop at maxCount.
const maxCount = 1 << 40

func satAdd(a, b int64) int64 { return min(a+b, maxCount) }

func satMul(a, b int64) int64 {
	if a != 0 && b > maxCount/a {
		return maxCount
	}
	return min(a*b, maxCount)
}

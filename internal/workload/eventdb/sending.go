package eventdb

import (
	"fmt"
	"math"

	"github.com/wanlab/wanlab/internal/workload/kind"
)

// MinSending is the fewest replies a simulated server lets travel at once
// (sim.Op.Sending): more than any step that fits one machine has jobs per
// server, so only grid-scale steps queue their replies.
const MinSending = 64

// sending is how many of server's replies the model lets travel at once:
// enough to fill the fastest of its clients' paths twice over with
// replies each going at the slowest one's rate, and at least MinSending.
// Past that, replies wait their turn at the server, which changes neither
// the throughput nor the mean job time of a server whose own link is full
// (Little's law) and keeps the simulator's cost from growing with the
// square of the jobs.
func (e *Spec) sending(env kind.ModelEnv, server string) (int, error) {
	fastest, slowest := 0.0, math.Inf(1)
	for i, client := range e.Clients {
		if e.serverOf(i) != server {
			continue
		}
		path, err := env.Path(server, client)
		if err != nil {
			return 0, fmt.Errorf("eventdb model: %w", err)
		}
		if b := path.BottleneckBPS; b > 0 {
			fastest, slowest = max(fastest, b), min(slowest, b)
		}
	}
	if fastest == 0 {
		return MinSending, nil
	}
	n := math.Ceil(2 * fastest / slowest)
	if n > 1e6 {
		return 0, nil // paths too unlike to bound: no queue
	}
	return max(MinSending, int(n)), nil
}

package agentapi

import (
	"context"
	"strconv"
	"time"

	"google.golang.org/grpc/metadata"
)

// The metadata a controller sends with a call.
const (
	// TestHeader names the test a call belongs to: the calls of one test
	// (a throughput test's sender and receiver, both directions of a
	// bidirectional one) share the host as one.
	TestHeader = "wanlab-test"
	// WaitHeader is how long, in milliseconds, the controller lets a call
	// wait for a host busy with another throughput-class test.
	WaitHeader = "wanlab-wait-ms"
)

// WithTest returns ctx carrying the test id and wait of the calls made with it.
func WithTest(ctx context.Context, test string, wait time.Duration) context.Context {
	return metadata.AppendToOutgoingContext(ctx, TestHeader, test, WaitHeader, strconv.FormatInt(wait.Milliseconds(), 10))
}

// The agent's own workload roles, which belong to no workload kind, and
// the spec type each takes as JSON.
const (
	RoleWatch         = "tcp-watch"      // tcpwatch.Spec
	RoleTrainReceiver = "train-receiver" // train.ReceiverSpec
	RoleTrainSender   = "train-sender"   // train.SenderSpec
)

// TraceLasts bounds how long a trace of hops, waiting wait for each, may
// take: the agent refuses a longer one, and a controller keeps the
// reflector listening that long.
func TraceLasts(hops int, wait time.Duration) time.Duration {
	return time.Duration(hops) * 2 * wait
}

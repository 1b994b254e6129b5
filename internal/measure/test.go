package measure

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
)

// DefaultWait is how long a test's calls may wait for a host that runs
// another throughput-class test, unless WithWait says otherwise.
const DefaultWait = 30 * time.Second

type testKey struct{}

type waitKey struct{}

// WithWait sets how long the tests measured with ctx may wait for a busy
// host (an agent's policy may allow less).
func WithWait(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, waitKey{}, d)
}

// AsTest marks the calls made with the returned context as one test, so
// that agents let its calls (both ends, both directions) share a host, and
// tell it apart from others. A context already marked stays as it is.
func AsTest(ctx context.Context) context.Context {
	if _, ok := ctx.Value(testKey{}).(string); ok {
		return ctx
	}
	wait, ok := ctx.Value(waitKey{}).(time.Duration)
	if !ok {
		wait = DefaultWait
	}
	b := make([]byte, 8)
	rand.Read(b)
	id := "t" + hex.EncodeToString(b)
	return agentapi.WithTest(context.WithValue(ctx, testKey{}, id), id, wait)
}

package agent

import (
	"fmt"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// streamBudget caps the streams of all tests running at once.
type streamBudget struct {
	mu        sync.Mutex
	max, used int
}

// take reserves n streams, or refuses, saying how many are in use.
func (b *streamBudget) take(host string, n int) (release func(), err error) {
	release, err = b.reserve(n)
	if err != nil {
		return nil, status.Errorf(codes.ResourceExhausted, "agent on %s is busy: %v", host, err)
	}
	return release, nil
}

// reserve reserves n streams, or says how many are in use.
func (b *streamBudget) reserve(n int) (release func(), err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return nil, fmt.Errorf("%d of its %d streams are in use, %d more asked for", b.used, b.max, n)
	}
	b.used += n
	return func() {
		b.mu.Lock()
		b.used -= n
		b.mu.Unlock()
	}, nil
}

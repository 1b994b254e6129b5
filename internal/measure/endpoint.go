package measure

import (
	"errors"
	"fmt"
	"net"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/agent/agentpb"
)

// Endpoint is one host taking part in a measurement.
type Endpoint struct {
	Host  string
	Addr  string // the host's test address
	Agent *agentapi.Client
}

// ErrNoHost means a bed has no host of a name asked for.
var ErrNoHost = errors.New("no host")

// CloseAll closes the endpoints' agent connections.
func CloseAll(hosts map[string]Endpoint) {
	for _, h := range hosts {
		h.Agent.Close()
	}
}

// ErrTooManyTests means an agent refused a call because the caller's
// identity runs as many tests at once as the agent's policy allows
// (limits.tests): it may ask again once one of them has ended.
var ErrTooManyTests = errors.New("the agent runs as many tests of the identity at once as its policy allows")

// TooManyTestsError is an agent's refusal for its identity's tests at
// once, in the agent's words; it is ErrTooManyTests.
type TooManyTestsError struct{ Host, Words string }

func (e *TooManyTestsError) Error() string        { return "agent on " + e.Host + ": " + e.Words }
func (e *TooManyTestsError) Is(target error) bool { return target == ErrTooManyTests }

// AgentError says which host's agent failed, in the agent's own words, or
// that it stopped answering. A refusal for the identity's tests at once
// is a *TooManyTestsError.
func AgentError(host string, err error) error {
	if s, ok := status.FromError(err); ok {
		if s.Code() == codes.Unavailable {
			return fmt.Errorf("the agent on %s stopped answering (killed, or its host went away): %s", host, s.Message())
		}
		if agentapi.IsTooManyTests(err) {
			return &TooManyTestsError{Host: host, Words: s.Message()}
		}
		return fmt.Errorf("agent on %s: %s", host, s.Message())
	}
	return fmt.Errorf("agent on %s: %w", host, err)
}

// Listening reads the first event of a call whose agent listens (for a
// test's data, or probes) and returns the address to reach it and the
// event (its token, which the sender presents, and the tests alongside).
func Listening[E interface{ GetListening() *agentpb.Listening }](ep Endpoint, recv func() (E, error)) (string, *agentpb.Listening, error) {
	first, err := recv()
	if err != nil {
		return "", nil, AgentError(ep.Host, err)
	}
	l := first.GetListening()
	if l.GetPort() == 0 {
		return "", nil, fmt.Errorf("the agent on %s did not say where it listens", ep.Host)
	}
	return net.JoinHostPort(ep.Addr, strconv.Itoa(int(l.GetPort()))), l, nil
}

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

// AgentError says which host's agent failed, in the agent's own words, or
// that it stopped answering.
func AgentError(host string, err error) error {
	if s, ok := status.FromError(err); ok {
		if s.Code() == codes.Unavailable {
			return fmt.Errorf("the agent on %s stopped answering (killed, or its host went away): %s", host, s.Message())
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

package measure

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent"
	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/backend"
)

// Endpoint is one host taking part in a measurement.
type Endpoint struct {
	Host  string
	Addr  string // the host's test address
	Agent *agent.Client
}

// Connect dials the agents of hosts of a bed and returns an endpoint for
// each, by host name; on an error none is left open.
func Connect(ctx context.Context, bed backend.Bed, hosts ...string) (map[string]Endpoint, error) {
	out := map[string]Endpoint{}
	for _, name := range hosts {
		if _, ok := bed.Topology().Host(name); !ok {
			CloseAll(out)
			var names []string
			for _, h := range bed.Topology().Hosts {
				names = append(names, h.Name)
			}
			return nil, fmt.Errorf("test-bed %q has %w %q (hosts: %s)", bed.Topology().Name, ErrNoHost, name, strings.Join(names, ", "))
		}
		c, err := bed.Dial(ctx, name)
		if err != nil {
			CloseAll(out)
			return nil, err
		}
		// A real host's test address is known once its agent answers.
		h, _ := bed.Topology().Host(name)
		out[name] = Endpoint{Host: name, Addr: h.Addr, Agent: c}
	}
	return out, nil
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

// listening reads the first event of a call whose agent listens (for a
// test's data, or probes) and returns the address to reach it and the
// event (its token, which the sender presents, and the tests alongside).
func listening[E interface{ GetListening() *agentpb.Listening }](ep Endpoint, recv func() (E, error)) (string, *agentpb.Listening, error) {
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

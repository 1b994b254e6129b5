// Package agentapi is the agent's API as both ends share it (its version,
// the keepalive they agree on, a call's test metadata, the clock-step
// answer, the names of the agent's own roles) and the controller's client
// for it. It carries no workload type: a workload's wire conversions are
// in that workload's package. Controllers import this package, never the
// agent's server (internal/agent).
package agentapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/pki"
)

// APIVersion is the version of the agent API this build speaks. 3: packet
// trains wait for the receiver's token proof, a clock-stepped probe answers
// Aborted with its partial summary, an event store's spec says its sessions.
const APIVersion = 3

// Keepalive on the network: a controller that stops answering (dead, or
// cut off) is noticed within about ten seconds, and its tests end then.
// The agent pings every PingEvery and lets a controller ping as often; a
// controller pings half as often.
const (
	PingEvery = 5 * time.Second
	PingWait  = 5 * time.Second
)

// Client is a controller's connection to one agent.
type Client struct {
	Host string
	// BootID is the agent's kernel boot id: equal ids share a clock.
	BootID string
	// Info is the agent's answer to hello: who it is, its clock, and what
	// it grants this controller.
	Info *agentpb.HelloReply
	agentpb.AgentClient
	conn *grpc.ClientConn
}

// Dial connects to the agent listening on the Unix socket at path and checks
// that it answers and speaks this API version.
func Dial(ctx context.Context, host, path string) (*Client, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("no agent on host %s (%s): %w", host, path, err)
	}
	return connect(ctx, host, "unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// DialTLS connects to the agent of host at addr (host:port) over TLS 1.3
// with the controller's configuration (pki.ClientConfig), and checks that
// it answers, speaks this API version, and accepts this controller. A
// failure says why in words: the agent's certificate, the agent's refusal
// of this controller's, or its policy.
func DialTLS(ctx context.Context, host, addr string, config *tls.Config) (*Client, error) {
	name, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("agent of %s: address %q: %w", host, addr, err)
	}
	if err := pki.CheckOwn(config, time.Now()); err != nil {
		return nil, fmt.Errorf("agent of %s at %s: not dialled: %w", host, addr, err)
	}
	config = config.Clone()
	config.ServerName = name
	// A handshake of its own first: its errors keep their types, which
	// gRPC's would flatten into text.
	// It offers HTTP/2 as gRPC does, so that the agent does not take it
	// for a stranger's failed handshake.
	probe := config.Clone()
	probe.NextProtos = []string{"h2"}
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: probe}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		var tlsErr *tls.CertificateVerificationError
		var rec tls.RecordHeaderError
		switch {
		case errors.As(err, &tlsErr):
			return nil, fmt.Errorf("agent of %s at %s: %s", host, addr, pki.ExplainHandshake(err))
		case errors.As(err, &rec):
			return nil, fmt.Errorf("agent of %s at %s: it does not speak TLS (is it a wanlab agent on that port?)", host, addr)
		case errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err):
			return nil, fmt.Errorf("agent of %s at %s did not answer in time (connection and TLS handshake): it may be stopped or overloaded, or a firewall drops the port: %w", host, addr, err)
		}
		return nil, fmt.Errorf("agent of %s at %s is not reachable: %w", host, addr, err)
	}
	raw.Close()
	c, err := connect(ctx, host, addr, grpc.WithTransportCredentials(credentials.NewTLS(config)),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 2 * PingEvery, Timeout: PingWait, PermitWithoutStream: true}))
	if err != nil {
		if why := refusedCertificate(ctx, d, addr); why != "" {
			if hint := pki.ForeignIssuer(config, time.Now()); hint != "" {
				why += "; " + hint
			}
			return nil, fmt.Errorf("agent of %s at %s: %s", host, addr, why)
		}
	}
	return c, err
}

// refusedCertificate says whether the agent at addr refuses this
// controller's certificate: in TLS 1.3 it says so with an alert after the
// client's handshake has ended, which the first read receives (a write may
// see only a closed connection).
func refusedCertificate(ctx context.Context, d *tls.Dialer, addr string) string {
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return ""
	}
	defer raw.Close()
	raw.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = raw.Read(make([]byte, 1))
	if !isAlert(err) {
		return ""
	}
	return pki.ExplainHandshake(err)
}

// isAlert says whether err is a TLS alert from the other side: over TCP,
// crypto/tls returns it as a *net.OpError of Op "remote error" (over QUIC,
// as a tls.AlertError).
func isAlert(err error) bool {
	var op *net.OpError
	var alert tls.AlertError
	return errors.As(err, &op) && op.Op == "remote error" || errors.As(err, &alert)
}

// connect makes the client and says hello.
func connect(ctx context.Context, host, target string, opts ...grpc.DialOption) (*Client, error) {
	opts = append(opts, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20)))
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, fmt.Errorf("agent on host %s: %w", host, err)
	}
	c := &Client{Host: host, AgentClient: agentpb.NewAgentClient(conn), conn: conn}
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	hello, err := c.Hello(hctx, &agentpb.HelloRequest{ApiVersion: APIVersion})
	if err != nil {
		conn.Close()
		if st, ok := status.FromError(err); ok && st.Code() == codes.Unavailable {
			return nil, fmt.Errorf("the agent on host %s does not answer: %s", host, pki.ExplainHandshake(errors.New(st.Message())))
		}
		return nil, fmt.Errorf("the agent on host %s does not answer: %w", host, err)
	}
	c.BootID, c.Info = hello.BootId, hello
	if hello.ApiVersion != APIVersion {
		conn.Close()
		return nil, fmt.Errorf("the agent on host %s speaks API v%d, this wanlab v%d", host, hello.ApiVersion, APIVersion)
	}
	if hello.Identity != "" && hello.Grant == nil {
		conn.Close()
		return nil, fmt.Errorf("the agent on host %s does not authorise this controller: identity %s is named by no rule of its policy", host, hello.Identity)
	}
	return c, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

package agentapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
)

// TestIsAlert: a TLS alert is known by its type, not by its text.
func TestIsAlert(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"alert over TCP", &net.OpError{Op: "remote error", Err: errors.New("tls: bad certificate")}, true},
		{"alert over QUIC", fmt.Errorf("handshake: %w", tls.AlertError(42)), true},
		{"text alone", errors.New("remote error: tls: bad certificate"), false},
		{"another read error", &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}, false},
		{"none", nil, false},
	} {
		if got := isAlert(tc.err); got != tc.want {
			t.Errorf("%s: isAlert(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// TestClockStepOf: the summary ClockStepped carries is found again; no
// other error is taken for a clock step.
func TestClockStepOf(t *testing.T) {
	sum := &agentpb.ProbeSummary{Partial: true, Error: "the clock stepped by 2s", Results: []*agentpb.ProbeResult{{Seq: 1, SentNs: 5}}}
	for _, tc := range []struct {
		name string
		err  error
		want *agentpb.ProbeSummary
	}{
		{"clock stepped", ClockStepped(sum), sum},
		{"aborted without a summary", status.Error(codes.Aborted, "stopped"), nil},
		{"another code", status.Error(codes.InvalidArgument, "no"), nil},
		{"not a status", errors.New("no"), nil},
		{"none", nil, nil},
	} {
		got, ok := ClockStepOf(tc.err)
		if ok != (tc.want != nil) || !proto.Equal(got, tc.want) {
			t.Errorf("%s: ClockStepOf(%v) = %v, %v; want %v", tc.name, tc.err, got, ok, tc.want)
		}
	}
}

// TestWithTest: a call's test and wait travel as the headers the agent reads.
func TestWithTest(t *testing.T) {
	md, _ := metadata.FromOutgoingContext(WithTest(context.Background(), "t1", 1500*time.Millisecond))
	if got := md.Get(TestHeader); len(got) != 1 || got[0] != "t1" {
		t.Errorf("%s: %q, want [t1]", TestHeader, got)
	}
	if got := md.Get(WaitHeader); len(got) != 1 || got[0] != "1500" {
		t.Errorf("%s: %q, want [1500]", WaitHeader, got)
	}
}

// TestDialNoAgent: dialling a socket that is not there says which host has
// no agent, and keeps the cause.
func TestDialNoAgent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.sock")
	_, err := Dial(context.Background(), "h1", path)
	if err == nil || !strings.Contains(err.Error(), "no agent on host h1") || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("dialling no agent: %v", err)
	}
}

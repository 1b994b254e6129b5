package agent

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/policy"
	"github.com/wanlab/wanlab/internal/stamp"
)

// reflector serves a STAMP reflector on a UDP port of addr until the test
// ends, and returns its address and the reflector.
func reflector(t *testing.T, addr string) (string, *stamp.Reflector) {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(addr)})
	if err != nil {
		t.Skipf("no UDP socket on %s: %v", addr, err)
	}
	r, err := stamp.NewReflector(stamp.ReflectorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Serve(ctx, conn) }()
	t.Cleanup(func() { cancel(); <-done; conn.Close() })
	return conn.LocalAddr().String(), r
}

// TestTargetSTAMP: a STAMP reflector the policy names is tested on both
// families, each packet a probe with the reflector's times; one it does
// not name is refused, and its reflector receives nothing.
func TestTargetSTAMP(t *testing.T) {
	dir := tlsLab(t, "ctl")
	addr, audit := serveTLS(t, &Server{}, dir, targetPolicy)
	c := controller(t, dir, "ctl", addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	unlisted, far := reflector(t, "127.83.61.9")
	_, err := target(ctx, c, &agentpb.TargetRequest{Kind: policy.TargetSTAMP, Address: unlisted})
	wantRefusal(t, "a reflector the rule does not name", err, codes.PermissionDenied, "does not list 127.83.61.9")
	audit.wait(t, "the refusal", 1, func(e auditEntry) bool {
		return e.Decision == "refuse" && e.Kind == policy.TargetSTAMP && e.Rule == "ops" && len(e.Peers) == 1 && e.Peers[0] == unlisted
	})

	for _, host := range []string{"127.0.0.1", "::1"} {
		refl, _ := reflector(t, host)
		req := &agentpb.TargetRequest{Kind: policy.TargetSTAMP, Address: refl,
			Probe: &agentpb.ProbeSpec{Count: 5, IntervalNs: int64(10 * time.Millisecond), TimeoutNs: int64(2 * time.Second)}}
		res, err := target(ctx, c, req)
		if err != nil {
			t.Fatalf("%s: %v", refl, err)
		}
		if res.Address != refl || res.Silent || res.Error != "" || len(res.Probes.GetResults()) != 5 {
			t.Fatalf("%s: %v", refl, res)
		}
		for _, p := range res.Probes.Results {
			if p.ReceivedNs == 0 || p.ReflectRxNs == 0 || p.ReflectTxNs < p.ReflectRxNs || p.ReceivedNs < p.SentNs {
				t.Errorf("%s: probe %v", refl, p)
			}
		}
		ip := uint64(20)
		if host == "::1" {
			ip = 40
		}
		if want := 5 * (ip + 8 + stamp.BaseLen); res.Bytes != want {
			t.Errorf("%s: %d bytes, want %d", refl, res.Bytes, want)
		}
	}
	if n := far.Stats(); n.Reflected+n.Refused != 0 {
		t.Errorf("the reflector the rule does not name received %+v", n)
	}
}

package agent

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/icmpecho"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/policy"
)

func pingReq(addr string, count uint32) *agentpb.TargetRequest {
	return &agentpb.TargetRequest{Kind: policy.TargetPing, Address: addr,
		Probe: &agentpb.ProbeSpec{Count: count, IntervalNs: int64(10 * time.Millisecond), TimeoutNs: int64(2 * time.Second)}}
}

func TestParseTarget(t *testing.T) {
	tests := []struct {
		kind, address string
		family        uint32
		host          string
		port          int
		addr          string // "" when a name is left to resolve
		bad           bool
	}{
		{kind: "ping", address: "192.0.2.1", host: "192.0.2.1", addr: "192.0.2.1"},
		{kind: "ping", address: "2001:db8::1", host: "2001:db8::1", addr: "2001:db8::1"},
		{kind: "ping", address: "[2001:db8::1]", host: "2001:db8::1", addr: "2001:db8::1"},
		{kind: "ping", address: "::ffff:192.0.2.1", host: "::ffff:192.0.2.1", addr: "192.0.2.1"},
		{kind: "ping", address: "fe80::1%eth0", host: "fe80::1%eth0", addr: "fe80::1%eth0"},
		{kind: "ping", address: "dtn.example", host: "dtn.example"},
		{kind: "ping", address: "192.0.2.1:7", bad: true},
		{kind: "ping", address: "", bad: true},
		{kind: "ping", address: "192.0.2.1", family: 6, bad: true},
		{kind: "ping", address: "2001:db8::1", family: 4, bad: true},
		{kind: "ping", address: "192.0.2.1", family: 5, bad: true},
		{kind: "ping", address: "a/b", bad: true},
		{kind: "stamp", address: "192.0.2.1", host: "192.0.2.1", port: 862, addr: "192.0.2.1"},
		{kind: "stamp", address: "[2001:db8::1]:8620", host: "2001:db8::1", port: 8620, addr: "2001:db8::1"},
		{kind: "stamp", address: "refl.example:0", bad: true},
		{kind: "iperf3", address: "iperf.example", host: "iperf.example", port: 5201},
		{kind: "iperf3", address: "192.0.2.9:5202", family: 4, host: "192.0.2.9", port: 5202, addr: "192.0.2.9"},
		{kind: "iperf3", address: "192.0.2.9:http", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.kind+" "+tc.address, func(t *testing.T) {
			tg := parseTarget(&agentpb.TargetRequest{Kind: tc.kind, Address: tc.address, Family: tc.family})
			if (tg.bad != nil) != tc.bad {
				t.Fatalf("bad = %v, want bad %v", tg.bad, tc.bad)
			}
			if tc.bad {
				return
			}
			addr := ""
			if tg.addr.IsValid() {
				addr = tg.addr.String()
			}
			if tg.host != tc.host || tg.port != tc.port || addr != tc.addr {
				t.Errorf("host %q port %d addr %q, want %q %d %q", tg.host, tg.port, addr, tc.host, tc.port, tc.addr)
			}
		})
	}
}

const targetPolicy = `rules:
  - name: ops
    identities: [cn:ctl]
    kinds: [probe, throughput]
    targets: [127.0.0.1, "::1", 192.0.2.0/24, {network: 127.0.0.1, kinds: [stamp], ports: [1024-65535]}, {network: "::1", kinds: [stamp], ports: [1024-65535]}, "fe80::/64%lo"]
    limits: {bytes_per_day: 1000, rate: 1Mbit, duration: 1m}
  - name: thr
    identities: [cn:thr]
    kinds: [throughput]
    targets: [127.0.0.0/8, "::1", {network: 127.0.0.0/8, kinds: [iperf3], ports: [1024-65535]}, {network: "::1", kinds: [iperf3], ports: [1024-65535]}]
  - name: none
    identities: [cn:none]
    kinds: [probe]
`

// TestGrantTarget: the guard holds a Target call to the caller's rule
// before it runs: the far end must be among the rule's targets and its
// kind allowed, and a test over the limits is refused, each refusal
// naming its rule.
func TestGrantTarget(t *testing.T) {
	s, pol := guarded(t, targetPolicy)
	big := pingReq("127.0.0.1", 5)
	big.Probe.Size = icmpecho.MaxSize
	long := pingReq("127.0.0.1", 100)
	long.Probe.IntervalNs = int64(time.Second)
	tests := []struct {
		name string
		id   string
		req  *agentpb.TargetRequest
		code codes.Code
		says string // what the refusal says besides its code
	}{
		{"IPv4", "cn:ctl", pingReq("127.0.0.1", 5), codes.OK, ""},
		{"IPv6", "cn:ctl", pingReq("::1", 5), codes.OK, ""},
		{"IPv6 in brackets", "cn:ctl", pingReq("[::1]", 5), codes.OK, ""},
		{"mapped", "cn:ctl", pingReq("::ffff:192.0.2.7", 5), codes.OK, ""},
		{"not listed", "cn:ctl", pingReq("192.0.3.1", 5), codes.PermissionDenied, `rule "ops" (p.yaml:2) does not list 192.0.3.1`},
		{"a rule without probe", "cn:thr", pingReq("127.0.0.1", 5), codes.PermissionDenied, `rule "thr" (p.yaml:7) does not allow probe tests`},
		{"a rule without targets", "cn:none", pingReq("127.0.0.1", 5), codes.PermissionDenied, `rule "none" (p.yaml:11) names no targets`},
		{"no rule", "cn:other", pingReq("127.0.0.1", 5), codes.PermissionDenied, "no rule names it"},
		{"multicast", "cn:ctl", pingReq("224.0.0.1", 5), codes.PermissionDenied, "not a unicast address"},
		{"stamp", "cn:ctl", &agentpb.TargetRequest{Kind: policy.TargetSTAMP, Address: "[::1]:8620"}, codes.OK, ""},
		{"stamp not listed", "cn:ctl", &agentpb.TargetRequest{Kind: policy.TargetSTAMP, Address: "192.0.3.1"}, codes.PermissionDenied, `does not list 192.0.3.1 among its targets (a STAMP test)`},
		{"stamp at a port no entry names", "cn:ctl", &agentpb.TargetRequest{Kind: policy.TargetSTAMP, Address: "127.0.0.1:53"}, codes.PermissionDenied, `lists 127.0.0.1 among its targets, but not for a STAMP test at port 53`},
		{"stamp at a plain entry's port", "cn:ctl", &agentpb.TargetRequest{Kind: policy.TargetSTAMP, Address: "192.0.2.7"}, codes.OK, ""},
		{"stamp past a plain entry's port", "cn:ctl", &agentpb.TargetRequest{Kind: policy.TargetSTAMP, Address: "192.0.2.7:8620"}, codes.PermissionDenied, "but not for a STAMP test at port 8620"},
		{"iperf3 at a port no entry names", "cn:thr", iperf3Req("127.0.0.1:22", false), codes.PermissionDenied, "but not for an iperf3 test at port 22"},
		{"link-local in the entry's zone", "cn:ctl", pingReq("fe80::1%lo", 5), codes.OK, ""},
		{"link-local in another zone", "cn:ctl", pingReq("fe80::1%eth7", 5), codes.PermissionDenied, "does not list fe80::1%eth7"},
		{"link-local without a zone", "cn:ctl", pingReq("fe80::1", 5), codes.PermissionDenied, "fe80::1 is link-local"},
		{"stamp too fast", "cn:ctl", &agentpb.TargetRequest{Kind: policy.TargetSTAMP, Address: "127.0.0.1", Probe: &agentpb.ProbeSpec{IntervalNs: int64(time.Millisecond), Size: 1000}}, codes.ResourceExhausted, "over the agent's limit of 1000000 bit/s"},
		{"iperf3", "cn:thr", iperf3Req("127.0.0.1:5202", false), codes.OK, ""},
		{"iperf3 over the day", "cn:ctl", iperf3Req("127.0.0.1", false), codes.ResourceExhausted, "this test reserves 125000 (the rule's rate for its duration"},
		{"iperf3 UDP", "cn:thr", &agentpb.TargetRequest{Kind: policy.TargetIperf3, Address: "127.0.0.1", Throughput: &agentpb.ThroughputSpec{Protocol: agentpb.Protocol_PROTOCOL_UDP, DurationNs: int64(time.Second)}}, codes.InvalidArgument, "TCP tests only"},
		{"iperf3 endless", "cn:thr", &agentpb.TargetRequest{Kind: policy.TargetIperf3, Address: "127.0.0.1"}, codes.InvalidArgument, "give a duration or a number of bytes"},
		{"unknown kind", "cn:ctl", &agentpb.TargetRequest{Kind: "http", Address: "127.0.0.1"}, codes.InvalidArgument, "give ping, stamp or iperf3"},
		{"name not resolved", "cn:ctl", pingReq("localhost", 5), codes.InvalidArgument, "not resolved"},
		{"port", "cn:ctl", pingReq("127.0.0.1:7", 5), codes.InvalidArgument, "without a port"},
		{"too long", "cn:ctl", long, codes.ResourceExhausted, "over the agent's limit of 1m0s"},
		{"too fast", "cn:ctl", big, codes.ResourceExhausted, "over the agent's limit of 1000000 bit/s"},
		{"too many", "cn:ctl", pingReq("127.0.0.1", icmpecho.MaxCount+1), codes.InvalidArgument, "give 1 to 10000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &decision{who: caller{ids: []string{tc.id}}, req: describe(agentpb.Agent_Target_FullMethodName, tc.req)}
			err := s.grant(d, pol, agentpb.Agent_Target_FullMethodName)
			if err == nil {
				s.release(d, 0)
			}
			if got := status.Code(err); got != tc.code {
				t.Fatalf("code %v, want %v: %v", got, tc.code, err)
			}
			if err != nil && !strings.Contains(status.Convert(err).Message(), tc.says) {
				t.Errorf("the refusal does not say %q: %v", tc.says, err)
			}
		})
	}
}

// TestTargetBytesPerDay: a ping reserves its echoes' bytes (IP headers
// included) of its identity's day, and is refused when the day has not
// as many left.
func TestTargetBytesPerDay(t *testing.T) {
	s, pol := guarded(t, targetPolicy) // ops: 1000 bytes a day
	per := int64(5 * (20 + 8 + icmpecho.DefaultSize))
	for i := range 3 {
		d := &decision{who: caller{ids: []string{"cn:ctl"}}, req: describe(agentpb.Agent_Target_FullMethodName, pingReq("127.0.0.1", 5))}
		if d.req.bytes != per {
			t.Fatalf("a ping of 5 echoes declares %d bytes, want %d", d.req.bytes, per)
		}
		err := s.grant(d, pol, agentpb.Agent_Target_FullMethodName)
		if i < 2 {
			if err != nil {
				t.Fatalf("ping %d: %v", i+1, err)
			}
			s.release(d, per)
			continue
		}
		if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "allows cn:ctl 1000 bytes a day; 840 are used today") {
			t.Fatalf("ping %d past the day's bytes: %v", i+1, err)
		}
	}
}

// canPing skips the test where this process may open no ICMP socket.
func canPing(t *testing.T) {
	t.Helper()
	p := icmpecho.Pinger{Target: netip.MustParseAddr("127.0.0.1"), Count: 1, Interval: icmpecho.MinInterval, Timeout: 5 * time.Second}
	if _, err := p.Run(context.Background()); err != nil {
		t.Skipf("no ping here: %v", err)
	}
}

// target runs a Target call to its end and returns its result.
func target(ctx context.Context, c agentpb.AgentClient, req *agentpb.TargetRequest) (*agentpb.TargetResult, error) {
	stream, err := c.Target(ctx, req)
	if err != nil {
		return nil, err
	}
	for {
		ev, err := stream.Recv()
		if err != nil {
			return nil, err
		}
		if res := ev.GetResult(); res != nil {
			return res, nil
		}
	}
}

// TestTargetPing: a policy naming 127.0.0.1 and ::1 as targets lets its
// identity ping them, by address or by a name the agent resolves; each
// echo is a probe with its round trip, and the call is audited with its
// rule, kind, address and bytes.
func TestTargetPing(t *testing.T) {
	canPing(t)
	dir := tlsLab(t, "ctl")
	addr, audit := serveTLS(t, &Server{}, dir, targetPolicy)
	c := controller(t, dir, "ctl", addr)
	if got := c.Info.GetGrant().GetTargets(); !slices.Equal(got, []string{"127.0.0.1/32", "::1/128", "192.0.2.0/24", "127.0.0.1/32 kinds=stamp ports=1024-65535", "::1/128 kinds=stamp ports=1024-65535", "fe80::/64%lo"}) {
		t.Errorf("hello grants the targets %v", got)
	}
	tests := []struct {
		address string
		family  uint32
		tested  string
		ip      int64 // the IP header's bytes
	}{
		{"127.0.0.1", 0, "127.0.0.1", 20},
		{"::1", 0, "::1", 40},
		{"localhost", 4, "127.0.0.1", 20},
	}
	for _, tc := range tests {
		t.Run(tc.address, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			req := pingReq(tc.address, 3)
			req.Family = tc.family
			res, err := target(ctx, c, req)
			if err != nil {
				t.Fatal(err)
			}
			if res.Address != tc.tested || res.Kind != policy.TargetPing || res.Silent || res.Error != "" {
				t.Fatalf("result %v", res)
			}
			if n := len(res.Probes.GetResults()); n != 3 {
				t.Fatalf("%d probes, want 3", n)
			}
			for _, p := range res.Probes.Results {
				if p.ReceivedNs <= p.SentNs || p.ReceivedNs-p.SentNs > int64(time.Second) {
					t.Errorf("probe %d: sent %d, received %d", p.Seq, p.SentNs, p.ReceivedNs)
				}
			}
			want := 3 * (tc.ip + 8 + icmpecho.DefaultSize)
			if res.Bytes != uint64(want) {
				t.Errorf("%d bytes sent, want %d", res.Bytes, want)
			}
			audit.wait(t, "the ping's end", 1, func(e auditEntry) bool {
				return e.Decision == "end" && e.Method == agentpb.Agent_Target_FullMethodName && e.Rule == "ops" &&
					e.Kind == policy.TargetPing && slices.Equal(e.Peers, []string{tc.tested}) && e.Bytes == want
			})
		})
	}
}

// TestTargetRefusedBeforeAPacket: a far end the caller's rule does not
// name, and one whose rule does not allow probes, are refused before the
// agent sends a packet toward it, and audited with the rule and why. A raw
// socket sees every echo request on the loopback: none went to either
// address before a ping the policy allows, sent after the refusals.
func TestTargetRefusedBeforeAPacket(t *testing.T) {
	canPing(t)
	watch := watchEchoes(t)
	dir := tlsLab(t, "ctl", "thr")
	addr, audit := serveTLS(t, &Server{}, dir, targetPolicy)
	ctl, thr := controller(t, dir, "ctl", addr), controller(t, dir, "thr", addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	unlisted, noProbe := "127.83.61.7", "127.83.61.8"
	_, err := target(ctx, ctl, pingReq(unlisted, 3))
	wantRefusal(t, "a far end its rule does not name", err, codes.PermissionDenied, "does not list "+unlisted)
	_, err = target(ctx, thr, pingReq(noProbe, 3))
	wantRefusal(t, "a rule without probe", err, codes.PermissionDenied, "does not allow probe tests")
	_, err = target(ctx, ctl, iperf3Req(unlisted, false))
	wantRefusal(t, "an iperf3 server its rule does not name", err, codes.PermissionDenied, "does not list "+unlisted)

	if _, err := target(ctx, ctl, pingReq("127.0.0.1", 1)); err != nil {
		t.Fatal(err)
	}
	seen := watch.until(t, netip.MustParseAddr("127.0.0.1"))
	for _, a := range []string{unlisted, noProbe} {
		if slices.Contains(seen, netip.MustParseAddr(a)) {
			t.Errorf("an echo request went to %s, which the agent refused to ping", a)
		}
	}

	for _, tc := range []struct{ rule, kind, peer, why string }{
		{"ops", policy.TargetPing, unlisted, "does not list"},
		{"thr", policy.TargetPing, noProbe, "does not allow probe tests"},
		{"ops", policy.TargetIperf3, unlisted + ":5201", "does not list"},
	} {
		audit.wait(t, tc.why, 1, func(e auditEntry) bool {
			return e.Decision == "refuse" && e.Method == agentpb.Agent_Target_FullMethodName && e.Rule == tc.rule &&
				e.Kind == tc.kind && strings.Contains(e.Reason, tc.why) && (tc.kind != policy.TargetPing || slices.Equal(e.Peers, []string{tc.peer}))
		})
	}
}

// TestTargetOverSocket: over a Unix socket (no policy: the agent's owner)
// a ping goes wherever it is asked, within the agent's limits, which
// hold all the same.
func TestTargetOverSocket(t *testing.T) {
	canPing(t)
	c, _ := serve(t, limits.Default)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := target(ctx, c, pingReq("127.0.0.1", 2))
	if err != nil || len(res.Probes.GetResults()) != 2 {
		t.Fatalf("ping over the socket: %v, %v", res, err)
	}
	_, err = target(ctx, c, &agentpb.TargetRequest{Kind: "http", Address: "127.0.0.1"})
	wantRefusal(t, "an unknown kind", err, codes.InvalidArgument, "give ping, stamp or iperf3")
	_, err = target(ctx, c, pingReq("127.0.0.1", icmpecho.MaxCount+1))
	wantRefusal(t, "a ping of too many echoes", err, codes.InvalidArgument, "give 1 to 10000")
	long := pingReq("127.0.0.1", icmpecho.MaxCount)
	long.Probe.IntervalNs = int64(time.Second)
	_, err = target(ctx, c, long)
	wantRefusal(t, "a ping over the agent's duration", err, codes.ResourceExhausted, "over the agent's limit of 1h0m0s")
}

// echoWatch reads the IPv4 echo requests the host receives.
type echoWatch struct {
	mu   sync.Mutex
	dsts []netip.Addr
	more chan struct{}
}

// watchEchoes opens a raw ICMP socket (root) that sees every IPv4 echo
// request on the host, the loopback's included, until the test ends.
func watchEchoes(t *testing.T) *echoWatch {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP)
	if err != nil {
		t.Skipf("no raw ICMP socket to watch the echoes with: %v", err)
	}
	tv := unix.NsecToTimeval(int64(100 * time.Millisecond))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	w := &echoWatch{more: make(chan struct{})}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 65536)
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil || n < 20 {
				continue
			}
			ihl := int(buf[0]&0x0f) * 4
			if n <= ihl || buf[ihl] != 8 { // ICMP echo request
				continue
			}
			w.mu.Lock()
			w.dsts = append(w.dsts, netip.AddrFrom4([4]byte(buf[16:20])))
			close(w.more)
			w.more = make(chan struct{})
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() { close(stop); <-done; unix.Close(fd) })
	return w
}

// until waits for an echo request to a and returns those seen until then.
func (w *echoWatch) until(t *testing.T, a netip.Addr) []netip.Addr {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		w.mu.Lock()
		seen, more := slices.Clone(w.dsts), w.more
		w.mu.Unlock()
		if slices.Contains(seen, a) {
			return seen
		}
		select {
		case <-more:
		case <-deadline:
			t.Fatalf("no echo request to %s seen in 30 s (seen: %v)", a, seen)
		}
	}
}

// TestTargetNameNotFound: a name that does not resolve is refused, before
// any packet, and audited with the name and the rule.
func TestTargetNameNotFound(t *testing.T) {
	dir := tlsLab(t, "ctl")
	addr, audit := serveTLS(t, &Server{}, dir, targetPolicy)
	c := controller(t, dir, "ctl", addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := target(ctx, c, pingReq("no-such-host.invalid", 1))
	if code := status.Code(err); code != codes.NotFound && code != codes.Unavailable {
		t.Fatalf("a name that does not resolve: %v", err)
	}
	audit.wait(t, "the refusal", 1, func(e auditEntry) bool {
		return e.Decision == "refuse" && e.Rule == "ops" && e.Kind == policy.TargetPing && slices.Equal(e.Peers, []string{"no-such-host.invalid"}) && strings.Contains(e.Reason, "resolving")
	})
}

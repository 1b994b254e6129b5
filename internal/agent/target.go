package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/farend"
	"github.com/wanlab/wanlab/internal/icmpecho"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/policy"
)

// Far ends without an agent (issue 36): the Target call. The guard reads a
// TargetRequest as a test of its far end's kind (policy.TargetKinds: ping
// and stamp are probes, iperf3 is throughput), resolves a name to the one
// address the call will test toward (resolveTarget: only for a caller
// whose rule may test toward a far end of that kind at that port, a few
// at once per identity), and refuses, before any packet is sent, a far
// end no entry of the caller's rule's targets holds (its address, a
// link-local one with its zone, its kind and its port), a kind the rule
// does not allow, and a test over the rule's limits (grantTarget); each
// refusal is audited with its rule and reason. Its bytes are then
// reserved as any test's (grant), and the handler (Target) tests toward
// that address and port and no other: ping through icmpecho, stamp
// through stamp's sender (target_stamp.go), iperf3 through iperf3's
// client (target_iperf3.go), whose bytes count toward the day as they
// flow. A refusal of code Unavailable says in an ErrorInfo whether the far
// end was busy or the resolver slow (farend's reasons).

// targetCalls test toward far ends without an agent: Target.
type targetCalls struct{ *Server }

// resolveWait bounds the resolution of a far end's name, and
// maxResolving the names one identity may have resolved at once: a name
// is looked up only for a caller whose rule may test toward a far end of
// its kind at its port (policy.MayTarget), and a caller's lookups do not
// pile up on the agent's resolver.
const (
	resolveWait  = 5 * time.Second
	maxResolving = 4
)

// resolveSlots counts each identity's names being resolved; its zero
// value is ready.
type resolveSlots struct {
	mu sync.Mutex
	n  map[string]int
}

// take counts a resolution of who, or refuses it when who has
// maxResolving under way; release ends the count.
func (r *resolveSlots) take(who string) (release func(), ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n[who] >= maxResolving {
		return nil, false
	}
	if r.n == nil {
		r.n = map[string]int{}
	}
	r.n[who]++
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.n[who]--; r.n[who] <= 0 {
			delete(r.n, who)
		}
	}, true
}

// unavailable is a refusal of code Unavailable that says which failure it
// is (reason, one of farend's) in an ErrorInfo detail, for the
// controller's side to tell a busy far end from a slow resolver.
func unavailable(reason, format string, args ...any) error {
	st := status.Newf(codes.Unavailable, format, args...)
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: farend.ErrorDomain}); err == nil {
		return d.Err()
	}
	return st.Err()
}

// What a ping or stamp call's spec takes for a field it leaves 0.
const (
	defaultProbes        = icmpecho.DefaultCount
	defaultProbeInterval = icmpecho.DefaultInterval
	defaultProbeTimeout  = icmpecho.DefaultTimeout
)

// targetCall is a Target call's far end as the agent reads it.
type targetCall struct {
	req  *agentpb.TargetRequest
	kind string // farend.Ping, STAMP or Iperf3
	// host is the address or name asked, port its port (stamp, iperf3;
	// 0 for ping), family 0, 4 or 6.
	host   string
	port   int
	family int
	// addr is the address tested: host's own, or what it resolved to;
	// invalid until known.
	addr netip.Addr
	// bad says why the request names no far end the agent can test.
	bad error
}

// parseTarget reads a Target request; a name is left for resolve.
func parseTarget(r *agentpb.TargetRequest) *targetCall {
	t := &targetCall{req: r, kind: r.GetKind(), family: int(min(r.GetFamily(), 1<<16))}
	t.host, t.port, t.bad = splitTarget(t.kind, r.GetAddress())
	if t.bad == nil && t.family != 0 && t.family != 4 && t.family != 6 {
		t.bad = fmt.Errorf("family %d: give 4, 6, or 0 for either", t.family)
	}
	if t.bad == nil {
		if a, err := netip.ParseAddr(t.host); err == nil {
			t.bad = t.settle(a)
		}
	}
	return t
}

// splitTarget reads a far end's address: a host for ping, host:port or
// host for the others (their default port); an IPv6 address may be in
// brackets.
func splitTarget(kind, address string) (host string, port int, err error) {
	if address == "" || len(address) > 300 {
		return "", 0, fmt.Errorf("address %.300q: give the far end's host (an IP address or a name)", address)
	}
	port = farend.DefaultPort(kind)
	host = address
	if h, p, serr := net.SplitHostPort(address); serr == nil {
		if kind == policy.TargetPing {
			return "", 0, fmt.Errorf("address %q: ping takes a host, without a port", address)
		}
		n, perr := strconv.Atoi(p)
		if perr != nil || n < 1 || n > 65535 {
			return "", 0, fmt.Errorf("address %q: port %q is not 1 to 65535", address, p)
		}
		host, port = h, n
	} else if len(address) > 2 && address[0] == '[' && address[len(address)-1] == ']' {
		host = address[1 : len(address)-1]
	}
	if host == "" || strings.ContainsAny(host, "[]/ ") {
		return "", 0, fmt.Errorf("address %q: give the far end's host (an IP address or a name)", address)
	}
	return host, port, nil
}

// settle makes a the address tested, if it is of the family asked. A
// zone given as an interface's index is named as the interface, as a
// policy's link-local targets name it.
func (t *targetCall) settle(a netip.Addr) error {
	a = a.Unmap()
	if t.family == 4 && !a.Is4() || t.family == 6 && !a.Is6() {
		return fmt.Errorf("%s is not an IPv%d address", a, t.family)
	}
	if i, err := strconv.Atoi(a.Zone()); err == nil {
		ifi, err := net.InterfaceByIndex(i)
		if err != nil {
			return fmt.Errorf("%s: zone %d is no interface of this host: %w", a, i, err)
		}
		a = a.WithZone(ifi.Name)
	}
	t.addr = a
	return nil
}

// resolve resolves the name asked to the address tested (the resolver's
// first, of the family asked), within resolveWait; the address is kept.
func (t *targetCall) resolve(ctx context.Context) error {
	if t.bad != nil || t.addr.IsValid() {
		return t.bad
	}
	network := map[int]string{0: "ip", 4: "ip4", 6: "ip6"}[t.family]
	ctx, cancel := context.WithTimeout(ctx, resolveWait)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, network, t.host)
	if err == nil && len(addrs) == 0 {
		err = errors.New("no address")
	}
	if err != nil {
		return fmt.Errorf("resolving %q: %w", t.host, err)
	}
	return t.settle(addrs[0])
}

// dest is the address tested, with its port where the far end has one;
// the address asked while it is not resolved.
func (t *targetCall) dest() string {
	if !t.addr.IsValid() {
		return t.host
	}
	if t.port == 0 {
		return t.addr.String()
	}
	return netip.AddrPortFrom(t.addr, uint16(t.port)).String()
}

// what is the test as a refusal names it.
func (t *targetCall) what() string {
	switch t.kind {
	case policy.TargetPing:
		return "a ping test"
	case policy.TargetSTAMP:
		return "a STAMP test"
	case policy.TargetIperf3:
		return "an iperf3 test"
	}
	return fmt.Sprintf("a test of kind %.40q", t.kind)
}

// describeTarget is a Target call as the guard reads it.
func describeTarget(r *agentpb.TargetRequest) request {
	return parseTarget(r).request()
}

// request is the call as the guard holds it to its rule: its far end's
// test kind, the address it sends toward once known, and its length,
// bytes and rate (from the address's family once known; a request whose
// spec is out of bounds declares none, and is refused by check).
func (t *targetCall) request() request {
	kind, ok := policy.TargetKinds[t.kind]
	if !ok {
		kind = policy.Probe // never "": a call of no kind runs unchecked (grantTarget refuses it)
	}
	req := request{kind: kind, target: t}
	if t.addr.IsValid() {
		req.peers = []string{t.dest()}
	}
	switch t.kind {
	case policy.TargetPing:
		if p, err := t.pinger(); err == nil {
			req.lasts, req.bytes, req.rate = p.Duration(), p.Bytes(), p.Rate()
		}
	case policy.TargetSTAMP:
		if s, err := t.session(); err == nil {
			req.lasts, req.bytes, req.rate = t.sessionLimits(s)
		}
	case policy.TargetIperf3:
		if s, err := t.iperf3Spec(); err == nil {
			req.lasts, req.bytes = t.iperf3Request(s)
		}
	}
	return req
}

// pinger is a ping call's Pinger toward the address tested, its spec's
// zero fields at their defaults, or why its spec is out of bounds.
func (t *targetCall) pinger() (icmpecho.Pinger, error) {
	sp := t.req.GetProbe()
	p := icmpecho.Pinger{Target: t.addr, Count: int(sp.GetCount()), Interval: time.Duration(sp.GetIntervalNs()),
		Timeout: time.Duration(sp.GetTimeoutNs()), Size: int(sp.GetSize())}
	p.Count = orDefault(p.Count, defaultProbes)
	p.Interval = orDefault(p.Interval, defaultProbeInterval)
	p.Timeout = orDefault(p.Timeout, defaultProbeTimeout)
	p.Size = orDefault(p.Size, icmpecho.DefaultSize)
	switch {
	case p.Count > icmpecho.MaxCount:
		return p, fmt.Errorf("count %d: give 1 to %d echoes", p.Count, icmpecho.MaxCount)
	case p.Interval < icmpecho.MinInterval || p.Interval > icmpecho.MaxInterval:
		return p, fmt.Errorf("interval %v: give %v to %v", p.Interval, icmpecho.MinInterval, icmpecho.MaxInterval)
	case p.Timeout < 0 || p.Timeout > icmpecho.MaxTimeout:
		return p, fmt.Errorf("timeout %v: give up to %v", p.Timeout, icmpecho.MaxTimeout)
	case p.Size < icmpecho.MinSize || p.Size > icmpecho.MaxSize:
		return p, fmt.Errorf("size %d: give %d to %d bytes of data", p.Size, icmpecho.MinSize, icmpecho.MaxSize)
	}
	return p, nil
}

func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// check checks the call's spec against itself and the limits l: its
// length, its bytes and its rate.
func (t *targetCall) check(l limits.Limits) error {
	switch t.kind {
	case policy.TargetPing:
		p, err := t.pinger()
		if err != nil {
			return err
		}
		return probeLimits(l, "ping", p.Duration(), p.Bytes(), p.Rate())
	case policy.TargetSTAMP:
		s, err := t.session()
		if err != nil {
			return err
		}
		lasts, bytes, bps := t.sessionLimits(s)
		return probeLimits(l, "STAMP session", lasts, bytes, bps)
	case policy.TargetIperf3:
		s, err := t.iperf3Spec()
		if err != nil {
			return err
		}
		return s.Validate(l)
	}
	return fmt.Errorf("kind %.40q: give %s, %s or %s", t.kind, policy.TargetPing, policy.TargetSTAMP, policy.TargetIperf3)
}

// probeLimits holds probes to the limits: their length, bytes and rate.
func probeLimits(l limits.Limits, what string, lasts time.Duration, bytes int64, bps float64) error {
	if err := l.Duration(what, lasts); err != nil {
		return err
	}
	if err := l.Bytes(what, bytes); err != nil {
		return err
	}
	return l.Rate(bps)
}

// vetTarget refuses a call that names no far end this agent can test:
// its kind is unknown, its address or family wrong, or its name does not
// resolve (resolved only when resolve says).
func (s *Server) vetTarget(ctx context.Context, t *targetCall, resolve bool) error {
	if _, known := policy.TargetKinds[t.kind]; !known {
		return status.Errorf(codes.InvalidArgument, "agent on %s refuses a test toward %q: kind %.40q: give %s, %s or %s",
			s.Host, t.host, t.kind, policy.TargetPing, policy.TargetSTAMP, policy.TargetIperf3)
	}
	if t.bad != nil {
		return status.Errorf(codes.InvalidArgument, "agent on %s refuses %s: %v", s.Host, t.what(), t.bad)
	}
	if !resolve || t.addr.IsValid() {
		return nil
	}
	if err := t.resolve(ctx); err != nil {
		var dns *net.DNSError
		if errors.As(err, &dns) && (dns.IsTimeout || dns.IsTemporary) || errors.Is(err, context.DeadlineExceeded) {
			return unavailable(farend.ReasonResolveTimeout, "agent on %s refuses %s toward %q: %v", s.Host, t.what(), t.host, err)
		}
		return status.Errorf(codes.NotFound, "agent on %s refuses %s toward %q: %v", s.Host, t.what(), t.host, err)
	}
	return nil
}

// intervalOf is the interval an event of a stream reports, for its bytes
// of the day, if any: a throughput test's. An iperf3 target's intervals
// are counted as the test cuts them (runIperf3), not as the controller
// reads them.
func intervalOf(m any) *agentpb.Interval {
	if ev, ok := m.(*agentpb.ThroughputEvent); ok {
		return ev.GetInterval()
	}
	return nil
}

// resolveTarget resolves the name of a Target call's far end, and reads
// its length, bytes and rate again for the address's family; the address
// is the one grantTarget checks and the call tests toward. A name is
// looked up only for a caller whose rule may test toward a far end of its
// kind at its port (policy.MayTarget: the names of others are not looked
// up, and grant refuses them), at most maxResolving at once for one
// identity, each within resolveWait. A call of another method is left as
// it is.
func (s guard) resolveTarget(ctx context.Context, d *decision, pol *policy.Policy) error {
	t, rule := d.req.target, pol.Match(d.who.ids)
	if t == nil || rule == nil {
		return nil
	}
	d.rule = rule // its refusal names it
	if err := s.lookUp(ctx, d, pol); err != nil {
		d.req.peers = []string{t.dest()} // the name, as asked
		return err
	}
	d.req = t.request()
	return nil
}

// lookUp resolves a Target call's name, if its caller's rule may test
// toward some far end of its kind at its port.
func (s guard) lookUp(ctx context.Context, d *decision, pol *policy.Policy) error {
	t := d.req.target
	if err := s.vetTarget(ctx, t, false); err != nil || t.addr.IsValid() {
		return err
	}
	if _, err := pol.MayTarget(d.who.ids, t.kind, t.port); err != nil {
		return status.Errorf(codes.PermissionDenied, "agent on %s refuses %s toward %q (its name not looked up): %v", s.Host, t.what(), t.host, err)
	}
	release, ok := s.resolving.take(d.who.key())
	if !ok {
		return status.Errorf(codes.ResourceExhausted, "agent on %s refuses %s toward %q: %s has %d names being resolved, the most one identity may have at once", s.Host, t.what(), t.host, d.who, maxResolving)
	}
	defer release()
	return s.vetTarget(ctx, t, true)
}

// grantTarget checks a Target call against the caller's rule, before any
// packet: the rule must allow its far end's test kind and name its
// address among its targets (policy.AllowsTarget), and its spec must be
// within the rule's limits. The far end must have been resolved
// (resolveTarget).
func (s guard) grantTarget(d *decision, pol *policy.Policy) error {
	t := d.req.target
	if err := s.vetTarget(context.Background(), t, false); err != nil {
		return err
	}
	if !t.addr.IsValid() {
		return status.Errorf(codes.InvalidArgument, "agent on %s refuses %s toward %q: the name was not resolved", s.Host, t.what(), t.host)
	}
	if _, err := pol.AllowsTarget(d.who.ids, t.kind, t.addr, t.port); err != nil {
		return status.Errorf(codes.PermissionDenied, "agent on %s refuses %s toward %s: %v", s.Host, t.what(), t.dest(), err)
	}
	if err := t.check(d.limits); err != nil {
		return s.refusal(t.what()+" toward "+t.dest(), err)
	}
	return nil
}

// Target tests toward a far end without an agent, at the address the
// guard resolved and allowed (over a Unix socket, which has no policy,
// the agent's owner's, resolved here).
func (s targetCalls) Target(req *agentpb.TargetRequest, stream agentpb.Agent_TargetServer) error {
	ctx := stream.Context()
	t := parseTarget(req)
	if d, ok := ctx.Value(decisionKey{}).(*decision); ok && d.req.target != nil {
		t = d.req.target
	}
	if err := s.vetTarget(ctx, t, true); err != nil {
		return err
	}
	if err := t.check(s.limitsOf(ctx)); err != nil {
		return s.refusal(t.what()+" toward "+t.dest(), err)
	}
	var res *agentpb.TargetResult
	var err error
	switch t.kind {
	case policy.TargetSTAMP:
		res, err = s.runSTAMP(ctx, t)
	case policy.TargetIperf3:
		res, err = s.runIperf3(ctx, t, stream.Send)
	default:
		res, err = s.ping(ctx, t)
	}
	if err != nil {
		return err
	}
	return stream.Send(&agentpb.TargetEvent{Event: &agentpb.TargetEvent_Result{Result: res}})
}

// ping sends a ping call's echoes and reports each as a probe.
func (s targetCalls) ping(ctx context.Context, t *targetCall) (*agentpb.TargetResult, error) {
	p, err := t.pinger()
	if err != nil {
		return nil, s.refusal(t.what(), err)
	}
	got, err := p.Run(ctx)
	var silent *icmpecho.SilentError
	if err != nil && got.Sent == 0 && !errors.As(err, &silent) {
		return nil, status.Errorf(codes.FailedPrecondition, "agent on %s: %s toward %s: %v", s.Host, t.what(), t.dest(), err)
	}
	res := &agentpb.TargetResult{Kind: t.kind, Address: t.dest(), Socket: got.Socket,
		Late: uint32(got.Late), Reordered: uint32(got.Reordered), Duplicates: uint32(got.Duplicates),
		Bytes: uint64(got.Sent) * uint64(p.Bytes()/int64(p.Count)), Probes: &agentpb.ProbeSummary{}}
	for i, e := range got.Echoes {
		r := &agentpb.ProbeResult{Seq: uint32(i), SentNs: e.Sent.UnixNano()}
		if e.Replied {
			r.ReceivedNs = r.SentNs + max(int64(e.RTT), 1)
		}
		res.Probes.Results = append(res.Probes.Results, r)
	}
	switch {
	case errors.As(err, &silent):
		res.Silent, res.Error = true, err.Error()
	case err != nil:
		res.Error = err.Error()
		res.Probes.Partial, res.Probes.Error = true, res.Error
	}
	return res, nil
}

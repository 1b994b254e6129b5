package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wanlab/wanlab/internal/workload/kinds"
	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/token"
	"golang.org/x/time/rate"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/datadir"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/pki"
	"github.com/wanlab/wanlab/internal/policy"
)

// call is one test call running on the agent.
type call struct {
	id         uint64
	test       string // the controller's test id; "" if none
	who        string // the caller's identity key
	kind       string
	throughput bool // of the throughput class: it wants the host alone
	share      bool // its rule lets it share the host
	started    time.Time
	ends       time.Time // expected; zero when not known
	// alongside counts the other tests that ran while this one ran.
	alongside int
}

// usage is what one identity has running and has moved today.
type usage struct {
	tests int
	day   string
	bytes int64
	// reserved are the bytes the tests running may still move: each holds
	// its reservation until it ends, when what it moved is counted.
	reserved int64
}

// roll starts the count of bytes again on a new day (UTC).
func (u *usage) roll(now time.Time) {
	if today := now.UTC().Format(time.DateOnly); u.day != today {
		u.day, u.bytes = today, 0
	}
}

// host is the agent's state shared by all calls: every test running,
// each identity's usage, and who holds the host for throughput.
type host struct {
	mu      sync.Mutex
	seq     uint64
	running map[uint64]*call
	usage   map[string]*usage
	// pace holds each identity's request rate.
	pace map[string]*rate.Limiter
	// pending counts each identity's calls whose request is awaited.
	pending map[string]int
	waiting int
	// changed is closed, and replaced, whenever a call ends.
	changed chan struct{}
}

func (h *host) init() {
	h.running = map[uint64]*call{}
	h.usage = map[string]*usage{}
	h.pace = map[string]*rate.Limiter{}
	h.pending = map[string]int{}
	h.changed = make(chan struct{})
}

// holders are the throughput-class calls that hold the host, other than
// those of c's own test; share says whether they all let others in.
func (h *host) holders(c *call) (n int, share bool, ends time.Time) {
	share = true
	for _, r := range h.running {
		if !r.throughput || r.who == c.who && r.test != "" && r.test == c.test {
			continue
		}
		n++
		share = share && r.share
		if r.ends.After(ends) {
			ends = r.ends
		}
	}
	return n, share, ends
}

// errBusy is a refusal for a busy host, saying until when.
func (s guard) errBusy(ends time.Time, queued bool) error {
	until := "a test of unknown length ends"
	if !ends.IsZero() {
		until = ends.UTC().Format(time.RFC3339)
	}
	why := "another throughput-class test runs on it"
	if queued {
		why = "its queue of waiting tests is full"
	}
	return status.Errorf(codes.Unavailable, "agent on %s is busy until %s: %s (ask again then, or let the call wait longer)", s.Host, until, why)
}

// enter registers c as running once the host can take it: a
// throughput-class call waits (up to wait, in a queue of at most queue)
// while another test's throughput-class call holds the host, unless both
// may share it. On success it counts c and the calls running alongside.
func (s guard) enter(ctx context.Context, c *call, exclusive bool, wait time.Duration, queue int) error {
	h := &s.host
	deadline := time.Now().Add(wait)
	h.mu.Lock()
	for exclusive && c.throughput {
		n, share, ends := h.holders(c)
		if n == 0 || share && c.share {
			break
		}
		if wait <= 0 {
			h.mu.Unlock()
			return s.errBusy(ends, false)
		}
		if h.waiting >= queue {
			h.mu.Unlock()
			return s.errBusy(ends, true)
		}
		changed := h.changed
		h.waiting++
		h.mu.Unlock()
		timer := time.NewTimer(time.Until(deadline))
		var err error
		select {
		case <-changed:
		case <-timer.C:
			err = s.errBusy(ends, false)
		case <-ctx.Done():
			err = status.FromContextError(ctx.Err()).Err()
		}
		timer.Stop()
		h.mu.Lock()
		h.waiting--
		if err != nil {
			h.mu.Unlock()
			return err
		}
	}
	h.seq++
	c.id = h.seq
	for _, r := range h.running {
		if r.who == c.who && r.test != "" && r.test == c.test {
			continue // the other side of the same test
		}
		r.alongside++
		c.alongside++
	}
	h.running[c.id] = c
	h.mu.Unlock()
	return nil
}

// leave ends c's registration and wakes the calls waiting for the host.
func (s guard) leave(c *call) int {
	h := &s.host
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.running, c.id)
	close(h.changed)
	h.changed = make(chan struct{})
	return c.alongside
}

// caller is who makes a call: over TLS, the identities its certificate
// proves; over a Unix socket, the agent's owner (no identities).
type caller struct {
	ids    []string
	remote string
}

// key names the caller in usage counts and serving-role ids.
func (c caller) key() string {
	if len(c.ids) == 0 {
		return "owner"
	}
	return c.ids[0]
}

func (c caller) String() string {
	if len(c.ids) == 0 {
		return "the agent's owner (Unix socket)"
	}
	return strings.Join(c.ids, ",")
}

func callerOf(ctx context.Context) caller {
	var c caller
	p, ok := peer.FromContext(ctx)
	if !ok {
		return c
	}
	if p.Addr != nil {
		c.remote = p.Addr.String()
	}
	if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.PeerCertificates) > 0 {
		c.ids = pki.Identities(ti.State.PeerCertificates[0])
	}
	return c
}

// request is what the guard reads of a call before it runs.
type request struct {
	kind  string
	peers []string // addresses the agent will send test traffic toward
	// lasts is how long the test is expected to run (0: not known), and
	// bytes what it declares it will move (0: not known).
	lasts time.Duration
	bytes int64
	// rate is the rate it declares, in bit/s (0: not known).
	rate float64
	// target is a Target call's far end (target.go); nil for other calls.
	target *targetCall
}

// describe reads a call's kind, the peers it sends toward, and its
// declared length and bytes.
func describe(method string, req any) request {
	switch r := req.(type) {
	case *agentpb.ReceiveRequest:
		return request{kind: policy.Throughput, lasts: time.Duration(r.GetSpec().GetDurationNs()), bytes: throughputBytes(r.GetSpec()), rate: throughputRate(r.GetSpec())}
	case *agentpb.SendRequest:
		return request{kind: policy.Throughput, peers: []string{r.GetAddress()}, lasts: time.Duration(r.GetSpec().GetDurationNs()), bytes: throughputBytes(r.GetSpec()), rate: throughputRate(r.GetSpec())}
	case *agentpb.ReflectRequest:
		return request{kind: policy.Probe}
	case *agentpb.ProbeRequest:
		if n := r.GetTraceMaxHops(); n > 0 {
			hops := int(min(n, 1<<10))
			return request{kind: policy.Probe, peers: []string{r.GetAddress()}, lasts: agentapi.TraceLasts(hops, time.Duration(min(max(r.GetTraceWaitNs(), 0), int64(time.Minute)))),
				bytes: int64(hops) * 2 * probe.HeaderLen}
		}
		sp := r.GetSpec()
		return request{kind: policy.Probe, peers: []string{r.GetAddress()}, lasts: time.Duration(sp.GetIntervalNs()) * time.Duration(sp.GetCount()), bytes: int64(sp.GetCount()) * int64(sp.GetSize())}
	case *agentpb.ReceiveFileRequest:
		return request{kind: policy.Transfer, bytes: int64(min(r.GetExpectedSize(), 1<<62))}
	case *agentpb.SendFileRequest:
		return request{kind: policy.Transfer, peers: []string{r.GetAddress()}, bytes: int64(min(r.GetSize(), 1<<62))}
	case *agentpb.DiskRequest:
		return request{kind: policy.Disk, bytes: int64(min(r.GetSize(), 1<<61)) * 2}
	case *agentpb.WorkloadRequest:
		return workloadRequest(r)
	case *agentpb.TargetRequest:
		return describeTarget(r)
	}
	return request{}
}

func throughputBytes(s *agentpb.ThroughputSpec) int64 {
	if s.GetBytes() == 0 || s.GetBytes() > 1<<40 || s.GetStreams() > 1<<16 {
		return int64(min(s.GetBytes(), 1<<40))
	}
	return int64(s.GetBytes()) * int64(s.GetStreams())
}

// throughputRate is a paced test's rate (UDP); 0 for TCP.
func throughputRate(s *agentpb.ThroughputSpec) float64 {
	if s.GetProtocol() != agentpb.Protocol_PROTOCOL_UDP {
		return 0
	}
	return float64(s.GetUdpRateBps())
}

// roleKind is the policy kind of a workload role: for a role of a
// registered kind, its kind's name; "" for a role the agent does not know.
func roleKind(role string) string {
	if k, _, ok := kinds.Role(role); ok {
		return string(k.Name)
	}
	switch role {
	case agentapi.RoleWatch:
		return policy.Watch
	case agentapi.RoleTrainReceiver, agentapi.RoleTrainSender:
		return policy.Bandwidth
	}
	return ""
}

// workloadRequest reads the kind of an application role and the
// addresses it connects to.
func workloadRequest(r *agentpb.WorkloadRequest) request {
	req := request{kind: roleKind(r.GetRole())}
	if req.kind == "" {
		return req
	}
	var targets struct {
		Address  string        `json:"address"`
		Duration time.Duration `json:"duration"`
		Peers    []struct {
			Address string `json:"address"`
		} `json:"peers"`
	}
	json.Unmarshal(r.GetSpecJson(), &targets) // a bad spec is refused by the role itself
	if targets.Address != "" {
		req.peers = append(req.peers, targets.Address)
	}
	for _, p := range targets.Peers {
		req.peers = append(req.peers, p.Address)
	}
	req.lasts = targets.Duration
	if r.GetRole() == agentapi.RoleTrainSender {
		req.bytes = declaredTrainBytes(r.GetSpecJson())
	}
	return req
}

// decision is the guard's verdict on a call, and what it needs at the end.
type decision struct {
	who    caller
	rule   *policy.Rule
	limits limits.Limits
	call   *call
	req    request
	test   string
	start  time.Time
	// slot gives back the call's test slot (nil: none held).
	slot func()
	// reserved is what the call holds of its identity's bytes of the day.
	reserved int64
	// failed counts the bytes of a call that ended in an error before its
	// result could say them (countFailed).
	failed atomic.Int64
}

// countFailed counts n bytes moved by the call of ctx that fails before
// its result is sent, so that they are audited and count toward its
// identity's day all the same.
func countFailed(ctx context.Context, n int64) {
	if d, ok := ctx.Value(decisionKey{}).(*decision); ok {
		d.failed.Add(max(n, 0))
	}
}

type decisionKey struct{}

// limitsOf are the limits of the call ctx belongs to: its rule's, or the
// agent's own.
func (s *Server) limitsOf(ctx context.Context) limits.Limits {
	if d, ok := ctx.Value(decisionKey{}).(*decision); ok && d.rule != nil {
		return d.limits
	}
	return s.Limits
}

// metaOf reads the test id and the wait a controller sent.
func metaOf(ctx context.Context) (test string, wait time.Duration) {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(agentapi.TestHeader); len(v) == 1 && datadir.ValidName(v[0]) == nil {
		test = v[0]
	}
	if v := md.Get(agentapi.WaitHeader); len(v) == 1 {
		if ms, err := strconv.ParseInt(v[0], 10, 64); err == nil && ms > 0 {
			wait = time.Duration(min(ms, int64(time.Hour/time.Millisecond))) * time.Millisecond
		}
	}
	return test, wait
}

// authorize decides a call whose request has been read: over TLS, the
// policy's rule for the caller's identity must allow its kind, its peers
// and its declared bytes, and the identity must have tests and bytes left
// today (its bytes are reserved); only then is a test slot taken (see
// admit) and the host entered (see enter). Every decision is audited;
// finish gives back what an allowed call holds and audits its end.
func (s guard) authorize(ctx context.Context, method string, req any) (context.Context, *decision, error) {
	d := &decision{who: callerOf(ctx), req: describe(method, req), start: time.Now(), limits: s.Limits}
	test, wait := metaOf(ctx)
	d.test = test
	pol := s.policy.Load()
	exclusive := pol != nil
	queue := 0
	if pol != nil {
		queue = pol.Queue
		if err := s.paced(d, pol); err != nil {
			s.auditRefusal(d, method, err.Error())
			return ctx, nil, err
		}
		if err := s.resolveTarget(ctx, d, pol); err != nil {
			s.audit(d, method, "refuse", err.Error(), 0)
			return ctx, nil, err
		}
		if err := s.grant(d, pol, method); err != nil {
			s.audit(d, method, "refuse", err.Error(), 0)
			return ctx, nil, err
		}
		if d.rule != nil {
			wait = min(wait, d.rule.Wait)
		}
	}
	release, err := s.admit(method)
	if err != nil {
		s.release(d, 0)
		s.audit(d, method, "refuse", err.Error(), 0)
		return ctx, nil, err
	}
	d.slot = release
	if d.req.kind == "" { // Hello, StopWorkload, Interfaces: no test
		if pol != nil {
			s.audit(d, method, "allow", "", 0)
		}
		return context.WithValue(ctx, decisionKey{}, d), d, nil
	}
	d.call = &call{test: test, who: d.who.key(), kind: d.req.kind, throughput: policy.ThroughputClass[d.req.kind],
		share: d.rule != nil && d.rule.Share, started: d.start}
	if d.req.lasts > 0 {
		d.call.ends = d.start.Add(d.req.lasts)
	}
	if err := s.enter(ctx, d.call, exclusive, wait, queue); err != nil {
		s.release(d, 0)
		d.slot()
		s.audit(d, method, "refuse", err.Error(), 0)
		return ctx, nil, err
	}
	s.audit(d, method, "allow", "", 0)
	return context.WithValue(ctx, decisionKey{}, d), d, nil
}

// grant finds the caller's rule and checks the call against it, taking
// one of the identity's tests.
func (s guard) grant(d *decision, pol *policy.Policy, method string) error {
	d.rule = pol.Match(d.who.ids)
	if d.rule == nil {
		if method == agentpb.Agent_Hello_FullMethodName {
			return nil // hosts check shows the refusal itself
		}
		return status.Errorf(codes.PermissionDenied, "agent on %s: identity %s is not authorised by this agent's policy (%s): no rule names it", s.Host, d.who, pol.Source)
	}
	d.limits = d.rule.Limits
	rule := d.rule.Describe(pol.Source)
	if d.req.kind == "" {
		return nil
	}
	if d.req.target != nil { // a far end without an agent: the rule's targets, not its peers
		if err := s.grantTarget(d, pol); err != nil {
			return err
		}
	} else if err := s.grantPeers(d, rule); err != nil {
		return err
	}
	h := &s.host
	h.mu.Lock()
	defer h.mu.Unlock()
	u := h.usage[d.who.key()]
	if u == nil {
		u = &usage{}
		h.usage[d.who.key()] = u
	}
	u.roll(time.Now())
	want := reservation(d.req, d.limits, d.rule.Rate)
	held := addBytes(u.bytes, u.reserved)
	switch {
	case u.tests >= d.rule.Limits.MaxTests:
		return agentapi.TooManyTests("agent on %s refuses: %s allows %s %d tests at once, and they run", s.Host, rule, d.who, d.rule.Limits.MaxTests)
	case held >= d.rule.BytesPerDay || want > d.rule.BytesPerDay-held:
		return status.Errorf(codes.ResourceExhausted, "agent on %s refuses: %s allows %s %d bytes a day; %d are used today, %d are reserved by its tests running, and this test reserves %d (%s; the count starts again at 00:00 UTC)",
			s.Host, rule, d.who, d.rule.BytesPerDay, u.bytes, u.reserved, want, reservationBasis(d.req, d.rule.Rate))
	}
	u.tests++
	u.reserved += want
	d.reserved = want
	return nil
}

// grantPeers checks that the caller's rule (described as rule) allows the
// call's kind and reaches its peers.
func (s guard) grantPeers(d *decision, rule string) error {
	if !d.rule.Allows(d.req.kind) {
		return status.Errorf(codes.PermissionDenied, "agent on %s refuses a %s test: %s does not allow it for %s (it allows %s)", s.Host, d.req.kind, rule, d.who, strings.Join(d.rule.Kinds, ", "))
	}
	for _, p := range d.req.peers {
		addr, err := peerAddr(p)
		if err != nil {
			return status.Errorf(codes.InvalidArgument, "agent on %s refuses a %s test toward %q: %v", s.Host, d.req.kind, p, err)
		}
		if !d.rule.Reaches(addr) {
			return status.Errorf(codes.PermissionDenied, "agent on %s refuses to send toward %s: %s does not list it among its peers", s.Host, addr, rule)
		}
	}
	return nil
}

// peerAddr is the IP address of a host:port a call sends toward. Names
// are not resolved: a policy is about addresses.
func peerAddr(hostport string) (netip.Addr, error) {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return netip.Addr{}, err
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("give an IP address, not %q", host)
	}
	return a.Unmap(), nil
}

// release gives back the identity's test and its reservation, and counts
// the bytes it moved.
func (s guard) release(d *decision, moved int64) {
	if d.rule == nil || d.req.kind == "" {
		return
	}
	h := &s.host
	h.mu.Lock()
	defer h.mu.Unlock()
	if u := h.usage[d.who.key()]; u != nil {
		u.tests--
		u.reserved -= d.reserved
		d.reserved = 0
		u.bytes = addBytes(u.bytes, moved)
	}
}

// finish ends a call: it leaves the host, gives back what the identity
// held, and audits the end with the bytes moved; it returns the number of
// tests that ran alongside.
func (s guard) finish(d *decision, method string, moved int64, err error) int {
	if d == nil {
		return 0
	}
	if d.slot != nil {
		d.slot()
		d.slot = nil
	}
	if d.call == nil {
		return 0
	}
	alongside := s.leave(d.call)
	s.release(d, moved)
	why := ""
	if err != nil {
		why = err.Error()
	}
	s.audit(d, method, "end", why, moved)
	return alongside
}

// alongsideOf is how many tests have run alongside d's so far.
func (s *Server) alongsideOf(d *decision) uint32 {
	if d == nil || d.call == nil {
		return 0
	}
	s.host.mu.Lock()
	defer s.host.mu.Unlock()
	return uint32(d.call.alongside)
}

// stamp labels a result with the tests that ran alongside and returns
// the bytes it says were moved, for the identity's daily count.
func (s guard) stamp(d *decision, m any) int64 {
	switch r := m.(type) {
	case *agentpb.ThroughputEvent:
		if sum := r.GetSummary(); sum != nil {
			sum.Alongside = s.alongsideOf(d)
			var n uint64
			for _, st := range sum.Streams {
				n += st.GetBytes()
			}
			return int64(min(n, 1<<62))
		}
	case *agentpb.TransferEvent:
		if res := r.GetResult(); res != nil {
			res.Alongside = s.alongsideOf(d)
			return int64(min(res.GetBytes(), 1<<62))
		}
	case *agentpb.TransferResult:
		r.Alongside = s.alongsideOf(d)
		return int64(min(r.GetBytes(), 1<<62))
	case *agentpb.ProbeEvent:
		if sum := r.GetSummary(); sum != nil {
			sum.Alongside = s.alongsideOf(d)
		}
	case *agentpb.ProbeSummary:
		r.Alongside = s.alongsideOf(d)
		if d != nil {
			return d.req.bytes
		}
	case *agentpb.DiskResult:
		r.Alongside = s.alongsideOf(d)
		return int64(min(r.GetBytes(), 1<<61)) * 2
	case *agentpb.TargetEvent:
		if res := r.GetResult(); res != nil {
			res.Alongside = s.alongsideOf(d)
			return int64(min(res.GetBytes(), 1<<62))
		}
	case *agentpb.WorkloadEvent:
		if sum := r.GetSummaryJson(); sum != nil && d != nil && d.req.kind == policy.Bandwidth {
			return trainBytes(sum)
		}
	}
	return 0
}

// nameRule adds to a refusal over a limit the policy rule whose limits
// they were, so that the caller knows whom to ask.
func (s guard) nameRule(d *decision, err error) error {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.ResourceExhausted || d == nil || d.rule == nil {
		return err
	}
	pol := s.policy.Load()
	return status.Errorf(st.Code(), "%s (the limits of %s for %s)", st.Message(), d.rule.Describe(pol.Source), d.who)
}

// listening is the event that tells the controller where a test listens,
// with its token and the tests running alongside so far.
func (s *Server) listening(ctx context.Context, port int, t token.Token) *agentpb.Listening {
	d, _ := ctx.Value(decisionKey{}).(*decision)
	return &agentpb.Listening{Port: uint32(port), Token: t.Bytes(), Alongside: s.alongsideOf(d)}
}

// maxPaced bounds the identities whose request rate is kept: past it, the
// oldest are forgotten (a forgotten identity starts with a full burst).
const maxPaced = 4096

// paced refuses a call of an identity that calls faster than its rule's
// requests per second allow (the default rate for identities no rule names).
func (s guard) paced(d *decision, pol *policy.Policy) error {
	perSecond, rule := policy.DefaultRequests, "the default"
	if r := pol.Match(d.who.ids); r != nil {
		perSecond, rule = r.Requests, fmt.Sprintf("rule %q's", r.Name)
	}
	h := &s.host
	h.mu.Lock()
	lim := h.pace[d.who.key()]
	if lim == nil || lim.Limit() != rate.Limit(perSecond) {
		if len(h.pace) >= maxPaced {
			clear(h.pace)
		}
		lim = rate.NewLimiter(rate.Limit(perSecond), max(2*int(perSecond), 4))
		h.pace[d.who.key()] = lim
	}
	h.mu.Unlock()
	if !lim.Allow() {
		return status.Errorf(codes.ResourceExhausted, "agent on %s: %s calls faster than %s %g per second: slow down", s.Host, d.who, rule, perSecond)
	}
	return nil
}

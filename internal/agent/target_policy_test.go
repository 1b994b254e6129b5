package agent

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/farend"
	"github.com/wanlab/wanlab/internal/policy"
)

// TestTargetZoneIndex: a link-local far end asked with its interface's
// index is the interface's name to the policy, whose entries name it.
func TestTargetZoneIndex(t *testing.T) {
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Skipf("no loopback interface named lo: %v", err)
	}
	tg := parseTarget(pingReq("fe80::1%"+strconv.Itoa(lo.Index), 1))
	if tg.bad != nil || tg.addr.Zone() != "lo" {
		t.Fatalf("fe80::1%%%d reads as %v (%v), want zone lo", lo.Index, tg.addr, tg.bad)
	}
	if tg := parseTarget(pingReq("fe80::1%999999", 1)); tg.bad == nil {
		t.Errorf("a zone of no interface: %v", tg.addr)
	}
}

// TestTargetNameNotLookedUp: the name of a far end is resolved only for a
// caller whose rule may test toward a far end of its kind at its port;
// others are refused before any lookup, and audited.
func TestTargetNameNotLookedUp(t *testing.T) {
	s, pol := guarded(t, targetPolicy)
	tests := []struct {
		name, id string
		req      *agentpb.TargetRequest
		says     string
	}{
		{"a rule without targets", "cn:none", pingReq("far.invalid", 1), `rule "none" (p.yaml:11) names no targets`},
		{"a rule without the kind", "cn:thr", pingReq("far.invalid", 1), "does not allow probe tests"},
		{"no entry for the port", "cn:ctl", &agentpb.TargetRequest{Kind: policy.TargetSTAMP, Address: "far.invalid:53"}, "lists no target for a STAMP test at port 53"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &decision{who: caller{ids: []string{tc.id}}, req: describe(agentpb.Agent_Target_FullMethodName, tc.req)}
			err := s.resolveTarget(context.Background(), d, pol)
			if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "its name not looked up") || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want a refusal before the lookup saying %q", err, tc.says)
			}
		})
	}
}

// TestResolveSlots: one identity resolves at most maxResolving names at
// once; another is not held up by it.
func TestResolveSlots(t *testing.T) {
	var r resolveSlots
	var releases []func()
	for i := range maxResolving {
		rel, ok := r.take("cn:a")
		if !ok {
			t.Fatalf("resolution %d refused", i+1)
		}
		releases = append(releases, rel)
	}
	if _, ok := r.take("cn:a"); ok {
		t.Fatalf("resolution %d allowed", maxResolving+1)
	}
	if rel, ok := r.take("cn:b"); !ok {
		t.Fatal("another identity refused")
	} else {
		rel()
	}
	releases[0]()
	if _, ok := r.take("cn:a"); !ok {
		t.Fatal("refused after one ended")
	}
}

// TestTargetResolvingBounded: a caller with maxResolving lookups under
// way is refused another, before it reaches the resolver.
func TestTargetResolvingBounded(t *testing.T) {
	s, pol := guarded(t, targetPolicy)
	for range maxResolving {
		rel, ok := s.resolving.take("cn:ctl")
		if !ok {
			t.Fatal("no slot")
		}
		defer rel()
	}
	d := &decision{who: caller{ids: []string{"cn:ctl"}}, req: describe(agentpb.Agent_Target_FullMethodName, pingReq("far.invalid", 1))}
	err := s.resolveTarget(context.Background(), d, pol)
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "names being resolved") {
		t.Fatalf("got %v", err)
	}
}

// TestUnavailableReasons: the two refusals of code Unavailable say which
// they are in an ErrorInfo.
func TestUnavailableReasons(t *testing.T) {
	for _, reason := range []string{farend.ReasonBusy, farend.ReasonResolveTimeout} {
		err := unavailable(reason, "agent on a: %v", errors.New("why"))
		st := status.Convert(err)
		if st.Code() != codes.Unavailable || st.Message() != "agent on a: why" {
			t.Fatalf("%v", err)
		}
		var got []string
		for _, d := range st.Details() {
			if info, ok := d.(*errdetails.ErrorInfo); ok && info.Domain == farend.ErrorDomain {
				got = append(got, info.Reason)
			}
		}
		if len(got) != 1 || got[0] != reason {
			t.Errorf("reasons %v, want %s", got, reason)
		}
	}
}

// FuzzParseTarget: whatever a Target request's address says, reading it
// neither panics nor yields an address with a numeric zone (the policy
// names interfaces), nor a port out of range.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"192.0.2.1", "[2001:db8::1]:8620", "fe80::1%eth0", "fe80::1%1", "[fe80::1%lo]:862", "far.example:5201", "::ffff:192.0.2.1"} {
		f.Add("stamp", s, uint32(0))
		f.Add("ping", s, uint32(6))
	}
	f.Fuzz(func(t *testing.T, kind, address string, family uint32) {
		tg := parseTarget(&agentpb.TargetRequest{Kind: kind, Address: address, Family: family})
		if tg.bad != nil {
			return
		}
		if _, err := strconv.Atoi(tg.addr.Zone()); err == nil {
			t.Fatalf("%q: a numeric zone kept: %v", address, tg.addr)
		}
		if tg.port < 0 || tg.port > 65535 || tg.addr.Is4In6() {
			t.Fatalf("%q: port %d, address %v", address, tg.port, tg.addr)
		}
	})
}

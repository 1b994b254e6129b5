package agent

import (
	"testing"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/agent/agentpb"
)

// A refusal for the identity's tests at once says so beside its code, so
// that a controller tells it from the bytes of the day's.
func TestGrantTooManyTestsReason(t *testing.T) {
	s, pol := guarded(t, `rules:
  - name: ops
    identities: [cn:ctl]
    kinds: [throughput]
    peers: [10.1.0.0/16]
    limits: {tests: 1, bytes_per_day: 1000}
`)
	send := func() *decision {
		return &decision{who: caller{ids: []string{"cn:ctl"}}, req: describe("", &agentpb.SendRequest{Spec: &agentpb.ThroughputSpec{Streams: 1, Bytes: 600}, Address: "10.1.0.1:1"})}
	}
	d := send()
	if err := s.grant(d, pol, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.grant(send(), pol, ""); !agentapi.IsTooManyTests(err) {
		t.Errorf("a second test at once: %v, want a TooManyTests refusal", err)
	}
	s.release(d, 600)
	if err := s.grant(send(), pol, ""); err == nil || agentapi.IsTooManyTests(err) {
		t.Errorf("over the bytes of the day: %v, want a refusal other than TooManyTests", err)
	}
}

package agent

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/policy"
	"github.com/wanlab/wanlab/internal/workload/disk"
	"github.com/wanlab/wanlab/internal/workload/mesh"
	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/throughput"
	"github.com/wanlab/wanlab/internal/workload/transfer"
)

// FuzzDecodeRequest sends any bytes as the request of any method of the
// agent through what the agent does with a request before anything runs:
// the decoding, the guard's reading of it (kind, peers, length, bytes),
// its reservation of bytes, the policy's check, and the conversion and
// check of its spec against the limits. Nothing panics, what the guard
// holds is given back, and what one request makes the agent allocate is
// bounded by its size.
func FuzzDecodeRequest(f *testing.F) {
	methods := make([]string, 0, len(requestTypes()))
	for m := range requestTypes() {
		methods = append(methods, m)
	}
	slices.Sort(methods)
	tcp := throughput.SpecToPB(throughput.Spec{Protocol: throughput.TCP, Streams: 4, Duration: 10 * time.Second, Interval: time.Second})
	udp := throughput.SpecToPB(throughput.Spec{Protocol: throughput.UDP, Streams: 1, Bytes: 1 << 20, UDPRate: 1e6, UDPLength: 1400, Interval: time.Second})
	seeds := []proto.Message{
		&agentpb.HelloRequest{ApiVersion: agentapi.APIVersion},
		&agentpb.ReceiveRequest{Spec: tcp},
		&agentpb.SendRequest{Spec: udp, Address: "10.0.0.1:5201", Token: make([]byte, 16)},
		&agentpb.ReflectRequest{IdleNs: int64(time.Second)},
		&agentpb.ProbeRequest{Spec: probe.SpecToPB(probe.Spec{Count: 10, Interval: time.Millisecond, Size: 64, Timeout: time.Second}), Address: "[2001:db8::1]:7"},
		&agentpb.ProbeRequest{TraceMaxHops: 30, TraceWaitNs: int64(time.Second), Address: "10.0.0.1:33434"},
		&agentpb.DiskRequest{Size: 1 << 30, Block: 1 << 20},
		&agentpb.ReceiveFileRequest{Spec: transfer.SpecToPB(transfer.Spec{Streams: 2, Block: 1 << 20}), ExpectedSize: 1 << 30},
		&agentpb.SendFileRequest{Spec: transfer.SpecToPB(transfer.Spec{Streams: 2, Block: 1 << 20}), Size: 1 << 30, Address: "10.0.0.1:1"},
		&agentpb.WorkloadRequest{Id: "w", Role: mesh.RoleNode, SpecJson: []byte(`{"duration":1000000000,"peers":[{"address":"10.0.0.2:1"}]}`)},
		&agentpb.WorkloadRequest{Id: "t", Role: agentapi.RoleTrainSender, SpecJson: []byte(`{"address":"10.0.0.2:1","streams":[{"count":100,"size":1400}]}`)},
		&agentpb.StopWorkloadRequest{Id: "w"},
		&agentpb.InterfacesRequest{},
		&agentpb.TargetRequest{Kind: policy.TargetPing, Address: "10.0.0.1", Probe: probe.SpecToPB(probe.Spec{Count: 10, Interval: 10 * time.Millisecond, Size: 56, Timeout: time.Second})},
		&agentpb.TargetRequest{Kind: policy.TargetPing, Address: "[2001:db8::1]", Family: 6},
		&agentpb.TargetRequest{Kind: policy.TargetPing, Address: "dtn.example", Family: 4},
		&agentpb.TargetRequest{Kind: policy.TargetSTAMP, Address: "[2001:db8::7]:862", Probe: probe.SpecToPB(probe.Spec{Count: 100, Interval: time.Millisecond, Size: 44, Timeout: time.Second})},
		&agentpb.TargetRequest{Kind: policy.TargetIperf3, Address: "10.0.0.9:5201", Throughput: tcp, Reverse: true},
	}
	for _, m := range seeds {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		i := slices.IndexFunc(methods, func(method string) bool {
			return requestOf(method).ProtoReflect().Descriptor() == m.ProtoReflect().Descriptor()
		})
		f.Add(uint8(i), b)
	}
	lim := limits.Default
	pol, err := policy.Parse("p.yaml", []byte(`rules:
  - name: ops
    identities: [cn:ctl]
    kinds: [throughput, probe, transfer, disk, bandwidth, eventdb, taskfarm, mesh, watch]
    peers: [10.0.0.0/8, "2001:db8::/32"]
    targets: [10.0.0.0/8, "2001:db8::/32"]
    limits: {tests: 4, bytes_per_day: 1TB, rate: 1Gbit}
`), lim)
	if err != nil {
		f.Fatal(err)
	}
	s := guard{auditor{&Server{Host: "h", Limits: lim}}}
	s.host.init()
	s.SetPolicy(pol)

	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		method := methods[int(which)%len(methods)]
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		vetRequest(t, s, pol, method, data)
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20+64*uint64(len(data)) {
			t.Errorf("%s: a request of %d bytes made the agent allocate %d bytes", method, len(data), n)
		}
	})
}

// vetRequest decodes data as method's request and checks it as the agent
// does before it runs anything.
func vetRequest(t *testing.T, s guard, pol *policy.Policy, method string, data []byte) {
	req := requestOf(method)
	if proto.Unmarshal(data, req) != nil {
		return
	}
	d := &decision{who: caller{ids: []string{"cn:ctl"}}, req: describe(method, req), limits: s.Limits}
	if r := reservation(d.req, pol.Rules[0].Limits, pol.Rules[0].Rate); r < 0 || r > 1<<62 {
		t.Fatalf("%s: a reservation of %d bytes", method, r)
	}
	if err := s.grant(d, pol, method); err == nil {
		s.release(d, d.req.bytes)
	}
	if u := s.host.usage["cn:ctl"]; u != nil && (u.tests != 0 || u.reserved != 0 || u.bytes < 0) {
		t.Fatalf("%s: the identity holds %d tests and %d reserved bytes after its end (%d moved)", method, u.tests, u.reserved, u.bytes)
	}
	lim := d.limits
	switch r := req.(type) {
	case *agentpb.ReceiveRequest:
		throughput.SpecFromPB(r.GetSpec()).Validate(lim)
	case *agentpb.SendRequest:
		throughput.SpecFromPB(r.GetSpec()).Validate(lim)
	case *agentpb.ProbeRequest:
		probe.SpecFromPB(r.GetSpec()).Validate(lim)
	case *agentpb.DiskRequest:
		disk.Spec{Size: int64(min(r.GetSize(), 1<<63-1)), Block: int(r.GetBlock())}.Validate(lim)
	case *agentpb.ReceiveFileRequest:
		transfer.SpecFromPB(r.GetSpec()).Validate(lim)
	case *agentpb.SendFileRequest:
		transfer.SpecFromPB(r.GetSpec()).Validate(lim)
	case *agentpb.TargetRequest:
		parseTarget(r).check(lim)
	}
}

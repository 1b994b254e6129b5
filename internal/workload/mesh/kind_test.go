package mesh

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
)

func TestCheck(t *testing.T) {
	n := func(i int) *int { return &i }
	kindtest.RunChecks(t, []string{"a", "b", "c"}, Check, []kindtest.CheckCase[Raw, Spec]{
		{Name: "defaults: every host, the seed's sizes",
			Step: &Spec{Hosts: []string{"a", "b", "c"}, Duration: 10 * time.Minute, MaxWait: time.Minute,
				Sizes: []int64{1_600_000_000, 800_000_000, 300_000_000}, Streams: 16, Port: DefaultPort}},
		{Name: "all set",
			Raw: Raw{Hosts: []string{"a", "c"}, Duration: "30s", MaxWait: "2s", Sizes: []string{"1MB"}, Streams: n(2), Port: n(5300), Disk: true},
			Step: &Spec{Hosts: []string{"a", "c"}, Duration: 30 * time.Second, MaxWait: 2 * time.Second,
				Sizes: []int64{1_000_000}, Streams: 2, Port: 5300, Disk: true}},
		{Name: "one host", Raw: Raw{Hosts: []string{"a"}},
			Want: []string{"hosts: a mesh needs at least two hosts"}},
		{Name: "an unknown host", Raw: Raw{Hosts: []string{"a", "x"}},
			Want: []string{`hosts[1]: unknown host "x"`}},
		{Name: "a size under a byte per stream", Raw: Raw{Sizes: []string{"1MB", "3B"}, Streams: n(4)},
			Want: []string{"sizes[1]: 3B is smaller than one byte per stream"}},
		{Name: "out of range", Raw: Raw{Streams: n(0), Port: n(70000)},
			Want: []string{"streams: 0 is out of range: from 1 to 256", "port: 70000 is out of range: from 1 to 65535"}},
		{Name: "no time", Raw: Raw{Duration: "0s"},
			Want: []string{"duration: must be positive"}},
		{Name: "over the agent's limits", Raw: Raw{Duration: "1000000h", Sizes: []string{"100TB"}},
			Want: []string{"duration: ", "sizes[0]: "}},
	})
}

func TestDecode(t *testing.T) {
	if s := Kind.Decode(func(any) bool { return false }, kindtest.NewCheck("a", "b", "c")); s != nil {
		t.Errorf("settings that do not decode gave %v", s)
	}
	s := Kind.Decode(func(raw any) bool { raw.(*Raw).Hosts = []string{"b", "c"}; return true }, kindtest.NewCheck("a", "b", "c"))
	m, ok := s.(*Spec)
	if !ok || !slices.Equal(m.Hosts, []string{"b", "c"}) || m.Length() != 10*time.Minute || m.RoleHosts() != nil {
		t.Errorf("decoded %+v", s)
	}
}

func TestNodeValidate(t *testing.T) {
	loop := NodeSpec{Peers: []Peer{{Name: "p", Address: "127.0.0.1:1", Weight: 1}}, Sizes: []int64{1000}, Streams: 2, Duration: time.Second}
	for _, tc := range []struct {
		name string
		node Node
		want string
	}{
		{"fine", Node{Port: 5201, NodeSpec: loop}, ""},
		{"any port", Node{NodeSpec: loop}, ""},
		{"a port out of range", Node{Port: 70000, NodeSpec: loop}, "port 70000: give 0 (any) to 65535"},
		{"a loop without peers", Node{Port: 5201, NodeSpec: NodeSpec{Sizes: []int64{1000}, Duration: time.Second}}, "no peers to send to"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.node.Validate(limits.Default)
			if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want %q", err, tc.want)
			}
		})
	}
}

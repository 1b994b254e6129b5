package eventdb

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
	"github.com/wanlab/wanlab/internal/workload/token"
)

func TestCheck(t *testing.T) {
	n := func(i int) *int { return &i }
	for _, tc := range []struct {
		name string
		raw  Raw
		want []string // the problems, in order; each a prefix
		spec func(*Spec) bool
	}{
		{name: "defaults", raw: Raw{Server: "s", Clients: []string{"c1", "c2"}},
			spec: func(e *Spec) bool {
				return e.Store == Store{Events: 50000, EventSize: 40000, PageSize: 8192} && e.EventsPerJob == 3000 &&
					e.Jobs == 1 && e.ServerModel == ModelSingle && e.Timeout == 25*time.Second
			}},
		{name: "threads make the model threads", raw: Raw{Server: "s", Clients: []string{"c1"}, Threads: n(4), Timeout: "5s"},
			spec: func(e *Spec) bool {
				return e.ServerModel == ModelThreads && e.Threads == 4 && e.Timeout == 5*time.Second
			}},
		{name: "hosts", raw: Raw{Server: "s", Clients: []string{"s", "x"}},
			want: []string{`clients[0]: "s" is the server`, `clients[1]: unknown host "x"`}},
		{name: "no clients", raw: Raw{Server: "s"},
			want: []string{"clients: missing: list the client hosts, such as [client1, client2]"}},
		{name: "the server's check", raw: Raw{Server: "s", Clients: []string{"c1"}, ServerModel: "forked"},
			want: []string{`: unknown server model "forked"`}},
		{name: "the clients' check", raw: Raw{Server: "s", Clients: []string{"c1"}, Jobs: n(10000)},
			want: []string{": each client: jobs 10000: over the agent's limit"}},
		{name: "said at the field, not again", raw: Raw{Server: "s", Clients: []string{"c1"}, PageSize: "8 bytes and more"},
			want: []string{"page_size: "}},
		{name: "more events than the store", raw: Raw{Server: "s", Clients: []string{"c1"}, Events: n(10), EventsPerJob: n(20)},
			want: []string{"events_per_job: 20 is more than the store holds (10 events)"}},
		{name: "timeout", raw: Raw{Server: "s", Clients: []string{"c1"}, Timeout: "0s"},
			want: []string{"timeout: must be positive"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := kindtest.NewCheck("s", "c1", "c2")
			e := Check(c, tc.raw)
			if len(c.Found) != len(tc.want) {
				t.Fatalf("problems %q, want %q", c.Found, tc.want)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(c.Found[i], w) {
					t.Errorf("problem %q, want %q", c.Found[i], w)
				}
			}
			if tc.spec != nil && !tc.spec(e) {
				t.Errorf("spec %+v", e)
			}
		})
	}
}

func TestSpecRoles(t *testing.T) {
	e := &Spec{Server: "s", Clients: []string{"c1", "c2"}, Store: Store{Events: 10, EventSize: 8192, PageSize: 8192},
		EventsPerJob: 5, Jobs: 3, ServerModel: ModelThreads, Threads: 2, Timeout: time.Second}
	if got := e.RoleHosts(); !slices.Equal(got["server"], []string{"s"}) || !slices.Equal(got["client"], e.Clients) || e.Length() != 0 {
		t.Errorf("role hosts %v, length %v", got, e.Length())
	}
	if s := e.server(token.Token{}); s.Sessions != 6 || s.Model != ModelThreads || s.Threads != 2 {
		t.Errorf("server %+v", s)
	}
	if c := e.client(1, "a:1", 7, token.Token{}); c.FirstJob != 3 || c.Jobs != 3 || c.Address != "a:1" || c.Seed != 7 {
		t.Errorf("client %+v", c)
	}
}

// TestDecode: the kind decodes a step's settings into Raw and checks them
// into its Spec; settings that do not decode make no step.
func TestDecode(t *testing.T) {
	c := kindtest.NewCheck("s", "c1")
	s := Kind.Decode(func(raw any) bool {
		*raw.(*Raw) = Raw{Server: "s", Clients: []string{"c1"}, ServerModel: ModelConnection}
		return true
	}, c)
	if e, ok := s.(*Spec); !ok || e.Server != "s" || e.ServerModel != ModelConnection || len(c.Found) != 0 {
		t.Errorf("decoded %#v, problems %q", s, c.Found)
	}
	if s := Kind.Decode(func(any) bool { return false }, c); s != nil {
		t.Errorf("settings that do not decode made %#v", s)
	}
}

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

// TestCheckServers: a step of several servers (servers:) instead of one
// (server:): exactly one of the two, each server a host of the test-bed
// listed once and no client, no more servers than clients, each client
// reached by its own server.
func TestCheckServers(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  Raw
		cut  []string // hosts that reach no other
		want []string // the problems, in order; each a prefix
	}{
		{name: "several servers", raw: Raw{Servers: []string{"s1", "s2"}, Clients: []string{"c1", "c2", "c3"}}},
		{name: "one server in servers", raw: Raw{Servers: []string{"s1"}, Clients: []string{"c1"}}},
		{name: "both", raw: Raw{Server: "s1", Servers: []string{"s2"}, Clients: []string{"c1"}},
			want: []string{"servers: give one server (server: s1) or several (servers: [...]), not both"}},
		{name: "neither", raw: Raw{Clients: []string{"c1"}},
			want: []string{"server: missing: name the server's host (server: HOST), or several servers (servers: [HOST, ...])"}},
		{name: "an empty list", raw: Raw{Servers: []string{}, Clients: []string{"c1"}},
			want: []string{"servers: an empty list: name the servers' hosts"}},
		{name: "a server twice", raw: Raw{Servers: []string{"s1", "s2", "s1"}, Clients: []string{"c1", "c2", "c3"}},
			want: []string{`servers[2]: "s1" is servers[0] already: list each server once`}},
		{name: "a server also a client", raw: Raw{Servers: []string{"s1", "s2"}, Clients: []string{"c1", "s2"}},
			want: []string{`clients[1]: "s2" is a server (servers[1]): a host is a server or a client of the step, not both`}},
		{name: "servers not hosts of the scenario", raw: Raw{Servers: []string{"s1", "x", ""}, Clients: []string{"c1", "c2", "c3"}},
			want: []string{`servers[1]: unknown host "x"`, "servers[2]: missing: name a host of the test-bed"}},
		{name: "more servers than clients", raw: Raw{Servers: []string{"s1", "s2", "s3"}, Clients: []string{"c1", "c2"}},
			want: []string{"servers: more servers (3) than clients (2): client i reads from servers[i mod 3], so servers[2] on would serve none"}},
		{name: "no clients", raw: Raw{Servers: []string{"s1", "s2"}},
			want: []string{"clients: missing: list the client hosts, such as [client1, client2]"}},
		// c2 reads from s2, which is cut off; c1 and c3 read from s1.
		{name: "each client reached by its own server", raw: Raw{Servers: []string{"s1", "s2"}, Clients: []string{"c1", "c2", "c3"}}, cut: []string{"s2"},
			want: []string{"clients[1]: hosts s2 and c2 cannot reach each other"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := kindtest.NewCheck("s1", "s2", "s3", "c1", "c2", "c3")
			c.Cut = tc.cut
			e := Check(c, tc.raw)
			c.Want(t, tc.want...)
			if len(tc.want) == 0 && (e.Server != "" || !slices.Equal(e.Servers, tc.raw.Servers)) {
				t.Errorf("server %q, servers %q", e.Server, e.Servers)
			}
		})
	}
}

// TestServerOf: client i reads from servers[i mod len(servers)]; each
// server expects its own clients' sessions; the role hosts and ends are
// every server's.
func TestServerOf(t *testing.T) {
	e := &Spec{Servers: []string{"s1", "s2", "s3"}, Clients: []string{"c1", "c2", "c3", "c4", "c5"}, Jobs: 2}
	var got []string
	for i := range e.Clients {
		got = append(got, e.serverOf(i))
	}
	if want := []string{"s1", "s2", "s3", "s1", "s2"}; !slices.Equal(got, want) {
		t.Errorf("servers of the clients %q, want %q", got, want)
	}
	for k, want := range []int{4, 4, 2} {
		if s := e.server(k, token.Token{}); s.Sessions != want {
			t.Errorf("server %d expects %d sessions, want %d", k, s.Sessions, want)
		}
	}
	servers, clients, _ := e.Ends()
	if roles := e.RoleHosts(); !slices.Equal(roles["server"], e.Servers) || !slices.Equal(servers, e.Servers) || !slices.Equal(clients, e.Clients) {
		t.Errorf("role hosts %v, ends %q %q", roles, servers, clients)
	}
	if e.subject("s2") != "s2" {
		t.Errorf("a job of a step of several servers does not name its server")
	}
	one := &Spec{Server: "s", Clients: []string{"c1", "c2"}}
	if one.serverOf(1) != "s" || !slices.Equal(one.servers(), []string{"s"}) || one.subject("s") != "" {
		t.Errorf("one server: %q, %q, subject %q", one.serverOf(1), one.servers(), one.subject("s"))
	}
}

func TestSpecRoles(t *testing.T) {
	e := &Spec{Server: "s", Clients: []string{"c1", "c2"}, Store: Store{Events: 10, EventSize: 8192, PageSize: 8192},
		EventsPerJob: 5, Jobs: 3, ServerModel: ModelThreads, Threads: 2, Timeout: time.Second}
	if got := e.RoleHosts(); !slices.Equal(got["server"], []string{"s"}) || !slices.Equal(got["client"], e.Clients) || e.Length() != 0 {
		t.Errorf("role hosts %v, length %v", got, e.Length())
	}
	if s := e.server(0, token.Token{}); s.Sessions != 6 || s.Model != ModelThreads || s.Threads != 2 {
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

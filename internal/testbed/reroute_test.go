package testbed

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wanlab/wanlab/internal/linkemu"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/topology"
)

// ringYAML is three routers in a ring: a's packets to b go the short way
// (r1, r2, r3) unless r1<->r2 is down, then the long way (r1, r3).
const ringYAML = `
name: %s
reroute: %s
routers: {r1: {}, r2: {}, r3: {}}
hosts: {a: {}, b: {}}
links:
  - {between: [a, r1], rate: 100Mbit, delay: 1ms}
  - {between: [r1, r2], rate: 50Mbit, delay: 1ms}
  - {between: [r2, r3], delay: 1ms}
  - {between: [r1, r3], rate: 1Gbit, delay: 5ms}
  - {between: [r3, b], rate: 100Mbit, delay: 1ms}
`

// ringTopology builds ringYAML with the reroute delay given.
func ringTopology(t *testing.T, reroute string) (*topology.Topology, *scenario.Testbed) {
	t.Helper()
	return build(t, fmt.Sprintf(ringYAML, fmt.Sprintf("unit-ring-%d", os.Getpid()), reroute))
}

// build builds a scenario's test-bed, whose name no test-bed up has (the
// daemon's writes of its state fail, and are only logged).
func build(t *testing.T, text string) (*topology.Topology, *scenario.Testbed) {
	t.Helper()
	f, err := scenario.Parse("test.yaml", []byte(text), false)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := topology.New(f.Testbed)
	if err != nil {
		t.Fatal(err)
	}
	return topo, f.Testbed
}

// TestEngineConfigRouters checks that the engine gets each direction's
// entry router and the groups of directions a reroute may join.
func TestEngineConfigRouters(t *testing.T) {
	topo, _ := ringTopology(t, "0s")
	cfg := engineConfig(topo, []int{-1, -1}, 1)
	entry := map[string]string{}
	for _, r := range topo.Routers {
		for _, l := range r.Links {
			entry[l] = r.Addr
		}
	}
	if len(entry) == 0 {
		t.Fatal("no router has links")
	}
	for i, d := range cfg.Dirs {
		want := netip.Addr{}
		if a, ok := entry[d.Name]; ok {
			want = netip.MustParseAddr(a)
		}
		if d.Entry != want || topo.Dirs[i].Entry != entry[d.Name] {
			t.Errorf("direction %s: entry %v (topology %q), want %v", d.Name, d.Entry, topo.Dirs[i].Entry, want)
		}
	}
	if len(cfg.Joined) == 0 || !equalGroups(cfg.Joined, topo.Joined()) {
		t.Errorf("joined %v, want the topology's %v", cfg.Joined, topo.Joined())
	}
	// A topology without routers joins nothing, and no direction has an entry.
	plain := &topology.Topology{Name: "plain", Hosts: topo.Hosts, Dirs: []topology.Direction{{Name: "a->b"}, {Name: "b->a"}}}
	if cfg := engineConfig(plain, []int{-1, -1}, 1); cfg.Joined != nil || cfg.Dirs[0].Entry.IsValid() {
		t.Errorf("without routers: joined %v, entry %v", cfg.Joined, cfg.Dirs[0].Entry)
	}
}

func equalGroups(a, b [][]int) bool {
	return slices.EqualFunc(a, b, func(x, y []int) bool { return slices.Equal(x, y) })
}

// ringDaemon is a daemon of the ring's topology whose engine runs on
// socket pairs in place of TUN devices: no namespace is made.
func ringDaemon(t *testing.T, reroute string) *daemon {
	t.Helper()
	topo, tb := ringTopology(t, reroute)
	return socketDaemon(t, topo, tb, 1)
}

// socketDaemon is a daemon of topo whose engine, of threads threads, runs
// on socket pairs in place of TUN devices.
func socketDaemon(t *testing.T, topo *topology.Topology, tb *scenario.Testbed, threads int) *daemon {
	t.Helper()
	// The daemon logs that it cannot write a state of a test-bed that is not up.
	log.SetOutput(io.Discard)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	var fds []int
	for range topo.Hosts {
		pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(pair[0]); unix.Close(pair[1]) })
		fds = append(fds, pair[0])
	}
	cfg := engineConfig(topo, fds, 1)
	cfg.Threads = threads
	eng, err := linkemu.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- eng.Run() }()
	d := &daemon{name: topo.Name, topo: topo, engine: eng, rerouteDelay: tb.Reroute, hosts: Hosts(topo)}
	d.state = &State{Name: topo.Name, Hosts: d.hosts, Routers: topo.Routers, Routing: topo.Routing,
		Dirs: topo.Dirs, Paths: topo.Paths, Unreachable: topo.Unreachable}
	t.Cleanup(func() {
		d.stopping.Store(true)
		eng.Stop()
		if err := <-done; err != nil {
			t.Errorf("engine: %v", err)
		}
	})
	return d
}

// post calls one of the daemon's handlers with body as JSON.
func post(t *testing.T, h http.HandlerFunc, body any) *httptest.ResponseRecorder {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	h(w, httptest.NewRequest("POST", "/", strings.NewReader(string(data))))
	if w.Code/100 != 2 {
		t.Fatalf("answered %d: %s", w.Code, w.Body)
	}
	return w
}

// via is the directions of a path in the daemon's state.
func via(d *daemon, from, to string) string {
	d.setMu.Lock()
	defer d.setMu.Unlock()
	for _, p := range d.state.Paths {
		if p.From == from && p.To == to {
			return strings.Join(p.Via, ", ")
		}
	}
	return "none"
}

// waitChange records what the engine made until a change whose What
// starts with what is recorded, and returns the names it lists.
func waitChange(t *testing.T, d *daemon, what string) []string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		d.setMu.Lock()
		d.recordApplied()
		for _, c := range d.state.Changes {
			if strings.HasPrefix(c.What, what) {
				d.setMu.Unlock()
				return c.Dirs
			}
		}
		d.setMu.Unlock()
	}
	t.Fatalf("no change %q was recorded", what)
	return nil
}

const (
	short = "a->r1, r1->r2, r2->r3, r3->b"
	long  = "a->r1, r1->r3, r3->b"
)

// TestSetReroutes checks testbed set on a running engine: a direction set
// down keeps its ends, entry router and paths; the routed pairs move
// around it at once (reroute: 0s), in the engine and in the state, and
// back when it comes up; the state records each new path.
func TestSetReroutes(t *testing.T) {
	d := ringDaemon(t, "0s")
	if got := via(d, "a", "b"); got != short {
		t.Fatalf("a -> b via %s, want %s", got, short)
	}
	w := post(t, d.setDirections, SetRequest{Select: "r1<->r2", Settings: []string{"down=true"}})
	var changed []topology.Direction
	if err := json.NewDecoder(w.Body).Decode(&changed); err != nil {
		t.Fatal(err)
	}
	if len(changed) != 2 || changed[0].Name != "r1->r2" || changed[0].From != "r1" || changed[0].To != "r2" || changed[0].Entry == "" || !changed[0].Config.Down {
		t.Errorf("set answered %+v", changed)
	}
	dir, _ := d.topo.Direction("r1->r2")
	if !dir.Config.Down || dir.Entry != changed[0].Entry || dir.From != "r1" {
		t.Errorf("r1->r2 in the state: %+v", dir)
	}
	if got := via(d, "a", "b"); got != long {
		t.Errorf("after r1<->r2 down: a -> b via %s, want %s", got, long)
	}
	if got := waitChange(t, d, "reroute after r1<->r2: down=true"); !slices.Equal(got, []string{"a -> b", "b -> a"}) {
		t.Errorf("the reroute recorded %q", got)
	}
	if got := via(d, "a", "b"); got != long {
		t.Errorf("once the engine made it: a -> b via %s, want %s", got, long)
	}
	if dir, _ := d.topo.Direction("r1->r3"); !slices.Equal(dir.Paths, []string{"a -> b"}) {
		t.Errorf("r1->r3 lists %v", dir.Paths)
	}
	// A setting that is not down moves nothing.
	post(t, d.setDirections, SetRequest{Select: "r1->r3", Settings: []string{"delay=2ms"}})
	if got := via(d, "a", "b"); got != long {
		t.Errorf("after a delay change: a -> b via %s", got)
	}
	post(t, d.setDirections, SetRequest{Select: "r1<->r2", Settings: []string{"down=false"}})
	if got := via(d, "a", "b"); got != short {
		t.Errorf("after r1<->r2 up: a -> b via %s, want %s", got, short)
	}
	waitChange(t, d, "reroute after r1<->r2: down=false")
	if got := via(d, "b", "a"); got != "b->r3, r3->r2, r2->r1, r1->a" {
		t.Errorf("b -> a via %s", got)
	}
}

// TestSetRerouteDelayAndNever checks that the reroute delay postpones the
// move, and that reroute: never keeps the paths.
func TestSetRerouteDelayAndNever(t *testing.T) {
	d := ringDaemon(t, "200ms")
	post(t, d.setDirections, SetRequest{Select: "r1<->r2", Settings: []string{"down=true"}})
	waitChange(t, d, "reroute after r1<->r2: down=true")
	if got := via(d, "a", "b"); got != long {
		t.Errorf("after the delay: a -> b via %s, want %s", got, long)
	}
	d = ringDaemon(t, "never")
	post(t, d.setDirections, SetRequest{Select: "r1<->r2", Settings: []string{"down=true"}})
	waitChange(t, d, "r1<->r2: down=true")
	if got := via(d, "a", "b"); got != short {
		t.Errorf("reroute: never: a -> b via %s, want %s", got, short)
	}
}

// TestTimelineReroutes checks that a timeline's direction going down
// reroutes the pairs in the engine and, once made, in the state; and that
// ending the timeline puts the direction and the paths back.
func TestTimelineReroutes(t *testing.T) {
	d := ringDaemon(t, "0s")
	changes := scenario.Expand([]scenario.Event{{Link: "r1<->r2", At: 0, Set: []string{"down=true"}, For: time.Hour}})
	post(t, d.startTimeline, TimelineRequest{Tag: "t1", Start: time.Now(), Changes: changes})
	waitChange(t, d, "reroute after")
	if got := via(d, "a", "b"); got != long {
		t.Errorf("during the timeline: a -> b via %s, want %s", got, long)
	}
	post(t, d.endTimeline, TimelineRequest{Tag: "t1"})
	if dir, _ := d.topo.Direction("r1->r2"); dir.Config.Down || dir.Entry == "" {
		t.Errorf("after the timeline: r1->r2 %+v", dir)
	}
	if got := via(d, "a", "b"); got != short {
		t.Errorf("after the timeline: a -> b via %s, want %s", got, short)
	}
	waitChange(t, d, "reroute after end of t1")
}

// TestAddName checks that a recorded change lists at most maxChangeNames
// names and counts the rest.
func TestAddName(t *testing.T) {
	var names []string
	for i := range maxChangeNames + 5 {
		names = addName(names, fmt.Sprint(i))
	}
	if len(names) != maxChangeNames+1 || names[0] != "0" || names[maxChangeNames-1] != fmt.Sprint(maxChangeNames-1) || names[maxChangeNames] != "and 5 more" {
		t.Errorf("names %q", names)
	}
}

// TestStateTopology checks that a state read back gives the topology it
// was written from, with working lookups, and that a state past the bound
// is refused before it is read whole.
func TestStateTopology(t *testing.T) {
	topo, _ := ringTopology(t, "0s")
	st := &State{Name: topo.Name, Hosts: Hosts(topo), Routers: topo.Routers, Routing: topo.Routing, Dirs: topo.Dirs, Paths: topo.Paths, Unreachable: topo.Unreachable}
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	back, err := decodeState(strings.NewReader(string(data)), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	got := back.Topology()
	want, _ := json.Marshal(topo)
	if data, _ := json.Marshal(got); string(data) != string(want) {
		t.Errorf("topology of the state:\n%s\nwant\n%s", data, want)
	}
	if p, ok := got.Path("a", "b"); !ok || strings.Join(p.Via, ", ") != short || len(p.Nodes) != 5 {
		t.Errorf("path a -> b: %+v, %v", p, ok)
	}
	if _, err := decodeState(strings.NewReader(string(data)), int64(len(data))-1); !errors.Is(err, errStateTooLarge) {
		t.Errorf("a state past the bound: %v", err)
	}
}

// TestHostsOnly checks what every command run in a host reads of the state
// (hosts.json): the hosts, and none of the paths that make a graph's state
// large.
func TestHostsOnly(t *testing.T) {
	topo, _ := ringTopology(t, "0s")
	st := &State{Name: topo.Name, PID: 42, Cgroup: "v2", Hosts: Hosts(topo), Routers: topo.Routers, Dirs: topo.Dirs, Paths: topo.Paths}
	data, err := json.Marshal(hostsOnly(st))
	if err != nil {
		t.Fatal(err)
	}
	back, err := decodeState(strings.NewReader(string(data)), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if back.Name != st.Name || back.PID != 42 || back.Cgroup != "v2" || len(back.Paths)+len(back.Dirs)+len(back.Routers) != 0 {
		t.Errorf("hosts only: %+v", back)
	}
	for _, h := range st.Hosts {
		if got, err := back.Host(h.Name); err != nil || got.Netns != h.Netns || got.Addr != h.Addr || got.Cgroup != h.Cgroup {
			t.Errorf("host %s: %+v, %v", h.Name, got, err)
		}
	}
}

// twoRingsYAML is two rings of routers, one host pair on each: with two
// engine threads each ring can run on its own, and a reroute must keep
// each new path on the thread of its source (Config.Joined).
const twoRingsYAML = `
name: unit-rings
routers: {r1: {}, r2: {}, r3: {}, s1: {}, s2: {}, s3: {}}
hosts: {a: {}, b: {}, c: {}, d: {}}
links:
  - {between: [a, r1], delay: 1ms}
  - {between: [r1, r2], delay: 1ms}
  - {between: [r2, r3], delay: 1ms}
  - {between: [r1, r3], delay: 5ms}
  - {between: [r3, b], delay: 1ms}
  - {between: [c, s1], delay: 1ms}
  - {between: [s1, s2], delay: 1ms}
  - {between: [s2, s3], delay: 1ms}
  - {between: [s1, s3], delay: 5ms}
  - {between: [s3, d], delay: 1ms}
`

// TestRerouteThreads checks that the engine takes the reroutes of a
// test-bed whose routers run on two threads.
func TestRerouteThreads(t *testing.T) {
	topo, tb := build(t, twoRingsYAML)
	d := socketDaemon(t, topo, tb, 2)
	if n := d.engine.Stats().Threads; n != 2 {
		t.Fatalf("the engine runs %d threads, want 2", n)
	}
	post(t, d.setDirections, SetRequest{Select: "r1<->r2", Settings: []string{"down=true"}})
	post(t, d.setDirections, SetRequest{Select: "s2<->s3", Settings: []string{"down=true"}})
	waitChange(t, d, "reroute after s2<->s3")
	waitChange(t, d, "reroute after r1<->r2")
	if got := via(d, "a", "b"); got != "a->r1, r1->r3, r3->b" {
		t.Errorf("a -> b via %s", got)
	}
	if got := via(d, "d", "c"); got != "d->s3, s3->s1, s1->c" {
		t.Errorf("d -> c via %s", got)
	}
}

package taskfarm

import (
	"fmt"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
)

// newCheck is a check on a test-bed of the hosts m, w1, w2 and off,
// which reaches no other.
func newCheck() *kindtest.Check {
	return &kindtest.Check{HostNames: []string{"m", "w1", "w2", "off"}, Cut: []string{"off"}}
}

func intp(n int) *int { return &n }

func TestCheck(t *testing.T) {
	workers := []string{"w1", "w2"}
	kindtest.RunChecksOn(t, newCheck, Check, []kindtest.CheckCase[Raw, Spec]{
		{Name: "defaults", Raw: Raw{Master: "m", Workers: workers},
			Step: &Spec{Master: "m", Workers: workers, Count: 2, Tasks: 3000, Duration: time.Second, Work: WorkSleep, ResultSize: 512, Prefetch: 1}},
		{Name: "all set", Raw: Raw{Master: "m", Workers: workers, Count: intp(5), Tasks: intp(100), Duration: "20ms", Work: WorkCPU, ResultSize: "1KiB", Prefetch: intp(3)},
			Step: &Spec{Master: "m", Workers: workers, Count: 5, Tasks: 100, Duration: 20 * time.Millisecond, Work: WorkCPU, ResultSize: 1024, Prefetch: 3}},
		{Name: "no workers", Raw: Raw{Master: "m"}, Want: []string{"workers: missing: list the worker hosts"}},
		{Name: "no master", Raw: Raw{Workers: workers}, Want: []string{"master: missing: name a host of the test-bed"}},
		{Name: "unknown worker", Raw: Raw{Master: "m", Workers: []string{"w1", "c9"}}, Want: []string{`workers[1]: unknown host "c9"`}},
		{Name: "the master as a worker", Raw: Raw{Master: "m", Workers: []string{"m"}}, Want: []string{`workers[0]: "m" is the master`}},
		{Name: "a worker out of reach", Raw: Raw{Master: "m", Workers: []string{"off"}}, Want: []string{"workers[0]: hosts m and off cannot reach each other"}},
		{Name: "fewer workers than hosts", Raw: Raw{Master: "m", Workers: workers, Count: intp(1)},
			Want: []string{"count: 1 is out of range: from 2 to 100000"}},
		{Name: "fields out of range, said once", Raw: Raw{Master: "m", Workers: workers, Tasks: intp(0), Prefetch: intp(1001), Work: "gpu"},
			Want: []string{"tasks: 0 is out of range: from 1 to 10000000", "prefetch: 1001 is out of range: from 1 to 1000"}},
		{Name: "an unknown work", Raw: Raw{Master: "m", Workers: workers, Work: "gpu"}, Want: []string{`: work "gpu": sleep or cpu`}},
		{Name: "a result over the bound", Raw: Raw{Master: "m", Workers: workers, ResultSize: "65MiB"},
			Want: []string{": result_size must be between 0 and 67108864 B (got 68157440)"}},
		{Name: "a bad duration", Raw: Raw{Master: "m", Workers: workers, Duration: "soon"}, Want: []string{"duration: "}},
		{Name: "over the agents' limits", Raw: Raw{Master: "m", Workers: []string{"w1"}, Tasks: intp(10_000_000), Duration: "1h"},
			Want: []string{": the farm's ideal time"}},
	})
}

func TestDecode(t *testing.T) {
	c := newCheck()
	if s := Kind.Decode(func(any) bool { return false }, c); s != nil {
		t.Errorf("nothing decoded, and a spec %v", s)
	}
	s := Kind.Decode(func(raw any) bool {
		r := raw.(*Raw)
		r.Master, r.Workers = "m", []string{"w1", "w2"}
		return true
	}, c)
	sp, ok := s.(*Spec)
	if !ok || sp.Count != 2 || len(c.Found) > 0 {
		t.Fatalf("decoded %#v, problems %q", s, c.Found)
	}
	if sp.Length() != 0 || fmt.Sprint(sp.RoleHosts()) != "map[master:[m] worker:[w1 w2]]" {
		t.Errorf("length %v, role hosts %v", sp.Length(), sp.RoleHosts())
	}
}

package core

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Job is one run of an exclusive test between a pair: Test is the run of
// the test (Test.Runs: its Family set when it runs once per family).
type Job struct {
	Test *Test
	Src  string
	Dst  string
	// Due is when the run is planned; NotBefore is when its hosts may be
	// free (or reachable) again, if later.
	Due, NotBefore time.Time
	// By is who asked for a run on demand ("" for the schedule's): it runs
	// once, and the pair's schedule goes on as it was.
	By string
}

func (j Job) at() time.Time {
	if j.NotBefore.After(j.Due) {
		return j.NotBefore
	}
	return j.Due
}

type jobHeap []Job

func (h jobHeap) Len() int           { return len(h) }
func (h jobHeap) Less(i, k int) bool { return h[i].at().Before(h[k].at()) }
func (h jobHeap) Swap(i, k int)      { h[i], h[k] = h[k], h[i] }
func (h *jobHeap) Push(x any)        { *h = append(*h, x.(Job)) }
func (h *jobHeap) Pop() any {
	old := *h
	j := old[len(old)-1]
	*h = old[:len(old)-1]
	return j
}

// Scheduler plans exclusive tests so that no two share a host: a job
// starts once it is due and both its hosts are free. Each pair's first run
// is spread evenly over the test's period, and every run moves by a random
// slip, so that a mesh does not synchronise.
type Scheduler struct {
	queue jobHeap
	busy  map[string]time.Time // host -> busy until, as planned
	// held are the hosts of jobs started and not Done: a test that runs
	// past its budget still holds its hosts.
	held map[string]bool
	// waited are held hosts that jobs wait for: Done lets them go at once.
	waited map[string]bool
	rng    *rand.Rand
}

// NewScheduler plans cfg's exclusive tests from start, a job per path
// (Config.Keys: a run per family of a test that names families). last
// holds when each path last started, from the archive: those resume a
// period after it.
func NewScheduler(cfg *Config, start time.Time, last map[PathKey]time.Time, seed uint64) *Scheduler {
	s := &Scheduler{busy: map[string]time.Time{}, held: map[string]bool{}, waited: map[string]bool{}, rng: rand.New(rand.NewPCG(seed, seed^0x5eed))}
	for _, t := range cfg.Tests {
		if !t.Exclusive() {
			continue
		}
		runs := map[string]*Test{"": &t} // a target's one run
		for _, r := range t.Runs() {
			runs[r.Family] = &r
		}
		keys := cfg.Keys(t)
		for i, k := range keys {
			run := runs[k.Family]
			due := start.Add(time.Duration(i) * t.Every / time.Duration(len(keys)))
			if l, ok := last[k]; ok {
				due = Later(l.Add(t.Every), start)
			}
			s.queue = append(s.queue, Job{Test: run, Src: k.Src, Dst: k.Dst, Due: due.Add(s.slip(run))})
		}
	}
	heap.Init(&s.queue)
	return s
}

// Key is the path a job tests.
func (j Job) Key() PathKey {
	return PathKey{Src: j.Src, Dst: j.Dst, Test: j.Test.Name, Family: j.Test.Family}
}

func (s *Scheduler) slip(t *Test) time.Duration {
	if t.Slip <= 0 {
		return 0
	}
	return time.Duration(s.rng.Int64N(int64(t.Slip)))
}

// Carry makes the hosts that old's running tests hold held here too: a
// reloaded configuration's plan waits for them.
func (s *Scheduler) Carry(old *Scheduler) {
	s.busy, s.held = old.busy, old.held
}

// Len is how many jobs are planned.
func (s *Scheduler) Len() int { return len(s.queue) }

// Next returns a job that may start at now, marking its hosts busy for its
// budget; ok is false when none may, and wake is when to ask again. hold,
// if given, says whether a job may not start now (a host down, a pair
// another process measures) and until when.
func (s *Scheduler) Next(now time.Time, hold func(j Job) (time.Time, bool)) (j Job, ok bool, wake time.Time) {
	for len(s.queue) > 0 {
		top := s.queue[0]
		if top.at().After(now) {
			return Job{}, false, top.at()
		}
		free := Later(s.busy[top.Src], s.busy[top.Dst])
		if s.held[top.Src] || s.held[top.Dst] {
			free = Later(free, now.Add(time.Second)) // or sooner: Done says when
			s.waited[top.Src], s.waited[top.Dst] = true, true
		}
		if hold != nil {
			if until, held := hold(top); held {
				free = Later(free, until)
			}
		}
		if free.After(now) {
			s.queue[0].NotBefore = free
			heap.Fix(&s.queue, 0)
			continue
		}
		heap.Pop(&s.queue)
		end := now.Add(top.Test.Budget())
		s.busy[top.Src], s.busy[top.Dst] = end, end
		s.held[top.Src], s.held[top.Dst] = true, true
		return top, true, time.Time{}
	}
	return Job{}, false, now.Add(time.Hour)
}

// Add queues one run of a test on demand, due now, unless max on-demand
// runs are queued already or this one is.
func (s *Scheduler) Add(t *Test, src, dst, by string, now time.Time, max int) error {
	n := 0
	for _, q := range s.queue {
		if q.By == "" {
			continue
		}
		n++
		if q.Key() == (PathKey{Src: src, Dst: dst, Test: t.Name, Family: t.Family}) {
			of := ""
			if t.Family != "" {
				of = " over " + t.Family
			}
			return fmt.Errorf("%s %s->%s%s is already queued on demand (by %s)", t.Name, src, dst, of, q.By)
		}
	}
	if n >= max {
		return fmt.Errorf("%d runs on demand are queued already: wait for them", n)
	}
	heap.Push(&s.queue, Job{Test: t, Src: src, Dst: dst, Due: now, By: by})
	return nil
}

// Defer puts back a job Next gave that could not start after all, to be
// tried again at until, and frees its hosts.
func (s *Scheduler) Defer(j Job, now, until time.Time) {
	s.busy[j.Src], s.busy[j.Dst] = now, now
	delete(s.held, j.Src)
	delete(s.held, j.Dst)
	j.NotBefore = until
	heap.Push(&s.queue, j)
}

// Waiting is how many jobs are due and not started.
func (s *Scheduler) Waiting(now time.Time) int {
	n := 0
	for _, j := range s.queue {
		if !j.Due.After(now) {
			n++
		}
	}
	return n
}

// Done frees a job's hosts at ended and plans the pair's next run a period
// after this one was due.
func (s *Scheduler) Done(j Job, ended time.Time) {
	s.free(j, ended)
	if j.By != "" {
		return // a run on demand: the schedule's own runs are queued still
	}
	next := j.Due.Add(j.Test.Every)
	// A run that started very late does not make the next one come at once.
	if next.Before(ended) {
		next = ended.Add(j.Test.Every / 2)
	}
	heap.Push(&s.queue, Job{Test: j.Test, Src: j.Src, Dst: j.Dst, Due: next.Add(s.slip(j.Test))})
}

// Retry frees a job's hosts at ended, as Done does, and queues the run
// again for at: a far end that was busy (an iperf3 server running
// another's test). The pair's next run comes a period after the retry.
func (s *Scheduler) Retry(j Job, ended, at time.Time) {
	s.free(j, ended)
	j.Due, j.NotBefore = at, time.Time{}
	heap.Push(&s.queue, j)
}

// free frees a job's hosts at ended, and lets the jobs held for them go.
func (s *Scheduler) free(j Job, ended time.Time) {
	freed := false
	for _, h := range []string{j.Src, j.Dst} {
		delete(s.held, h)
		if s.busy[h].After(ended) || s.waited[h] {
			if s.busy[h].After(ended) {
				s.busy[h] = ended
			}
			freed = true
		}
		delete(s.waited, h)
	}
	// Jobs held for these hosts until the run's budget may go sooner.
	if freed {
		for i, q := range s.queue {
			if q.NotBefore.After(ended) && (q.Src == j.Src || q.Src == j.Dst || q.Dst == j.Src || q.Dst == j.Dst) {
				s.queue[i].NotBefore = ended
			}
		}
		heap.Init(&s.queue)
	}
}

// Planned is one run in a dry run's plan.
type Planned struct {
	Test       string    `json:"test"`
	Family     string    `json:"family,omitempty"`
	Src        string    `json:"src"`
	Dst        string    `json:"dst"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	LateBySecs float64   `json:"late_seconds"`
}

// Plan is what a configuration asks of its hosts and links over a horizon.
type Plan struct {
	Start   time.Time     `json:"start"`
	Horizon time.Duration `json:"-"`
	// HorizonSeconds is Horizon, for JSON.
	HorizonSeconds float64    `json:"horizon_seconds"`
	Runs           []Planned  `json:"runs"`
	Hosts          []HostLoad `json:"hosts"`
	Links          []LinkLoad `json:"links,omitempty"`
	// Late is how many runs could not start within their slip.
	Late int `json:"late"`
}

// HostLoad is the load a plan puts on one host.
type HostLoad struct {
	Host string `json:"host"`
	// ExclusiveFraction is the share of the time the host spends in
	// throughput-class tests; Demand is what the configuration asks, which
	// may exceed what the plan could fit.
	ExclusiveFraction float64 `json:"exclusive_fraction"`
	Demand            float64 `json:"demand"`
	Runs              int     `json:"runs"`
	// ProbePackets is the probes it sends and reflects each second.
	ProbePackets float64 `json:"probe_packets_per_second"`
}

// LinkLoad is the traffic a plan puts on one link direction.
type LinkLoad struct {
	Direction string `json:"direction"`
	// BytesPerDay counts test data at the path's bottleneck rate and probes.
	BytesPerDay float64 `json:"bytes_per_day"`
	// Fraction is that over what the direction can carry in a day.
	Fraction float64 `json:"fraction"`
}

// Path is a test path's route, for the links' load: the directions it
// crosses and its bottleneck (bit/s, 0 unknown).
type Path struct {
	Via        []string
	Bottleneck float64
}

// Impossible says which hosts are asked for more test time than there is:
// a configuration no plan can fit.
func Impossible(cfg *Config) error {
	demand := Demand(cfg)
	var bad []string
	for _, h := range cfg.Names() { // hosts, and targets: an iperf3 server runs one test at a time
		if d := demand[h]; d > 1 {
			bad = append(bad, fmt.Sprintf("%s needs %.0f%% of its time for throughput-class tests", h, 100*d))
		}
	}
	if len(bad) > 3 {
		bad = append(bad[:3], fmt.Sprintf("and %d more", len(bad)-3))
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s: impossible schedule: %s (tests never overlap on a host: test fewer pairs, less often or shorter)", cfg.Source, strings.Join(bad, "; "))
	}
	return nil
}

// Ends are a job's distinct hosts: one for a disk test.
func Ends(src, dst string) []string {
	if src == dst {
		return []string{src}
	}
	return []string{src, dst}
}

// Demand is the share of each host's time its exclusive tests ask for.
func Demand(cfg *Config) map[string]float64 {
	out := map[string]float64{}
	for _, t := range cfg.Tests {
		if !t.Exclusive() {
			continue
		}
		share := t.Budget().Seconds() / t.Every.Seconds()
		for _, k := range cfg.Keys(t) {
			for _, h := range Ends(k.Src, k.Dst) {
				out[h] += share
			}
		}
	}
	return out
}

// DryRun plans horizon from start and says what load it puts on each host
// and, given the test paths, on each link direction (rates in bit/s).
func DryRun(cfg *Config, start time.Time, horizon time.Duration, paths map[[2]string]Path, rates map[string]float64) Plan {
	s := NewScheduler(cfg, start, nil, 1)
	plan := Plan{Start: start, Horizon: horizon, HorizonSeconds: horizon.Seconds()}
	end := start.Add(horizon)
	busy := map[string]time.Duration{}
	runs := map[string]int{}
	linkBytes := map[string]float64{}
	for now := start; now.Before(end); {
		j, ok, wake := s.Next(now, nil)
		if !ok {
			now = wake
			continue
		}
		b := j.Test.Budget()
		if p, ok := paths[[2]string{j.Src, j.Dst}]; ok && j.Test.Type == Transfer && p.Bottleneck > 0 {
			// A transfer takes what the path allows, not its whole budget.
			b = 5*time.Second + time.Duration(1.25*float64(j.Test.Bytes)*8/p.Bottleneck*float64(time.Second))
		}
		late := now.Sub(j.Due)
		if late > j.Test.Slip+time.Second {
			plan.Late++
		}
		plan.Runs = append(plan.Runs, Planned{Test: j.Test.Name, Family: j.Test.Family, Src: j.Src, Dst: j.Dst, Start: now, End: now.Add(b), LateBySecs: late.Seconds()})
		for _, h := range Ends(j.Src, j.Dst) {
			busy[h] += b
			runs[h]++
		}
		if p, ok := paths[[2]string{j.Src, j.Dst}]; ok && p.Bottleneck > 0 {
			bytes := p.Bottleneck / 8 * b.Seconds()
			if j.Test.Type == Transfer {
				bytes = float64(j.Test.Bytes)
			}
			for _, d := range p.Via {
				linkBytes[d] += bytes
			}
		}
		s.Done(j, now.Add(b))
	}
	perDay := float64(24*time.Hour) / float64(horizon)
	for d := range linkBytes {
		linkBytes[d] *= perDay
	}
	probes := map[string]float64{}
	for _, t := range cfg.Tests {
		if t.Type != Probe {
			continue
		}
		for _, k := range cfg.Keys(t) {
			p := [2]string{k.Src, k.Dst}
			probes[p[0]] += t.Rate
			probes[p[1]] += t.Rate
			if path, ok := paths[p]; ok {
				for _, d := range path.Via {
					linkBytes[d] += t.Rate * float64(t.Size+28) * 86400
				}
			}
			if back, ok := paths[[2]string{p[1], p[0]}]; ok {
				for _, d := range back.Via {
					linkBytes[d] += t.Rate * float64(t.Size+28) * 86400
				}
			}
		}
	}
	demand := Demand(cfg)
	for _, h := range cfg.Names() { // hosts, and targets: an iperf3 server runs one test at a time
		plan.Hosts = append(plan.Hosts, HostLoad{Host: h, ExclusiveFraction: float64(busy[h]) / float64(horizon), Demand: demand[h], Runs: runs[h], ProbePackets: probes[h]})
	}
	for d, b := range linkBytes {
		l := LinkLoad{Direction: d, BytesPerDay: b}
		if r := rates[d]; r > 0 {
			l.Fraction = b * 8 / (r * 86400)
		}
		plan.Links = append(plan.Links, l)
	}
	slices.SortFunc(plan.Links, func(a, b LinkLoad) int { return strings.Compare(a.Direction, b.Direction) })
	return plan
}

// Later is the later of two times.
func Later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

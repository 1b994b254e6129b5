package taskfarm

import (
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// Kind is the task farm workload: its settings and their checks, its
// driver, its agents' roles (the master and the workers), and its traits.
var Kind = kind.Kind{Name: results.TaskFarm, Decode: kind.DecodeWith(Check), Run: kind.RunWith("a task farm step", run), Roles: roles, Traits: traits, Model: &model}

// Spec is one step of a task farm: a master handing tasks to workers.
type Spec struct {
	Master     string
	Workers    []string // hosts
	Count      int      // workers in all, spread over the hosts
	Tasks      int
	Duration   time.Duration
	Work       string
	ResultSize int
	Prefetch   int
}

// Length is 0: the step ends as its tasks do.
func (s *Spec) Length() time.Duration { return 0 }

// RoleHosts are the master's and the workers' hosts.
func (s *Spec) RoleHosts() map[string][]string {
	return map[string][]string{"master": {s.Master}, "worker": s.Workers}
}

// masterSpec is the master's part of the step, without the test's token
// and the wait for its workers.
func (s *Spec) masterSpec() MasterSpec {
	return MasterSpec{Tasks: s.Tasks, Duration: s.Duration, Work: s.Work, ResultSize: s.ResultSize, Prefetch: s.Prefetch, Workers: s.Count}
}

// Raw is a task farm step's settings as written.
type Raw struct {
	Master     string   `yaml:"master"`
	Workers    []string `yaml:"workers"`
	Count      *int     `yaml:"count"`
	Tasks      *int     `yaml:"tasks"`
	Duration   string   `yaml:"duration"`
	Work       string   `yaml:"work"`
	ResultSize string   `yaml:"result_size"`
	Prefetch   *int     `yaml:"prefetch"`
}

// Check checks a task farm step's settings, reporting every problem to c.
func Check(c kind.Check, r Raw) *Spec {
	before := c.Problems()
	s := &Spec{
		Master:     r.Master,
		Workers:    r.Workers,
		Tasks:      c.Count("tasks", r.Tasks, 3000, 1, MaxTasks),
		Duration:   c.Duration("duration", r.Duration, time.Second),
		Work:       r.Work,
		ResultSize: int(c.Size("result_size", r.ResultSize, 512)),
		Prefetch:   c.Count("prefetch", r.Prefetch, 1, 1, 1000),
	}
	kind.Hub(c, "master", r.Master, "workers", r.Workers, "list the worker hosts")
	s.Count = c.Count("count", r.Count, len(r.Workers), max(1, len(r.Workers)), 100000)
	if s.Work == "" {
		s.Work = WorkSleep
	}
	if c.Problems() > before {
		// said already, at the fields
	} else if err := s.masterSpec().Validate(c.Limits()); err != nil {
		c.Fail("", "%v", err)
	}
	return s
}

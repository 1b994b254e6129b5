package archtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/agent"
	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/analysis"
	"github.com/wanlab/wanlab/internal/audit"
	"github.com/wanlab/wanlab/internal/datadir"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kinds"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// toySpec is a step of the toy kind: waiters in a host that wait some
// seconds.
type toySpec struct {
	Host             string
	Seconds, Waiters int
}

func (s *toySpec) Length() time.Duration          { return time.Duration(s.Seconds) * time.Second }
func (s *toySpec) RoleHosts() map[string][]string { return map[string][]string{"waiter": {s.Host}} }

// Concurrency is a capability the analysis reads (kind.Concurrent).
func (s *toySpec) Concurrency() float64 { return float64(s.Waiters) }

// toyWait is the spec of the toy kind's agent role: wait some seconds, as
// the controller would send it (with the step's token).
type toyWait struct {
	Token   token.Token `json:"token"`
	Seconds int         `json:"seconds"`
}

func (w *toyWait) Validate(limits.Limits) error {
	if w.Seconds < 0 || w.Seconds > 60 {
		return fmt.Errorf("waiting %d s: out of [0, 60]", w.Seconds)
	}
	return nil
}

// toyWaited is what the toy role says at its end.
type toyWaited struct {
	Host    string `json:"host"`
	Seconds int    `json:"seconds"`
}

// toyRole is the toy kind's role in agents: it says it waited (a toy
// does not wait).
var toyRole = kind.Role{
	Name: "toy-wait",
	Spec: func() kind.RoleSpec { return &toyWait{} },
	Run: func(ctx context.Context, env kind.RoleEnv, s kind.RoleSpec) (any, error) {
		return toyWaited{Host: env.Host(), Seconds: s.(*toyWait).Seconds}, nil
	},
}

// toy is a kind as a new kind's package declares it, in a test build:
// its settings, its driver, its agent role, and its traits (a finding of
// the analysis, a column of the summary tables).
var toy = kind.Kind{
	Name:  "toy",
	Roles: []kind.Role{toyRole},
	Traits: kind.Traits{
		Columns:     []results.Column{results.Col("WAITED s", "%.0f", results.Named("waited_s"))},
		Findings:    []kind.Finding{kind.Failures},
		Concurrency: "waiter",
	},
	Decode: func(decode kind.Decoder, c kind.Check) kind.Spec {
		var r struct {
			Host    string `yaml:"host"`
			Seconds *int   `yaml:"seconds"`
			Waiters *int   `yaml:"waiters"`
		}
		if !decode(&r) {
			return nil
		}
		c.Host("host", r.Host)
		return &toySpec{Host: r.Host, Seconds: c.Count("seconds", r.Seconds, 1, 1, 60), Waiters: c.Count("waiters", r.Waiters, 1, 1, 8)}
	},
	Run: func(ctx context.Context, env kind.Env, s kind.Spec) (*kind.Outcome, error) {
		return &kind.Outcome{Metrics: results.Metrics{"waited_s": float64(s.(*toySpec).Seconds)}}, nil
	},
}

// TestANewKindIsOnePackageAndOneLine registers a toy kind, as its one line
// in internal/workload/kinds would, and reads a scenario that uses it:
// its settings are decoded, swept and checked with file:line problems, the
// registry runs it, an agent runs its role, and the analysis and the
// summary tables read its traits, with nothing else changed.
func TestANewKindIsOnePackageAndOneLine(t *testing.T) {
	defer kinds.Register(toy)()
	const bed = "name: toy\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - {between: [a, b]}\nworkloads:\n"
	f, err := scenario.Parse("toy.yaml", []byte(bed+"  - toy: {host: a, waiters: 2}\n    sweep: {seconds: [2, 3]}\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	w := f.Workloads[0]
	if w.Kind != "toy" || len(w.Steps) != 2 {
		t.Fatalf("workload %+v", w)
	}
	s, ok := w.Steps[1].Spec.(*toySpec)
	if !ok || s.Host != "a" || s.Seconds != 3 || w.Steps[1].Length() != 3*time.Second || w.Steps[1].Label() != "seconds=3" {
		t.Errorf("step %+v: spec %+v", w.Steps[1], w.Steps[1].Spec)
	}
	k, ok := kinds.Lookup("toy")
	if !ok {
		t.Fatal("the registry does not know the toy kind")
	}
	if o, err := k.Run(context.Background(), nil, s); err != nil || o.Metrics["waited_s"] != 3 {
		t.Errorf("ran %+v, %v", o, err)
	}
	toyAnalysed(t, w)
	toyRoleRuns(t)

	_, err = scenario.Parse("toy.yaml", []byte(bed+"  - toy: {host: c, seconds: 99, colour: red}\n"), false)
	var perr *scenario.Error
	if !errors.As(err, &perr) {
		t.Fatalf("a wrong toy step: %v", err)
	}
	for _, want := range []string{`toy.yaml:8: workloads[0].toy.host: unknown host "c"`, "workloads[0].toy.seconds: 99 is out of range",
		`unknown toy setting "colour"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\ndoes not say %q", err, want)
		}
	}
	_, err = scenario.Parse("toy.yaml", []byte(bed+"  - tyo: {}\n"), false)
	if err == nil || !strings.Contains(err.Error(), "command, toy") {
		t.Errorf("an unknown kind's message does not list the toy kind: %v", err)
	}
}

// toyAnalysed: the analysis finds what the toy kind's traits list, in its
// words (its waiters, through its spec's Concurrency), and the summary
// tables show its columns.
func toyAnalysed(t *testing.T, w scenario.Workload) {
	t.Helper()
	aw := analysis.Workload{Name: w.Name, Kind: w.Kind}
	for i, st := range w.Steps {
		m := results.Metrics{"jobs_ok": 2, "waited_s": float64(i + 2)}
		if i == 1 {
			m["jobs_ok"], m["jobs_timeout"] = 1, 1
		}
		aw.Steps = append(aw.Steps, analysis.Step{Index: i, Label: st.Label(), Status: "done", Metrics: m, Config: st})
	}
	r := analysis.Of([]analysis.Workload{aw}, analysis.DefaultOptions)
	found := false
	for _, f := range r.Findings {
		found = found || f.Kind == "failures" && strings.Contains(f.Text, "at 2 waiters: 1 of 2")
	}
	if !found {
		t.Errorf("the analysis of the toy kind found %+v, want where its waiters fail", r.Findings)
	}
	if cols := aw.Traits().Columns; len(cols) != 1 || cols[0].Head != "WAITED s" {
		t.Errorf("the toy kind's summary columns are %+v", cols)
	}
}

// toyRoleRuns: an agent, served on a unix socket, runs the toy kind's role
// through the registry (its spec decoded and validated, its summary sent)
// and audits it under the toy kind's name.
func toyRoleRuns(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	data, err := datadir.Open(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var audited []string
	srv := &agent.Server{Host: "h", Version: "test", Limits: limits.Default, Data: data,
		Audit: func(e audit.Entry) { mu.Lock(); audited = append(audited, e.Kind+" "+e.Decision); mu.Unlock() }}
	ctx, cancel := context.WithCancel(context.Background())
	sock := filepath.Join(dir, "agent.sock")
	served := make(chan error, 1)
	go func() { served <- srv.ServeSocket(ctx, sock) }()
	defer func() { cancel(); <-served; data.Close() }()
	var c *agentapi.Client
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c, err = agentapi.Dial(ctx, "h", sock); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	wait := func(spec any) (toyWaited, error) {
		b, _ := json.Marshal(spec)
		stream, err := c.Workload(ctx, &agentpb.WorkloadRequest{Id: "toy1", Role: toyRole.Name, SpecJson: b})
		if err != nil {
			return toyWaited{}, err
		}
		for {
			e, err := stream.Recv()
			if err != nil {
				return toyWaited{}, err
			}
			if b := e.GetSummaryJson(); b != nil {
				var sum toyWaited
				return sum, json.Unmarshal(b, &sum)
			}
		}
	}
	if sum, err := wait(toyWait{Token: token.New(), Seconds: 3}); err != nil || sum != (toyWaited{Host: "h", Seconds: 3}) {
		t.Errorf("the toy role said %+v, %v", sum, err)
	}
	if _, err := wait(map[string]any{"token": token.New(), "seconds": 99}); err == nil || !strings.Contains(err.Error(), "out of [0, 60]") {
		t.Errorf("a toy role of 99 s: %v, want its spec's refusal", err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		seen := slices.Clone(audited)
		mu.Unlock()
		if slices.Contains(seen, "toy end") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent audited %v, not the toy role's end under its kind", seen)
		}
	}
}

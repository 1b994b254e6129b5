package scenario

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/yamlfile"
)

// File is a whole scenario: the test-bed and the workloads run on it, each
// expanded into the steps of its sweep.
type File struct {
	Testbed   *Testbed
	Workloads []Workload
	// Events are the run's timeline, from its start.
	Events []Event
	// Quick says the steps are the shortened ones of the quick: blocks.
	Quick bool
}

// Workload is one workload of a scenario and the steps of its sweep.
type Workload struct {
	Name  string
	Kind  results.Kind
	Steps []Step
	// Events are the workload's timeline, from the start of each step.
	Events []Event
	// Capture captures links inside the engine during each step.
	Capture *Capture
	// Watch samples the TCP state of hosts' connections during each step.
	Watch []Watch
}

// Watch is a workload's watch of one host's TCP connections (as wanlab
// watch does it): those with Port (local or remote; 0, any) and to Peer
// (a host of the test-bed, an address or a prefix; "", any), every
// Interval.
type Watch struct {
	Host     string
	Port     int
	Peer     string
	Cgroup   string // processes of this control group (its path below the root)
	Interval time.Duration
}

// Capture is a workload's packet capture: the link directions (as testbed
// capture names them) captured during each of its steps into a pcapng
// file, at most Snaplen bytes of each packet (0: whole) and Count packets
// (0: all).
type Capture struct {
	Links          []string
	Snaplen, Count int
}

// Step is one run of a workload with its sweep's values applied.
type Step struct {
	// Params are the swept parameters' values as written, in sweep order,
	// plus "repeat" when the workload repeats.
	Params []Param
	// Spec is the step of the workload's kind, as its settings made it
	// (for command, a *command.Spec); set for every kind.
	Spec kind.Spec
}

// Param is one swept parameter of a step.
type Param struct {
	Name, Value string
}

// Label is the step's parameters as "jobs=10 window=256KiB".
func (s Step) Label() string {
	var parts []string
	for _, p := range s.Params {
		parts = append(parts, p.Name+"="+p.Value)
	}
	return strings.Join(parts, " ")
}

// workloads validates the scenario's workloads: list, in top (the
// document's mapping), into f. It reads every entry, refuses a plan over
// the file's bounds before making any step, then makes and checks every
// step of every workload, reporting every problem.
func (v *validator) workloads(f *File, top *yaml.Node) {
	for _, p := range v.plans(top, f.Quick) {
		if w, ok := v.expand(p, f.Testbed); ok {
			f.Workloads = append(f.Workloads, w)
		}
	}
}

// expand makes and checks every step of a planned workload, and its
// timeline, capture and watches.
func (v *validator) expand(p *planned, tb *Testbed) (Workload, bool) {
	before := v.Count()
	w := Workload{Name: p.name, Kind: p.kind}
	field := p.field + "." + string(p.kind)
	base := withSettings(p.body, p.overrides, p.order)
	// Where each setting is written, for messages: the kind's own, then
	// quick:'s, then each step's swept values (in step).
	v.AtNode(field, base)
	for i := 0; i+1 < len(base.Content); i += 2 {
		v.At(field+"."+base.Content[i].Value, base.Content[i].Line)
	}
	all := true
	for _, combo := range product(p.axes) {
		set := map[string]*yaml.Node{}
		var order []string
		var params []Param
		for j, val := range combo {
			set[p.axes[j].name] = val
			order = append(order, p.axes[j].name)
			params = append(params, Param{p.axes[j].name, val.Value})
		}
		settings := withSettings(base, set, order)
		for r := range p.repeat {
			step, ok := v.step(field, p.kind, settings, set, tb)
			if !ok {
				all = false
				break // its repeats are the same step
			}
			step.Params = slices.Clone(params)
			if p.repeat > 1 {
				step.Params = append(step.Params, Param{"repeat", strconv.Itoa(r + 1)})
			}
			w.Steps = append(w.Steps, step)
		}
	}
	shortest := time.Duration(0)
	for _, s := range w.Steps {
		if l := s.Length(); l > 0 && (shortest == 0 || l < shortest) {
			shortest = l
		}
	}
	w.Events = v.events(p.field+".events", p.raw.Events, tb, shortest, tb.Seed)
	w.Capture = v.capture(p.field+".capture", p.raw.Capture, tb)
	w.Watch = v.watches(p.field+".watch", p.raw.Watch, tb)
	return w, all && v.Count() == before
}

// Length is how long the step lasts when its settings say (a duration, a
// count of probes); 0 when it ends as its work is done.
func (s Step) Length() time.Duration {
	if s.Spec == nil {
		return 0
	}
	return s.Spec.Length()
}

// product lists every combination of the axes' values, the last axis
// varying fastest; no axes give one empty combination.
func product(axes []axis) [][]*yaml.Node {
	combos := [][]*yaml.Node{nil}
	for _, a := range axes {
		var next [][]*yaml.Node
		for _, c := range combos {
			for _, val := range a.values {
				next = append(next, append(slices.Clone(c), val))
			}
		}
		combos = next
	}
	return combos
}

// withSettings returns a copy of the mapping with the given keys set, each
// key placed at the line of its new value (a sweep's or quick:'s).
func withSettings(m *yaml.Node, set map[string]*yaml.Node, order []string) *yaml.Node {
	out := *m
	out.Content = slices.Clone(m.Content)
	for _, k := range order {
		val := set[k]
		key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k, Line: val.Line, Column: val.Column}
		replaced := false
		for i := 0; i+1 < len(out.Content); i += 2 {
			if out.Content[i].Value == k {
				out.Content[i], out.Content[i+1] = key, val
				replaced = true
			}
		}
		if !replaced {
			out.Content = append(out.Content, key, val)
		}
	}
	return &out
}

// step decodes and validates one step's settings of a kind; swept are the
// values its sweep set, whose lines its messages give.
func (v *validator) step(field string, k results.Kind, settings *yaml.Node, swept map[string]*yaml.Node, tb *Testbed) (Step, bool) {
	for name, val := range swept {
		v.At(field+"."+name, val.Line)
	}
	before := v.Count()
	var release func()
	decode := func(dst any) bool {
		problems := yamlfile.DecodeNode(settings, dst)
		for i, p := range problems {
			if errors.Is(p.Err, yamlfile.ErrUnknownField) {
				key := p.Field[strings.LastIndexAny(p.Field, ".]")+1:]
				problems[i].Msg = fmt.Sprintf("unknown %s setting %q", k, key)
			}
		}
		release = v.Decoded(field, problems)
		return true // validate what did decode too: every problem at once
	}
	defer func() {
		if release != nil {
			release()
		}
	}()
	s := v.decodeStep(field, k, decode, tb)
	return s, v.Count() == before
}
